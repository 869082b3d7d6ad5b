package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/store"
)

// fakeClock is the dispatcher's injected clock: time moves only when told.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// hookRecorder is a webhook receiver that records every try and fails the
// endpoints marked down.
type hookRecorder struct {
	mu    sync.Mutex
	tries []store.WebhookDelivery
	down  map[string]bool
}

func (r *hookRecorder) send(_ context.Context, d store.WebhookDelivery) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.tries = append(r.tries, d)
	if r.down[d.Endpoint] {
		return errors.New("503 from " + d.Endpoint)
	}
	return nil
}

func (r *hookRecorder) setDown(ep string, down bool) {
	r.mu.Lock()
	r.down[ep] = down
	r.mu.Unlock()
}

// of returns the tries of endpoint ep, in order.
func (r *hookRecorder) of(ep string) []store.WebhookDelivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []store.WebhookDelivery
	for _, d := range r.tries {
		if d.Endpoint == ep {
			out = append(out, d)
		}
	}
	return out
}

func openWebhooks(t *testing.T, b redistest.Backend) *store.Store {
	return openStoreWith(t, b, func(c *store.Config) { c.WebhookOutboxLen = 1000 })
}

// roomEvents makes a room see player_joined, player_left, room_closed
// (and whatever create emits) and returns the room id.
func roomEvents(t *testing.T, s *store.Store) string {
	t.Helper()
	ctx := context.Background()
	j, err := s.Create(ctx, alice, newRoom())
	if err != nil {
		t.Fatal(err)
	}
	id := j.Room.ID
	if _, err := s.Join(ctx, bob, id); err != nil {
		t.Fatal(err)
	}
	if err := s.Leave(ctx, bob, id); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, alice, id); err != nil {
		t.Fatal(err)
	}
	return id
}

// drain steps d until a step handles nothing (at most 50 steps).
func drain(t *testing.T, d *store.Dispatcher) {
	t.Helper()
	for range 50 {
		n, err := d.Step(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
	}
	t.Fatal("the dispatcher never ran dry")
}

// hookTypes returns the event types of ds, checking each event's room.
func hookTypes(t *testing.T, ds []store.WebhookDelivery, room string) []string {
	t.Helper()
	var out []string
	for _, d := range ds {
		var ev struct {
			Type   string `json:"type"`
			RoomID string `json:"roomId"`
		}
		if err := json.Unmarshal(d.Event, &ev); err != nil {
			t.Fatalf("event %q: %v", d.Event, err)
		}
		if ev.RoomID != room || ev.Type != d.Type {
			t.Fatalf("delivery %+v: event of room %q type %q", d, ev.RoomID, ev.Type)
		}
		out = append(out, ev.Type)
	}
	return out
}

// webhookKeys counts the entries left in every webhook key of s's shards.
func webhookKeys(t *testing.T, s *store.Store, prefix string, shards int) (outbox, deliveries, retries, dead int64) {
	t.Helper()
	ctx := context.Background()
	c := s.Client()
	for sh := range shards {
		tag := fmt.Sprintf("{%s:%d}", prefix, sh)
		outbox += c.XLen(ctx, tag+":webhooks").Val()
		deliveries += c.XLen(ctx, tag+":webhooks:deliveries").Val()
		retries += c.ZCard(ctx, tag+":webhooks:retries").Val()
		dead += c.XLen(ctx, tag+":webhooks:dead").Val()
	}
	return
}

// wantRoomEvents: what roomEvents makes (create: alice's player_joined).
var wantRoomEvents = []string{"player_joined", "player_joined", "player_left", "room_closed"}

// TestWebhooksDeliverOnceEachAndIsolateEndpoints: every room event reaches
// each endpoint that wants it exactly once while it is healthy; an endpoint
// that fails does not make the healthy one receive anything twice; a type
// filter holds; and once settled nothing is left in the outbox, deliveries
// or retries.
func TestWebhooksDeliverOnceEachAndIsolateEndpoints(t *testing.T) {
	for _, b := range redistest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			prefix := redistest.Prefix(t)
			s := openStoreWith(t, b, func(c *store.Config) { c.Prefix = prefix; c.WebhookOutboxLen = 1000 })
			rec := &hookRecorder{down: map[string]bool{"bad": true}}
			clock := &fakeClock{t: time.Unix(1_800_000_000, 0)}
			d, err := s.Webhooks(store.WebhookConfig{Consumer: "i1", Send: rec.send, Now: clock.Now,
				Endpoints: []store.WebhookEndpoint{{ID: "good", Events: []string{"*"}}, {ID: "bad", Events: []string{"*"}},
					{ID: "closes", Events: []string{"room_closed"}}}})
			if err != nil {
				t.Fatal(err)
			}
			id := roomEvents(t, s)
			for range 5 { // the bad endpoint retried a few times
				drain(t, d)
				clock.Add(time.Hour)
			}
			// create emits alice's player_joined; concurrent workers keep no
			// order (receivers order by the event's version)
			got := hookTypes(t, rec.of("good"), id)
			slices.Sort(got)
			if want := []string{"player_joined", "player_joined", "player_left", "room_closed"}; !slices.Equal(got, want) {
				t.Fatalf("good endpoint got %v, want each of %v once", got, want)
			}
			ids := map[string]bool{}
			for _, g := range rec.of("good") {
				if ids[g.MessageID] || g.RetryCount != 0 {
					t.Fatalf("good endpoint: duplicate or retried delivery %+v", g)
				}
				ids[g.MessageID] = true
			}
			if got := hookTypes(t, rec.of("closes"), id); !slices.Equal(got, []string{"room_closed"}) {
				t.Fatalf("room_closed-only endpoint got %v", got)
			}
			if n := len(rec.of("bad")); n <= len(ids) {
				t.Fatalf("bad endpoint was tried %d times for %d events: not retried", n, len(ids))
			}
			outbox, dels, _, _ := webhookKeys(t, s, prefix, 8)
			if outbox != 0 || dels != 0 {
				t.Fatalf("left behind: outbox %d, deliveries %d", outbox, dels)
			}
		})
	}
}

// TestWebhooksHourOfFailuresThenReplay is the acceptance: an
// endpoint broken for an hour of simulated time is retried with growing
// delays and a growing retry count, dead-lettered after MaxAttempts tries,
// listed, then replayed once it is back and delivered with the count reset;
// nothing remains in any webhook key afterwards.
func TestWebhooksHourOfFailuresThenReplay(t *testing.T) {
	for _, b := range redistest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			prefix := redistest.Prefix(t)
			s := openStoreWith(t, b, func(c *store.Config) { c.Prefix = prefix; c.WebhookOutboxLen = 1000 })
			rec := &hookRecorder{down: map[string]bool{"ep": true}}
			clock := &fakeClock{t: time.Unix(1_800_000_000, 0)}
			var mu sync.Mutex
			var triedAt = map[string][]time.Time{}
			send := func(ctx context.Context, w store.WebhookDelivery) error {
				mu.Lock()
				triedAt[w.MessageID] = append(triedAt[w.MessageID], clock.Now())
				mu.Unlock()
				return rec.send(ctx, w)
			}
			const attempts = 6
			d, err := s.Webhooks(store.WebhookConfig{Consumer: "i1", Send: send, Now: clock.Now, MaxAttempts: attempts,
				BackoffBase: time.Second, BackoffMax: 10 * time.Minute,
				Jitter:    func() float64 { return 0.999 }, // the ceiling: delays must grow
				Endpoints: []store.WebhookEndpoint{{ID: "ep", Events: []string{"*"}}}})
			if err != nil {
				t.Fatal(err)
			}
			id := roomEvents(t, s)
			for range 60 { // an hour, a minute at a time
				drain(t, d)
				clock.Add(time.Minute)
			}
			events := map[string]bool{}
			for _, w := range rec.of("ep") {
				events[w.MessageID] = true
			}
			if len(events) < len(wantRoomEvents) {
				t.Fatalf("%d events tried, want at least %d", len(events), len(wantRoomEvents))
			}
			for m := range events {
				var counts []int
				for _, w := range rec.of("ep") {
					if w.MessageID == m {
						counts = append(counts, w.RetryCount)
					}
				}
				if !slices.Equal(counts, []int{0, 1, 2, 3, 4, 5}) {
					t.Fatalf("event %s tried with retry counts %v, want 0..%d", m, counts, attempts-1)
				}
				at := triedAt[m]
				for i := 2; i < len(at); i++ {
					if at[i].Sub(at[i-1]) < at[i-1].Sub(at[i-2]) {
						t.Fatalf("event %s: delays shrink: tried at %v", m, at)
					}
				}
			}
			list, next, err := s.DeadLetters(context.Background(), "", 100)
			if err != nil {
				t.Fatal(err)
			}
			if len(list) != len(events) || next != "" {
				t.Fatalf("%d dead letters (next %q), want %d", len(list), next, len(events))
			}
			// paging: one at a time reaches the same letters
			var paged []string
			for cur := ""; ; {
				page, nxt, err := s.DeadLetters(context.Background(), cur, 1)
				if err != nil {
					t.Fatal(err)
				}
				for _, p := range page {
					paged = append(paged, p.ID)
				}
				if nxt == "" {
					break
				}
				cur = nxt
			}
			if len(paged) != len(list) {
				t.Fatalf("paged %d dead letters, listed %d", len(paged), len(list))
			}
			for _, l := range list {
				if l.Attempts != attempts || l.Endpoint != "ep" || l.LastError != "503 from ep" || !events[l.MessageID] {
					t.Fatalf("dead letter %+v", l)
				}
			}
			if _, _, retries, _ := webhookKeys(t, s, prefix, 8); retries != 0 {
				t.Fatalf("%d retries left after dead-lettering", retries)
			}
			if err := s.ReplayDeadLetter(context.Background(), "0.1-0"); !errors.Is(err, store.ErrDeadLetterNotFound) {
				t.Fatalf("replay of an unknown id: %v", err)
			}
			rec.setDown("ep", false)
			before := len(rec.of("ep"))
			for _, l := range list {
				if err := s.ReplayDeadLetter(context.Background(), l.ID); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.ReplayDeadLetter(context.Background(), list[0].ID); !errors.Is(err, store.ErrDeadLetterNotFound) {
				t.Fatalf("second replay: %v", err)
			}
			drain(t, d)
			replayed := rec.of("ep")[before:]
			if len(replayed) != len(list) {
				t.Fatalf("%d replayed deliveries, want %d", len(replayed), len(list))
			}
			for _, w := range replayed {
				if w.RetryCount != 0 || !events[w.MessageID] {
					t.Fatalf("replayed delivery %+v", w)
				}
			}
			if got := hookTypes(t, replayed, id); len(got) != len(list) {
				t.Fatalf("replayed %v", got)
			}
			outbox, dels, retries, dead := webhookKeys(t, s, prefix, 8)
			if outbox+dels+retries+dead != 0 {
				t.Fatalf("left behind: outbox %d, deliveries %d, retries %d, dead %d", outbox, dels, retries, dead)
			}
		})
	}
}

// TestWebhooksTakenOverAfterACrash: an instance that read deliveries and
// died before settling them leaves them pending; another takes them over
// (XAUTOCLAIM) once idle and delivers them: at least once.
func TestWebhooksTakenOverAfterACrash(t *testing.T) {
	for _, b := range redistest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			s := openWebhooks(t, b)
			eps := []store.WebhookEndpoint{{ID: "ep", Events: []string{"*"}}}
			crashCtx, crash := context.WithCancel(context.Background())
			var first []store.WebhookDelivery
			var mu sync.Mutex
			a, err := s.Webhooks(store.WebhookConfig{Consumer: "a", Endpoints: eps, ClaimIdle: time.Hour,
				Send: func(ctx context.Context, d store.WebhookDelivery) error {
					mu.Lock()
					first = append(first, d)
					mu.Unlock()
					crash() // the instance dies mid-delivery
					return ctx.Err()
				}})
			if err != nil {
				t.Fatal(err)
			}
			id := roomEvents(t, s)
			a.Step(crashCtx) //nolint:errcheck // it dies in the middle
			if len(first) == 0 {
				t.Fatal("instance a tried nothing")
			}
			rec := &hookRecorder{down: map[string]bool{}}
			bInst, err := s.Webhooks(store.WebhookConfig{Consumer: "b", Endpoints: eps, Send: rec.send, ClaimIdle: 50 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(10 * time.Second)
			for {
				drain(t, bInst)
				got := map[string]bool{}
				for _, d := range rec.of("ep") {
					got[d.MessageID] = true
				}
				all := true
				for _, d := range first {
					all = all && got[d.MessageID]
				}
				if all && slices.Contains(hookTypes(t, rec.of("ep"), id), "room_closed") {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("instance b delivered %v; a had taken %d", hookTypes(t, rec.of("ep"), id), len(first))
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
}

// TestWebhooksOffWritesNoOutbox: without WebhookOutboxLen no script writes
// an outbox and the dispatcher refuses to start.
func TestWebhooksOffWritesNoOutbox(t *testing.T) {
	for _, b := range redistest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			prefix := redistest.Prefix(t)
			s := openStoreWith(t, b, func(c *store.Config) { c.Prefix = prefix })
			roomEvents(t, s)
			if outbox, _, _, _ := webhookKeys(t, s, prefix, 8); outbox != 0 {
				t.Fatalf("outbox holds %d entries with webhooks off", outbox)
			}
			if _, err := s.Webhooks(store.WebhookConfig{Consumer: "x", Send: (&hookRecorder{}).send}); !errors.Is(err, store.ErrWebhooksOff) {
				t.Fatalf("Webhooks with the outbox off: %v", err)
			}
		})
	}
}

// With webhooks on, every kind of script that emits puts its events in the
// outbox, quick-join's (its keys built apart) and those run with the room
// quotas on (one key more) included: no script mistakes the outbox for
// another key.
func TestWebhooksOutboxTakesEveryScriptsEvents(t *testing.T) {
	for _, b := range redistest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
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
			if err := s.Delete(ctx, alice, q.Room.ID); err != nil {
				t.Fatal(err)
			}
			var types []string
			c := s.Client()
			for shard := range 8 {
				entries, _ := c.XRange(ctx, fmt.Sprintf("{%s:%d}:webhooks", prefix, shard), "-", "+").Result()
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
}
