package store_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/players"
	"github.com/realsync/realsync/sse"
	"github.com/realsync/realsync/store"
)

// The root store's side of the webhooks: its scripts write the outbox
// (store/webhooks delivers it, and tests the delivery).

// TestWebhooksOffWritesNoOutbox: without WebhookOutboxLen no script writes
// an outbox.
func TestWebhooksOffWritesNoOutbox(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		prefix := redistest.Prefix(t)
		s := openStoreWith(t, b, func(c *store.Config) { c.Prefix = prefix })
		ctx := context.Background()
		j, err := s.Create(ctx, alice, newRoom())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Join(ctx, bob, j.Room.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Delete(ctx, alice, j.Room.ID); err != nil {
			t.Fatal(err)
		}
		for _, k := range countKeys(t, s) {
			if strings.Contains(k, ":webhooks") {
				t.Fatalf("key %s with webhooks off", k)
			}
		}
	})
}

// With webhooks on, every kind of script that emits puts its events in the
// outbox, quick-join's (its keys built apart) and those run with the room
// quotas on (one key more) included: no script mistakes the outbox for
// another key.
func TestWebhooksOutboxTakesEveryScriptsEvents(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		prefix := redistest.Prefix(t)
		s := openStoreWith(t, b, func(c *store.Config) {
			c.Prefix, c.WebhookOutboxLen = prefix, 1000
			c.Quotas = store.Quotas{RoomsOwned: 5, RoomsJoined: 20}
		})
		ctx := context.Background()
		q, err := s.QuickJoin(ctx, alice, "hooked", []string{"eu"}, nil, quickRoom("hooked", "eu", 4))
		if err != nil || !q.Created {
			t.Fatalf("quick-join create: %+v, %v", q, err)
		}
		if _, err := s.QuickJoin(ctx, bob, "hooked", []string{"eu"}, nil, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := s.ReserveSeats(ctx, alice, q.Room.ID, []string{"u-held"}, time.Minute); err != nil {
			t.Fatal(err)
		}
		if err := s.Leave(ctx, bob, q.Room.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Delete(ctx, alice, q.Room.ID); err != nil {
			t.Fatal(err)
		}
		var types []string
		c := s.Client()
		for shard := range 8 {
			entries, _ := c.XRange(ctx, s.Base().Tag(shard)+":webhooks", "-", "+").Result()
			for _, e := range entries {
				types = append(types, e.Values["t"].(string))
			}
		}
		for _, want := range []string{"player_joined", "seats_reserved", "player_left", "room_closed"} {
			if !slices.Contains(types, want) {
				t.Fatalf("outbox types %v, want %s among them", types, want)
			}
		}
	})
}

// With webhooks off the session scripts write no outbox.
func TestWebhooksOffNoStatusEvents(t *testing.T) {
	b := redistest.Backends(t)[0]
	ctx := context.Background()
	s := openStoreWith(t, b, func(c *store.Config) { c.SessionPolicy = players.PolicyReplace })
	ss := sse.Session{UserID: "u-off", Platform: "web", ID: "x.1"}
	if _, err := s.Sessions().OpenSession(ctx, ss, sse.Cursor{}, 100); err != nil {
		t.Fatal(err)
	}
	if err := s.Sessions().CloseSession(ctx, ss); err != nil {
		t.Fatal(err)
	}
	for _, k := range countKeys(t, s) {
		if strings.Contains(k, ":webhooks") {
			t.Fatalf("key %s with webhooks off", k)
		}
	}
}

// BenchmarkSessionStatusOutbox is what the online-status webhook events
// cost Redis: one personal stream session opened and closed (the user
// online, then offline: two status changes) per op, with webhooks off and
// on (the outbox written by the same scripts), on a redis-server of its
// own. Redis' own script time per op (INFO commandstats), so the machine's
// other load does not count; -count alternates the two.
func BenchmarkSessionStatusOutbox(b *testing.B) {
	for _, outbox := range []int{0, 1000} {
		name := "webhooks=off"
		if outbox > 0 {
			name = "webhooks=on"
		}
		b.Run(name, func(b *testing.B) {
			s, _ := freshStore(b, func(c *store.Config) {
				c.Shards, c.PresenceTTL, c.WebhookOutboxLen = 16, time.Minute, outbox
			})
			ctx := context.Background()
			if err := s.Client().ConfigResetStat(ctx).Err(); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for i := range b.N {
				ss := sse.Session{UserID: fmt.Sprint("user-", i%1000), Platform: "pc", ID: fmt.Sprint("bench.", i)}
				if _, err := s.Sessions().OpenSession(ctx, ss, sse.Cursor{}, 0); err != nil {
					b.Fatal(err)
				}
				if err := s.Sessions().CloseSession(ctx, ss); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(scriptTotalMicros(b, s.Client())/float64(b.N), "redis-µs/op")
		})
	}
}
