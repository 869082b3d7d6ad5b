package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

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
			sent, err := s.SendMessage(ctx, u, id, rooms.Message{Type: typ, Data: []byte(`{"t":"` + typ + `"}`), To: to})
			if err != nil {
				t.Fatalf("send %s: %v", typ, err)
			}
			return sent.Version
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

// A message sent with an Idempotency-Key is sent once: the same sender
// sending with the key again gets the first version and sends nothing,
// however the room changed meanwhile; the key with another message
// (type, data, recipients) is refused; another sender's key of the same
// name is its own. The room forgets keys beyond MessageKeysKept, oldest
// first, and its keys go with it.
func TestMessageSentOncePerKey(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		id := mustCreate(t, s, alice, newRoom()).Room.ID
		mustJoin(t, s, bob, id)
		msg := func(data string, key string, to ...int) rooms.Message {
			return rooms.Message{Type: "chat", Data: []byte(data), To: to, Key: key}
		}
		send := func(u rooms.User, m rooms.Message) rooms.Sent {
			t.Helper()
			sent, err := s.SendMessage(ctx, u, id, m)
			if err != nil {
				t.Fatalf("send %s with key %q: %v", m.Data, m.Key, err)
			}
			return sent
		}
		history := func() int {
			t.Helper()
			_, ms, err := s.Messages(ctx, alice, id, 0)
			if err != nil {
				t.Fatal(err)
			}
			return len(ms)
		}
		first := send(alice, msg(`"gg"`, "k1", 2))
		v1 := first.Version
		if first.Receipt == "" {
			t.Errorf("a keyed message's answer has no receipt: %+v", first)
		}
		if _, err := s.PatchState(ctx, alice, id, rooms.StatePatch{Set: rooms.State{"a": []byte(`1`)}, IfMatch: -1}); err != nil {
			t.Fatal(err)
		}
		evs := len(events(t, s, id))
		for _, tc := range []struct {
			name string
			u    rooms.User
			m    rooms.Message
			want int64 // 0: refused
		}{
			{"the same message again", alice, msg(`"gg"`, "k1", 2), v1},
			{"other data", alice, msg(`"GG"`, "k1", 2), 0},
			{"other recipients", alice, msg(`"gg"`, "k1"), 0},
		} {
			sent, err := s.SendMessage(ctx, tc.u, id, tc.m)
			switch {
			case tc.want == 0 && !errors.Is(err, rooms.ErrKeyReused):
				t.Errorf("%s: %+v, %v; want %v", tc.name, sent, err, rooms.ErrKeyReused)
			case tc.want != 0 && (err != nil || sent != first):
				t.Errorf("%s: %+v, %v; want the first's %+v (its tag read from its log entry)", tc.name, sent, err, first)
			}
		}
		if n, m := len(events(t, s, id)), history(); n != evs || m != 1 {
			t.Fatalf("after the same key again: %d events (want %d), %d messages (want 1)", n, evs, m)
		}
		if v := send(bob, msg(`"gg"`, "k1", 2)).Version; v <= v1 {
			t.Errorf("bob's key k1 answered %d, want a message of its own after %d", v, v1)
		}
		send(alice, msg(`"gg"`, "", 2))
		send(alice, msg(`"gg"`, "", 2)) // without a key: sent every time
		if m := history(); m != 4 {
			t.Fatalf("%d messages, want 4", m)
		}

		// the room remembers its last MessageKeysKept keys
		c := s.Client()
		keys := s.RoomKeys(id)
		mkeys, mkeyt := keys[len(keys)-2], keys[len(keys)-1]
		for i := range rooms.MessageKeysKept + 5 {
			send(bob, msg(fmt.Sprint(i), fmt.Sprint("b", i)))
		}
		nh, err1 := c.HLen(ctx, mkeys).Result()
		nz, err2 := c.ZCard(ctx, mkeyt).Result()
		if err1 != nil || err2 != nil || nh != rooms.MessageKeysKept || nz != rooms.MessageKeysKept {
			t.Fatalf("keys remembered: %d and %d (%v, %v), want %d", nh, nz, err1, err2, rooms.MessageKeysKept)
		}
		for _, k := range []string{mkeys, mkeyt} { // whatever closes the room
			if ttl := c.PTTL(ctx, k).Val(); ttl <= 0 || ttl > rooms.MessageKeyWindow {
				t.Errorf("%s expires in %v, want within %v", k, ttl, rooms.MessageKeyWindow)
			}
		}
		before := len(events(t, s, id))
		if v := send(alice, msg(`"gg"`, "k1", 2)).Version; v == v1 || len(events(t, s, id)) != before+1 {
			t.Errorf("alice's k1, forgotten, answered %d: want a new message", v)
		}
		last := fmt.Sprint(rooms.MessageKeysKept + 4)
		if _, err := s.SendMessage(ctx, bob, id, msg(last, fmt.Sprint("b", last))); err != nil || len(events(t, s, id)) != before+1 {
			t.Errorf("bob's newest key sent again: %v, %d events (want %d)", err, len(events(t, s, id)), before+1)
		}
		// a key older than the window is forgotten, whether or not a send
		// dropped it yet
		old := float64(time.Now().Add(-rooms.MessageKeyWindow - time.Second).UnixMilli())
		if err := c.ZAddXX(ctx, mkeyt, redis.Z{Score: old, Member: "b" + last + " " + bob.ID}).Err(); err != nil {
			t.Fatal(err)
		}
		if _, err := s.SendMessage(ctx, bob, id, msg(last, "b"+last)); err != nil || len(events(t, s, id)) != before+2 {
			t.Errorf("bob's newest key past the window: %v, %d events (want %d)", err, len(events(t, s, id)), before+2)
		}

		// closed: its keys go with it
		if _, err := s.Delete(ctx, alice, id); err != nil {
			t.Fatal(err)
		}
		if n, err := c.Exists(ctx, mkeys, mkeyt).Result(); err != nil || n != 0 {
			t.Errorf("%d of the message keys' keys left after the close (%v)", n, err)
		}
	})
}
