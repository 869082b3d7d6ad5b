package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/store"
)

func TestMessages(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		j, _ := s.Create(ctx, alice, newRoom())
		id := j.Room.ID
		s.Join(ctx, bob, id)
		s.Join(ctx, carol, id)
		send := func(u rooms.User, typ string, to ...int) int64 {
			t.Helper()
			v, err := s.SendMessage(ctx, u, id, rooms.Message{Type: typ, Data: []byte(`{"t":"` + typ + `"}`), To: to})
			if err != nil {
				t.Fatalf("send %s: %v", typ, err)
			}
			return v
		}
		v1 := send(alice, "all")
		v2 := send(bob, "to-carol", 3)
		if v1 != 4 || v2 != 5 {
			t.Errorf("versions %d %d, want 4 5", v1, v2)
		}
		if _, err := s.SendMessage(ctx, alice, id, rooms.Message{Type: "x", Data: []byte(`1`), To: []int{2, 9}}); !errors.Is(err, rooms.ErrValidation) {
			t.Errorf("to a non-member: %v", err)
		}
		if _, err := s.SendMessage(ctx, rooms.User{ID: "u-eve"}, id, rooms.Message{Type: "x", Data: []byte(`1`)}); !errors.Is(err, rooms.ErrNotMember) {
			t.Errorf("from a non-member: %v", err)
		}
		pid, ms, err := s.Messages(ctx, carol, id, 0)
		if err != nil || pid != 3 || len(ms) != 2 {
			t.Fatalf("history: pid %d, %d messages, %v", pid, len(ms), err)
		}
		if m := ms[0]; m.Version != 5 || m.From != 2 || m.Type != "to-carol" || string(m.Data) != `{"t":"to-carol"}` || len(m.To) != 1 || m.To[0] != 3 || m.TS.IsZero() {
			t.Errorf("newest %+v", m)
		}
		if _, ms, _ := s.Messages(ctx, carol, id, 5); len(ms) != 1 || ms[0].Version != 4 {
			t.Errorf("before 5: %+v", ms)
		}
		if _, ms, _ := s.Messages(ctx, carol, id, 1); len(ms) != 0 {
			t.Errorf("before 1: %+v", ms)
		}
		if got := types(events(t, s, id)); got[len(got)-1] != "message" {
			t.Errorf("message not in the event log: %v", got)
		}
	})
}

// The message log is capped apart from the event log: a flood of other
// events does not push messages out of the history.
func TestMessageHistorySurvivesOtherEvents(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		j, _ := s.Create(ctx, alice, newRoom())
		id := j.Room.ID
		for range rooms.MessageHistoryMin + 10 {
			s.SendMessage(ctx, alice, id, rooms.Message{Type: "chat", Data: []byte(`1`)})
		}
		for range 1200 {
			s.PatchState(ctx, alice, id, rooms.StatePatch{Set: rooms.State{"k": []byte(`1`)}, IfMatch: rooms.NoIfMatch})
		}
		_, ms, err := s.Messages(ctx, alice, id, 0)
		if err != nil || len(ms) < rooms.MessageHistoryMin {
			t.Fatalf("%d messages kept, want at least %d (%v)", len(ms), rooms.MessageHistoryMin, err)
		}
	})
}
