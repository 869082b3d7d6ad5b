package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/store"
)

// A mutation whose reply is lost after Redis ran it (a connection reset,
// a network that fails) ran once: the caller gets rooms.ErrUnavailable,
// an outcome it does not know, never a second run's answer. go-redis sends
// a command whose reply it did not get again (MaxRetries), and did so for
// scripts: a leave that worked answered NOT_A_MEMBER, a message or a patch
// was made twice. Through a proxy that loses the one reply, batched and
// not, with FCALL and with EVALSHA.
func TestLostReplyRunsOnce(t *testing.T) {
	for _, tc := range []struct {
		name        string
		batch       bool
		scriptsOnly bool
	}{
		{"Batched", true, false},
		{"Unbatched", false, false},
		{"BatchedScripts", true, true},
		{"UnbatchedScripts", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			proxy := redistest.StartProxy(t, strings.TrimPrefix(redistest.StandaloneURL(t), "redis://"))
			s := openStoreWith(t, redistest.Backend{Name: "proxied", URL: "redis://" + proxy.Addr}, func(c *store.Config) {
				c.Batch = nil
				if tc.batch {
					c.Batch = &store.Batching{}
				}
				c.ScriptsOnly = tc.scriptsOnly
			})
			if s.UsesFunctions() == tc.scriptsOnly {
				t.Fatalf("mutations as FCALL: %v, want %v", s.UsesFunctions(), !tc.scriptsOnly)
			}
			id := mustCreate(t, s, alice, newRoom()).Room.ID
			// each script once, so that Redis knows it (a lost NOSCRIPT
			// reply is lost as well, but nothing ran)
			mustJoin(t, s, carol, id)
			if err := s.Leave(ctx, carol, id); err != nil {
				t.Fatal(err)
			}
			if _, err := s.SendMessage(ctx, alice, id, rooms.Message{Type: "chat", Data: []byte(`"hi"`)}); err != nil {
				t.Fatal(err)
			}
			if _, err := s.PatchState(ctx, alice, id, rooms.StatePatch{Set: rooms.State{"score": []byte(`0`)}, IfMatch: -1}); err != nil {
				t.Fatal(err)
			}
			mustJoin(t, s, bob, id)
			before := len(events(t, s, id))

			lose := func(script string) {
				t.Helper()
				sentAs := s.SentAs(script)
				if sentAs == "" {
					t.Fatalf("no call name for %s", script)
				}
				proxy.LoseReplyTo(sentAs)
			}
			lost := func(what string, err error) {
				t.Helper()
				if !errors.Is(err, rooms.ErrUnavailable) {
					t.Fatalf("%s with its reply lost: %v, want %v", what, err, rooms.ErrUnavailable)
				}
			}

			lose("player_remove")
			lost("leave", s.Leave(ctx, bob, id))
			lose("message_send")
			_, err := s.SendMessage(ctx, alice, id, rooms.Message{Type: "chat", Data: []byte(`"gg"`)})
			lost("message", err)
			lose("state_patch")
			_, err = s.PatchState(ctx, alice, id, rooms.StatePatch{Set: rooms.State{"score": []byte(`1`)}, IfMatch: -1})
			lost("patch", err)
			if n := proxy.Lost(); n != 3 {
				t.Fatalf("the proxy lost %d replies, want 3", n)
			}

			got := types(events(t, s, id)[before:])
			if want := []string{"player_left", "message", "state"}; strings.Join(got, " ") != strings.Join(want, " ") {
				t.Fatalf("events after the lost replies: %v, want %v, each once", got, want)
			}
			r, _, err := s.Get(ctx, id, false)
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Players) != 1 || r.Version != int64(before)+3 {
				t.Fatalf("room after: %d players, version %d; want 1 and %d", len(r.Players), r.Version, before+3)
			}
			if _, msgs, err := s.Messages(ctx, alice, id, 0); err != nil || len(msgs) != 2 {
				t.Fatalf("messages: %d (%v), want 2 (one before, one lost reply)", len(msgs), err)
			}
			// what follows runs as usual on the connections that remain
			if err := s.Leave(ctx, bob, id); !errors.Is(err, rooms.ErrNotMember) {
				t.Fatalf("bob's second leave: %v, want %v", err, rooms.ErrNotMember)
			}
			checkInvariants(t, s)
		})
	}
}
