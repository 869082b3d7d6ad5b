package sse_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/rooms"
)

// lobbyEvent is a lobby frame decoded.
type lobbyEvent struct {
	Type    string `json:"type"`
	Version int64  `json:"version"`
	Room    struct {
		ID          string `json:"id"`
		PlayerCount int    `json:"playerCount"`
		Locked      bool   `json:"locked"`
	} `json:"room"`
	Rooms []json.RawMessage `json:"rooms"`
}

func decodeLobby(t *testing.T, fs []frame) []lobbyEvent {
	t.Helper()
	out := make([]lobbyEvent, len(fs))
	for i, f := range fs {
		if err := json.Unmarshal([]byte(f.Data), &out[i]); err != nil || out[i].Type != f.Type {
			t.Fatalf("frame %+v: %v", f, err)
		}
	}
	return out
}

// waitLobby waits until the client got n lobby events.
func waitLobby(t *testing.T, cl *client, n int) []lobbyEvent {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		if fs := cl.all(); len(fs) >= n {
			return decodeLobby(t, fs)
		}
		select {
		case <-cl.got:
		case <-deadline:
			t.Fatalf("%d lobby events never arrived; got %+v", n, decodeLobby(t, cl.all()))
		}
	}
}

// The lobby feed follows a room as it becomes, stays and stops being
// joinable, and ignores other modes.
func TestLobbyFeedFollowsJoinableRooms(t *testing.T) {
	eachBackend(t, func(t *testing.T, b redistest.Backend) {
		e := newEnv(t, b)
		ctx := context.Background()
		before := e.room(t) // mode m, region r: in the first list
		cl := newClient()
		ctxS, cancel := context.WithCancel(ctx)
		defer cancel()
		go e.hub.ServeLobby(ctxS, cl, alice, "m", "")
		first := waitLobby(t, cl, 1)[0]
		if first.Type != "rooms" || len(first.Rooms) != 1 || !strings.Contains(string(first.Rooms[0]), before) {
			t.Fatalf("first event %+v", first)
		}
		j, err := e.st.Create(ctx, bob, rooms.NewRoom{Name: "x", Mode: "m", Region: "eu", MaxPlayers: 2,
			Visibility: rooms.Public, Attributes: map[string]any{}, State: rooms.State{}, StatePolicy: rooms.PolicyOwner})
		if err != nil {
			t.Fatal(err)
		}
		id := j.Room.ID
		e.st.Create(ctx, carol, rooms.NewRoom{Name: "other mode", Mode: "z", Region: "eu", MaxPlayers: 2,
			Visibility: rooms.Public, Attributes: map[string]any{}, State: rooms.State{}, StatePolicy: rooms.PolicyOwner})
		waitLobby(t, cl, 2)
		steps := []struct {
			do   func() error
			want string
		}{
			{func() error { _, err := e.st.Update(ctx, bob, id, rooms.UpdateParams{Locked: ptr(true)}); return err }, "room_removed"},
			{func() error { _, err := e.st.Update(ctx, bob, id, rooms.UpdateParams{Locked: ptr(false)}); return err }, "room_added"},
			{func() error { _, err := e.st.Update(ctx, bob, id, rooms.UpdateParams{Name: ptr("y")}); return err }, "room_updated"},
			{func() error { _, err := e.st.Join(ctx, carol, id); return err }, "room_removed"}, // full
			{func() error { return e.st.Leave(ctx, carol, id) }, "room_added"},
			{func() error {
				_, err := e.st.Update(ctx, bob, id, rooms.UpdateParams{Status: ptr(rooms.Playing)})
				return err
			}, "room_removed"},
			{func() error {
				_, err := e.st.Update(ctx, bob, id, rooms.UpdateParams{Status: ptr(rooms.Waiting)})
				return err
			}, "room_added"},
			{func() error { return e.st.Delete(ctx, bob, id) }, "room_removed"},
		}
		evs := waitLobby(t, cl, 2)
		if evs[1].Type != "room_added" || evs[1].Room.ID != id {
			t.Fatalf("after create: %+v", evs[1])
		}
		for i, s := range steps {
			if err := s.do(); err != nil {
				t.Fatal(err)
			}
			// one step at a time, slower than the coalescing window
			evs = waitLobby(t, cl, 3+i)
			if got := evs[2+i]; got.Type != s.want || got.Room.ID != id || got.Version <= evs[1+i].Version {
				t.Fatalf("step %d: %+v, want %s (events %+v)", i, got, s.want, evs)
			}
		}
	})
}

func ptr[T any](v T) *T { return &v }

// A burst of changes to one room is coalesced, and its final state arrives.
func TestLobbyFeedCoalescesBursts(t *testing.T) {
	b := redistest.Backends(t)[0]
	e := newEnv(t, b)
	cl := newClient()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go e.hub.ServeLobby(ctx, cl, alice, "", "")
	waitLobby(t, cl, 1)
	id := e.room(t)
	for i := range 30 {
		if _, err := e.st.Update(ctx, alice, id, rooms.UpdateParams{Name: ptr("n" + string(rune('a'+i%26)))}); err != nil {
			t.Fatal(err)
		}
	}
	final := version(t, e, id)
	deadline := time.Now().Add(10 * time.Second)
	for {
		evs := decodeLobby(t, cl.all())
		if l := evs[len(evs)-1]; l.Version == final {
			if len(evs) > 20 {
				t.Errorf("31 changes gave %d events: not coalesced", len(evs)-1)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("final version %d never arrived: %+v", final, evs)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
