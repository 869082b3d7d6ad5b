package feed

import (
	"fmt"
	"slices"
	"testing"

	"github.com/realsync/realsync/players"
	"github.com/realsync/realsync/sse"
)

// recorder is a sink that writes down every call it gets.
type recorder struct{ got []string }

func (r *recorder) Deliver(room string, e sse.Event) {
	r.got = append(r.got, fmt.Sprintf("event %s v%d %s %s", room, e.Version, e.Tag, e.Data))
}
func (r *recorder) Resubscribed(room string) { r.got = append(r.got, "resubscribed "+room) }
func (r *recorder) Lobby(n sse.LobbyNotice) {
	r.got = append(r.got, fmt.Sprintf("lobby %s %s v%d %s %s", n.Kind, n.Room, n.Version, n.Mode, n.Region))
}

// userRecorder is a recorder that takes the users' channels too.
type userRecorder struct{ recorder }

func (r *userRecorder) DeliverUser(uid string, e sse.UserEvent) {
	r.got = append(r.got, fmt.Sprintf("user %s seq%d %s %s control=%v", uid, e.Seq, e.Tag, e.Data, e.Control))
}
func (r *userRecorder) DeliverStatus(s players.Status) {
	r.got = append(r.got, fmt.Sprintf("status %s v%d %v %v", s.UserID, s.Version, s.Online, s.Platforms))
}
func (r *userRecorder) ResubscribedUser(uid string) { r.got = append(r.got, "resubscribed user "+uid) }
func (r *userRecorder) ResubscribedStatus(uid string) {
	r.got = append(r.got, "resubscribed status "+uid)
}

// newSink returns a sink that takes the users' channels when user says
// so, and the recorder of what it gets.
func newSink(user bool) (sse.Sink, *recorder) {
	if user {
		u := &userRecorder{}
		return u, &u.recorder
	}
	r := &recorder{}
	return r, r
}

// What each channel's message becomes at the sink, from the payloads the
// scripts publish; a malformed payload is dropped, and a sink without the
// users' methods receives nothing of a user's or status channel.
func TestRoutes(t *testing.T) {
	tests := []struct {
		name, channel, payload string
		user                   bool // the sink takes users' channels
		want                   []string
	}{
		{"room event", "{rs:3}:ch:r03abc", `7 t1 {"type":"state_patched"}`, false,
			[]string{`event r03abc v7 t1 {"type":"state_patched"}`}},
		{"room event, no tag", "{rs:3}:ch:r03abc", "7 {}", false, nil},
		{"room event, bad version", "{rs:3}:ch:r03abc", "x t {}", false, nil},
		{"lobby notice", "{rs:3}:lobby", "joinable r03abc 9 ctf eu", false,
			[]string{"lobby joinable r03abc v9 ctf eu"}},
		{"lobby notice, a field missing", "{rs:3}:lobby", "joinable r03abc 9 ctf", false, nil},
		{"user event", "{rs:1}:uch:u-1", `E 12 t9 {"type":"friend_online"}`, true,
			[]string{`user u-1 seq12 t9 {"type":"friend_online"} control=false`}},
		{"user control", "{rs:1}:uch:u-1", "F", true, []string{"user u-1 seq0   control=true"}},
		// spread tags (key schema 4): "{<prefix>:<shard>:<salt>}"
		{"room event, spread tag", "{rs:3:4wW}:ch:r03abc", `7 t1 {"type":"state_patched"}`, false,
			[]string{`event r03abc v7 t1 {"type":"state_patched"}`}},
		{"lobby notice, spread tag", "{rs:3:4wW}:lobby", "joinable r03abc 9 ctf eu", false,
			[]string{"lobby joinable r03abc v9 ctf eu"}},
		{"user event, spread tag", "{rs:1:0Q2}:uch:u-1", `E 12 t9 {"type":"friend_online"}`, true,
			[]string{`user u-1 seq12 t9 {"type":"friend_online"} control=false`}},
		{"status, spread tag, the channel's two braces", "{rs:1:0Q2}}:st:u-1", "4 web", true, []string{"status u-1 v4 true [web]"}},
		{"user event, malformed", "{rs:1}:uch:u-1", "E 12", true, nil},
		{"user event, sink without users", "{rs:1}:uch:u-1", `E 12 t9 {}`, false, nil},
		{"status online", "{rs:1}:st:u-1", "4 web,ios", true, []string{"status u-1 v4 true [web ios]"}},
		{"status offline", "{rs:1}:st:u-1", "5", true, []string{"status u-1 v5 false []"}},
		{"status, sink without users", "{rs:1}:st:u-1", "5", false, nil},
		// a user id may hold either infix: the one right after the tag counts
		{"status of a user id holding the user infix", "{rs:1}:st:ev}:uch:bob7", "4 web", true,
			[]string{"status ev}:uch:bob7 v4 true [web]"}},
		// a status channel as store/sessions names it: the tag's brace, then the infix's
		{"status, the channel's two braces", "{rs:1}}:st:u-1", "4 web", true, []string{"status u-1 v4 true [web]"}},
		{"status of a user id holding the user infix, two braces", "{rs:1}}:st:ev}:uch:bob7", "4 web", true,
			[]string{"status ev}:uch:bob7 v4 true [web]"}},
		{"status of a user id starting with a brace", "{rs:1}}:st:}x", "5", true, []string{"status }x v5 false []"}},
		{"user event of a user id holding the status infix", "{rs:1}:uch:a}:st:b", "F", true,
			[]string{"user a}:st:b seq0   control=true"}},
		{"status of a user id holding the lobby suffix", "{rs:1}:st:x}:lobby", "5", true, []string{"status x}:lobby v5 false []"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sink, rec := newSink(tc.user)
			routes{&Feed{sink: sink}}.Message(tc.channel, tc.payload)
			if !slices.Equal(rec.got, tc.want) {
				t.Fatalf("got %q, want %q", rec.got, tc.want)
			}
		})
	}
}

// A resubscribed channel is announced for what it carries: a room's as
// its room, a lobby's as "" (the lobby), a user's and a status channel's
// to a sink that takes them, and to none otherwise.
func TestRoutesResubscribed(t *testing.T) {
	tests := []struct {
		channel string
		user    bool
		want    []string
	}{
		{"{rs:3}:ch:r03abc", false, []string{"resubscribed r03abc"}},
		{"{rs:3}:lobby", false, []string{"resubscribed "}},
		{"{rs:1}:uch:u-1", true, []string{"resubscribed user u-1"}},
		{"{rs:1}:st:u-1", true, []string{"resubscribed status u-1"}},
		{"{rs:1}:uch:u-1", false, nil},
		{"{rs:1}:st:u-1", false, nil},
		{"{rs:1}:st:ev}:uch:bob7", true, []string{"resubscribed status ev}:uch:bob7"}},
		{"{rs:1}}:st:u-1", true, []string{"resubscribed status u-1"}},
	}
	for _, tc := range tests {
		sink, rec := newSink(tc.user)
		routes{&Feed{sink: sink}}.Resubscribed(tc.channel)
		if !slices.Equal(rec.got, tc.want) {
			t.Errorf("%s (user sink %v): got %q, want %q", tc.channel, tc.user, rec.got, tc.want)
		}
	}
}
