package api_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/realsync/realsync/internal/rediskeys"
	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/players"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/store"
	"github.com/realsync/realsync/store/userlog"
)

// opening reads a personal stream's snapshot (checked against the spec)
// and the pending events it announces.
func opening(t *testing.T, s *stream) (sseFrame, []sseFrame) {
	t.Helper()
	snap := s.next()
	checkUserEvent(t, snap)
	if snap.event != "snapshot" {
		t.Fatalf("first event %+v", snap)
	}
	var evs []sseFrame
	for range int(snap.data["pending"].(float64)) {
		f := s.next()
		checkUserEvent(t, f)
		evs = append(evs, f)
	}
	return snap, evs
}

// sessionGone waits until uid is no longer online on platform: the
// session closed, after every delivery it made was recorded.
func (e *env) sessionGone(token, uid, platform string) {
	e.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for strings.Contains(platformsOf(e.presence(token, uid)), platform) {
		if time.Now().After(deadline) {
			e.t.Fatalf("%s still online on %s", uid, platform)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func texts(evs []sseFrame) []string {
	var out []string
	for _, f := range evs {
		switch f.event {
		case "message":
			out = append(out, fmt.Sprint(f.data["message"].(map[string]any)["data"].(map[string]any)["text"]))
		default:
			out = append(out, f.event)
		}
	}
	return out
}

// What is sent to a user without a session waits in the user's log and
// reaches each platform's next session, in order, once: a platform never
// used gets what the log holds; a platform that was delivered some gets
// only the rest; a resume with Last-Event-ID replays after it. An invite
// to a private room carries the code the invitee joins with. Two
// instances: sent through one, delivered through the other.
func TestDirectMessagesOfflineDelivery(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		es := playerEnvs(t, b, players.PolicyReplace, 2)
		a, bb := es[0], es[1]
		alice, aliceID := a.guest("alice")
		bob, bobID := a.guest("bob")
		for i := 1; i <= 3; i++ {
			r := a.do("POST", "/v1/users/"+bobID+"/messages", alice, map[string]any{"type": "chat", "data": map[string]any{"text": fmt.Sprint("m", i)}})
			want(t, r, 202, "")
			if _, err := time.Parse(time.RFC3339Nano, r.body["ts"].(string)); err != nil {
				t.Fatalf("ts %v", r.body)
			}
		}
		room := a.create(alice, map[string]any{"name": "den", "mode": "m", "region": "eu", "visibility": "private"})
		want(t, a.do("POST", "/v1/rooms/"+room["id"].(string)+"/invites", alice, map[string]any{"userId": bobID}), 202, "")

		pc := bb.me(bob, "pc")
		_, evs := opening(t, pc)
		if got := strings.Join(texts(evs), ","); got != "m1,m2,m3,invite" {
			t.Fatalf("pc's inbox: %s", got)
		}
		m := evs[0].data
		if from := m["from"].(map[string]any); from["userId"] != aliceID || from["name"] != "alice" || m["message"].(map[string]any)["type"] != "chat" {
			t.Errorf("message %v", m)
		}
		inv := evs[3].data
		if inv["roomId"] != room["id"] || inv["name"] != "den" || inv["mode"] != "m" || inv["region"] != "eu" || inv["inviteCode"] == nil {
			t.Fatalf("invite %v", inv)
		}
		r := bb.do("POST", "/v1/rooms/join-by-code", bob, map[string]any{"inviteCode": inv["inviteCode"]})
		want(t, r, 200, "")

		// A platform never used gets what the log holds.
		mobile := a.me(bob, "mobile")
		if _, evs := opening(t, mobile); strings.Join(texts(evs), ",") != "m1,m2,m3,invite" {
			t.Fatalf("mobile's inbox: %s", texts(evs))
		}
		pc.close()
		a.sessionGone(bob, bobID, "pc")
		want(t, a.do("POST", "/v1/users/"+bobID+"/messages", alice, map[string]any{"type": "chat", "data": map[string]any{"text": "m4"}}), 202, "")
		if f := mobile.next(); f.event != "message" || texts([]sseFrame{f})[0] != "m4" {
			t.Fatalf("live on mobile: %+v", f)
		}
		// pc was delivered m1..invite: only m4 waits for it.
		pc = a.me(bob, "pc")
		snap, evs := opening(t, pc)
		if strings.Join(texts(evs), ",") != "m4" {
			t.Fatalf("pc's inbox after m4: %s", texts(evs))
		}
		pc.close()
		a.sessionGone(bob, bobID, "pc")
		pc = bb.me(bob, "pc")
		if _, evs := opening(t, pc); len(evs) != 0 {
			t.Fatalf("delivered again: %s", texts(evs))
		}
		pc.close()
		// A resume replays after its id, whatever was delivered.
		res := bb.me(bob, "pc", "Last-Event-ID", snap.id)
		if f := res.next(); f.event != "message" || texts([]sseFrame{f})[0] != "m4" {
			t.Fatalf("resume: %+v", f)
		}
		if f := res.next(); f.event != "resumed" {
			t.Fatalf("after the replay: %+v", f)
		}
	})
}

// A snapshot's pending counts the events that follow it: not the
// session_replaced of another session, which only the replaced session
// gets (a client waiting for pending events used to wait for one that
// never came, when it was logged; it is no longer: an older release's,
// still in the log during a rolling upgrade, is not counted either).
func TestPendingCountsOnlyWhatFollows(t *testing.T) {
	b := redistest.Backends(t)[0]
	e := playerEnvs(t, b, players.PolicyReplace, 1)[0]
	alice, _ := e.guest("alice")
	bob, bobID := e.guest("bob")
	want(t, e.do("POST", "/v1/users/"+bobID+"/messages", alice, map[string]any{"type": "chat", "data": map[string]any{"text": "m1"}}), 202, "")
	pc1 := e.me(bob, "pc")
	if _, evs := opening(t, pc1); strings.Join(texts(evs), ",") != "m1" {
		t.Fatalf("pc's inbox: %s", texts(evs))
	}
	pc2 := e.me(bob, "pc") // replaces pc1: session_replaced for pc1
	if f := pc1.next(); f.event != "session_replaced" {
		t.Fatalf("pc1 got %+v", f)
	}
	snap, evs := opening(t, pc2)
	if strings.Contains(strings.Join(texts(evs), ","), "session_replaced") {
		t.Fatalf("pc2 got another session's session_replaced: %v", snap.data)
	}
	console := e.me(bob, "console")
	if snap, evs := opening(t, console); snap.data["pending"] != float64(1) || strings.Join(texts(evs), ",") != "m1" {
		t.Fatalf("console: pending %v, %s", snap.data["pending"], texts(evs))
	}
	want(t, e.do("POST", "/v1/users/"+bobID+"/messages", alice, map[string]any{"type": "chat", "data": map[string]any{"text": "m2"}}), 202, "")
	if f := console.next(); texts([]sseFrame{f})[0] != "m2" {
		t.Fatalf("console's next event %+v", f)
	}
}

// The log is capped: past REALSYNC_OFFLINE_MAX the oldest events are
// dropped, and a new platform gets the newest, in order.
func TestDirectMessagesCap(t *testing.T) {
	b := redistest.Backends(t)[0]
	e := playerEnvsWith(t, b, 1, func(c *store.Config) { c.Offline = userlog.Config{MaxLen: userlog.MinMaxLen} })[0]
	alice, _ := e.guest("alice")
	bob, bobID := e.guest("bob")
	n := userlog.MinMaxLen + 5
	for i := 1; i <= n; i++ {
		want(t, e.do("POST", "/v1/users/"+bobID+"/messages", alice, map[string]any{"type": "t", "data": map[string]any{"text": i}}), 202, "")
	}
	_, evs := opening(t, e.me(bob, "console"))
	got := texts(evs)
	if len(got) != userlog.MinMaxLen || got[0] != "6" || got[len(got)-1] != fmt.Sprint(n) {
		t.Fatalf("%d kept, %s..%s", len(got), got[0], got[len(got)-1])
	}
}

// Bad direct messages and invites are precise errors and send nothing.
func TestDirectBadInput(t *testing.T) {
	e := playerEnvs(t, redistest.Backends(t)[0], players.PolicyReplace, 1)[0]
	alice, aliceID := e.guest("alice")
	bob, bobID := e.guest("bob")
	carol, _ := e.guest("carol")
	pub := e.create(alice, map[string]any{"name": "pub", "mode": "m", "region": "eu"})["id"].(string)
	priv := e.create(alice, map[string]any{"name": "priv", "mode": "m", "region": "eu", "visibility": "private"})["id"].(string)
	ok := map[string]any{"type": "chat", "data": map[string]any{"text": "hi"}}
	for _, c := range []struct {
		what, method, path, token string
		body                      any
		status                    int
		code                      string
	}{
		{"to oneself", "POST", "/v1/users/" + aliceID + "/messages", alice, ok, 422, "VALIDATION_FAILED"},
		{"to an API key", "POST", "/v1/users/key:x/messages", alice, ok, 422, "VALIDATION_FAILED"},
		{"a user id of 129 bytes", "POST", "/v1/users/" + strings.Repeat("u", 129) + "/messages", alice, ok, 422, "VALIDATION_FAILED"},
		{"a user id not UTF-8", "POST", "/v1/users/%FF%FE/messages", alice, ok, 422, "VALIDATION_FAILED"},
		{"no type", "POST", "/v1/users/" + bobID + "/messages", alice, map[string]any{"data": 1}, 422, "VALIDATION_FAILED"},
		{"no data", "POST", "/v1/users/" + bobID + "/messages", alice, map[string]any{"type": "chat"}, 422, "VALIDATION_FAILED"},
		{"null data", "POST", "/v1/users/" + bobID + "/messages", alice, `{"type":"chat","data":null}`, 422, "VALIDATION_FAILED"},
		{"a null type", "POST", "/v1/users/" + bobID + "/messages", alice, `{"type":null,"data":1}`, 400, "MALFORMED_REQUEST"},
		{"data over 4 KiB", "POST", "/v1/users/" + bobID + "/messages", alice, map[string]any{"type": "chat", "data": strings.Repeat("x", 5000)}, 422, "VALIDATION_FAILED"},
		{"an unknown field (to)", "POST", "/v1/users/" + bobID + "/messages", alice, map[string]any{"type": "chat", "data": 1, "to": []int{1}}, 422, "VALIDATION_FAILED"},
		{"no token", "POST", "/v1/users/" + bobID + "/messages", "", ok, 401, "UNAUTHENTICATED"},
		{"not JSON", "POST", "/v1/users/" + bobID + "/messages", alice, "{", 400, "MALFORMED_REQUEST"},
		{"invite without userId", "POST", "/v1/rooms/" + pub + "/invites", alice, map[string]any{}, 422, "VALIDATION_FAILED"},
		{"invite oneself", "POST", "/v1/rooms/" + pub + "/invites", alice, map[string]any{"userId": aliceID}, 422, "VALIDATION_FAILED"},
		{"invite to a public room one is not in", "POST", "/v1/rooms/" + pub + "/invites", carol, map[string]any{"userId": bobID}, 403, "NOT_A_MEMBER"},
		{"invite to a private room one is not in", "POST", "/v1/rooms/" + priv + "/invites", carol, map[string]any{"userId": bobID}, 404, "ROOM_NOT_FOUND"},
		{"invite to no room", "POST", "/v1/rooms/nope/invites", alice, map[string]any{"userId": bobID}, 404, "ROOM_NOT_FOUND"},
	} {
		t.Run(c.what, func(t *testing.T) {
			want(t, e.do(c.method, c.path, c.token, c.body), c.status, c.code)
		})
	}
	if _, evs := opening(t, e.me(bob, "pc")); len(evs) != 0 {
		t.Fatalf("bad input sent %s", texts(evs))
	}
}

// A kicked or banned player, and the members of a room its owner deletes,
// hear it on their personal streams, also when offline.
func TestRoomNoticesOnPersonalStream(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		e := playerEnvs(t, b, players.PolicyReplace, 1)[0]
		alice, _ := e.guest("alice")
		bob, _ := e.guest("bob")
		carol, _ := e.guest("carol")
		room := func() string {
			id := e.create(alice, map[string]any{"name": "r", "mode": "m", "region": "eu"})["id"].(string)
			want(t, e.do("POST", "/v1/rooms/"+id+"/join", bob, nil), 200, "")
			return id
		}
		live := e.me(bob, "web")
		opening(t, live)
		r1, r2, r3 := room(), room(), room()
		want(t, e.do("POST", "/v1/rooms/"+r3+"/join", carol, nil), 200, "")
		want(t, e.do("DELETE", "/v1/rooms/"+r1+"/players/2", alice, nil), 204, "")
		want(t, e.do("DELETE", "/v1/rooms/"+r2+"/players/2?ban=true", alice, nil), 204, "")
		want(t, e.do("DELETE", "/v1/rooms/"+r3, alice, nil), 204, "")
		for _, w := range []struct{ event, room string }{{"kicked", r1}, {"banned", r2}, {"room_closed", r3}} {
			f := live.next()
			checkUserEvent(t, f)
			if f.event != w.event || f.data["roomId"] != w.room {
				t.Fatalf("want %s of %s, got %+v", w.event, w.room, f)
			}
		}
		// carol had no session: it waits for her; and alice, who deleted
		// it, is told as well (her other platforms would not know)
		for who, tok := range map[string]string{"carol": carol, "alice": alice} {
			_, evs := opening(t, e.me(tok, "pc"))
			if len(evs) != 1 || evs[0].event != "room_closed" || evs[0].data["reason"] != "closed" || evs[0].data["roomId"] != r3 {
				t.Fatalf("%s's inbox: %+v", who, evs)
			}
		}
	})
}

// Every key of the personal logs expires: sent to, delivered, or not.
func TestDirectMessageKeysExpire(t *testing.T) {
	b := redistest.Backends(t)[0]
	e := playerEnvsWith(t, b, 1, func(c *store.Config) { c.Offline = userlog.Config{TTL: time.Hour} })[0]
	alice, _ := e.guest("alice")
	bob, bobID := e.guest("bob")
	_, carolID := e.guest("carol")
	for _, to := range []string{bobID, carolID} {
		want(t, e.do("POST", "/v1/users/"+to+"/messages", alice, map[string]any{"type": "t", "data": 1}), 202, "")
	}
	s := e.me(bob, "pc")
	opening(t, s)
	s.close()
	e.sessionGone(bob, bobID, "pc")
	ctx := context.Background()
	c := e.store.Client()
	n := 0
	for _, pattern := range []string{"*:ulog*:" + bobID, "*:ulog*:" + carolID} {
		keys, err := rediskeys.Scan(ctx, c, pattern)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			n++
			ttl, err := c.PTTL(ctx, k).Result()
			if err != nil || ttl <= 0 || ttl > time.Hour {
				t.Errorf("%s: TTL %v %v", k, ttl, err)
			}
		}
	}
	if n < 5 { // both logs and metas, bob's cursors
		t.Errorf("%d log keys", n)
	}
}

// The answer's ts of a direct message and of an invite is the ts of the
// event the recipient gets, to the character (both milliseconds).
func TestDirectSentTSIsTheEvents(t *testing.T) {
	e := newEnv(t, redistestEmbedded, true)
	alice, _ := e.guest("alice")
	bob, bobID := e.guest("bob")
	room := e.create(alice, map[string]any{"name": "den", "mode": "m", "region": "eu"})
	var sent []string
	for _, r := range []resp{
		e.do("POST", "/v1/users/"+bobID+"/messages", alice, map[string]any{"type": "chat", "data": map[string]any{"text": "m1"}}),
		e.do("POST", "/v1/rooms/"+room["id"].(string)+"/invites", alice, map[string]any{"userId": bobID}),
	} {
		want(t, r, 202, "")
		sent = append(sent, r.body["ts"].(string))
	}
	_, evs := opening(t, e.me(bob, "pc"))
	if len(evs) != 2 {
		t.Fatalf("%d events, want the message and the invite", len(evs))
	}
	for i, f := range evs {
		if f.data["ts"] != sent[i] {
			t.Errorf("%s: answered ts %s, the event's %v", f.event, sent[i], f.data["ts"])
		}
	}
}

// A message, direct message or invite sent with an Idempotency-Key
// carries messageId, the same for every send of that key and sender (a
// hash of both), so that a client drops a retry that a Redis failover
// made a new event; one sent without a key carries none. A room message's
// is in its event and its history.
func TestKeyedMessagesCarryAMessageID(t *testing.T) {
	e := newEnv(t, redistestEmbedded, true)
	alice, aliceID := e.guest("alice")
	bob, bobID := e.guest("bob")
	room := e.create(alice, map[string]any{"name": "den", "mode": "m", "region": "eu"})
	path := "/v1/rooms/" + room["id"].(string)
	live := e.open(path+"/events", "Authorization", "Bearer "+alice)
	for live.next().event != "snapshot" {
	}
	want(t, e.do("POST", path+"/messages", alice, map[string]any{"type": "chat", "data": 1}, "Idempotency-Key", "r1"), 202, "")
	want(t, e.do("POST", path+"/messages", alice, map[string]any{"type": "chat", "data": 2}), 202, "")
	history := e.do("GET", path+"/messages", alice, nil)
	ms := history.body["messages"].([]any) // newest first
	for i, id := range []any{rooms.MessageID("r1", aliceID), nil} {
		if f := live.next(); f.event != "message" || f.data["message"].(map[string]any)["messageId"] != id {
			t.Errorf("room message event %d: %s %v, want messageId %v", i, f.event, f.data, id)
		}
		if got := ms[1-i].(map[string]any)["messageId"]; got != id {
			t.Errorf("room message %d in the history: messageId %v, want %v", i, got, id)
		}
	}
	for _, r := range []resp{
		e.do("POST", "/v1/users/"+bobID+"/messages", alice, map[string]any{"type": "chat", "data": 1}, "Idempotency-Key", "k1"),
		e.do("POST", "/v1/rooms/"+room["id"].(string)+"/invites", alice, map[string]any{"userId": bobID}, "Idempotency-Key", "k2"),
		e.do("POST", "/v1/users/"+bobID+"/messages", alice, map[string]any{"type": "chat", "data": 2}),
	} {
		want(t, r, 202, "")
	}
	_, evs := opening(t, e.me(bob, "pc"))
	if len(evs) != 3 {
		t.Fatalf("%d events, want two messages and the invite", len(evs))
	}
	for i, id := range []any{rooms.MessageID("k1", aliceID), rooms.MessageID("k2", aliceID), nil} {
		if got := evs[i].data["messageId"]; got != id {
			t.Errorf("%s: messageId %v, want %v", evs[i].event, got, id)
		}
	}
	if rooms.MessageID("k1", aliceID) == rooms.MessageID("k1", bobID) || len(rooms.MessageID("k1", aliceID)) != 32 {
		t.Errorf("MessageID: one key of two senders %q, %q", rooms.MessageID("k1", aliceID), rooms.MessageID("k1", bobID))
	}
}
