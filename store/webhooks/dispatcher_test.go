package webhooks_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/internal/storetest"
	"github.com/realsync/realsync/internal/webhook/deadletter"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/store"
	"github.com/realsync/realsync/store/webhooks"
)

func TestMain(m *testing.M) { redistest.Main(m) }

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
	tries []webhooks.Delivery
	down  map[string]bool
}

func (r *hookRecorder) send(_ context.Context, d webhooks.Delivery) error {
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
func (r *hookRecorder) of(ep string) []webhooks.Delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []webhooks.Delivery
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

// openStoreWith opens a root store on backend b (8 shards, a key prefix
// of its own, batched as realsyncd runs) changed by mut, closed when the
// test ends.
func openStoreWith(tb testing.TB, b redistest.Backend, mut func(*store.Config)) *store.Store {
	tb.Helper()
	cfg := store.Config{RedisURL: b.URL, ClusterAddrs: b.ClusterAddrs, Prefix: redistest.Prefix(tb), Shards: 8,
		Batch: &store.Batching{}}
	mut(&cfg)
	s := storetest.Open(tb, cfg)
	return s
}

var (
	alice = rooms.User{ID: "u-alice", Name: "alice"}
	bob   = rooms.User{ID: "u-bob", Name: "bob"}
)

func newRoom() rooms.NewRoom {
	return rooms.NewRoom{Name: "Arena", Mode: "battle", Region: "us-west", MaxPlayers: 4,
		Visibility: rooms.Public, State: rooms.State{}, StatePolicy: rooms.PolicyOwner}
}

// roomEvents makes a room see player_joined, player_left, room_closed
// (and whatever create emits) and returns the room id.
func roomEvents(t *testing.T, s *store.Store) string {
	return roomEventsOf(t, s, newRoom())
}

// roomEventsOf is roomEvents for a room made as nr says (the rooms of one
// mode and region live on one shard).
func roomEventsOf(t *testing.T, s *store.Store, nr rooms.NewRoom) string {
	t.Helper()
	ctx := context.Background()
	j, err := s.Create(ctx, alice, nr)
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
	if _, err := s.Delete(ctx, alice, id); err != nil {
		t.Fatal(err)
	}
	return id
}

// drain steps d until a step handles nothing (at most 50 steps).
func drain(t *testing.T, d *webhooks.Dispatcher) {
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
func hookTypes(t *testing.T, ds []webhooks.Delivery, room string) []string {
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
		tag := s.Base().Tag(sh)
		outbox += c.XLen(ctx, tag+":webhooks").Val()
		deliveries += c.XLen(ctx, tag+":webhooks:deliveries").Val()
		retries += c.ZCard(ctx, tag+":webhooks:retries").Val()
		dead += c.XLen(ctx, tag+":webhooks:dead").Val()
	}
	return
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// wantRoomEvents: what roomEvents makes (create: alice's player_joined).
var wantRoomEvents = []string{"player_joined", "player_joined", "player_left", "room_closed"}

// TestWebhooksDeliverOnceEachAndIsolateEndpoints: every room event reaches
// each endpoint that wants it exactly once while it is healthy; an endpoint
// that fails does not make the healthy one receive anything twice; a type
// filter holds; and once settled nothing is left in the outbox, deliveries
// or retries.
func TestWebhooksDeliverOnceEachAndIsolateEndpoints(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		prefix := redistest.Prefix(t)
		s := openStoreWith(t, b, func(c *store.Config) { c.Prefix = prefix; c.WebhookOutboxLen = 1000 })
		rec := &hookRecorder{down: map[string]bool{"bad": true}}
		clock := &fakeClock{t: time.Unix(1_800_000_000, 0)}
		d, err := webhooks.New(s.Base(), webhooks.Config{Consumer: "i1", Send: rec.send, Now: clock.Now,
			Endpoints: []webhooks.Endpoint{{ID: "good", Events: []string{"*"}}, {ID: "bad", Events: []string{"*"}},
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

// TestWebhooksDeliversAfterTheShardsKeysAreDeleted: every webhook key of
// every shard is deleted under a running dispatcher (by hand, or with all
// else by a Redis restarted without persistence); the next events, their
// outbox made again by the scripts that write them, without its consumer
// group, are delivered all the same once a round has found the groups
// gone. Before, the dispatcher took the groups it had created for good:
// every round failed with NOGROUP on every shard, and nothing was
// delivered again until it restarted (4 events delivered, then none).
func TestWebhooksDeliversAfterTheShardsKeysAreDeleted(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		prefix := redistest.Prefix(t)
		s := openStoreWith(t, b, func(c *store.Config) { c.Prefix = prefix; c.WebhookOutboxLen = 1000 })
		rec := &hookRecorder{down: map[string]bool{}}
		d, err := webhooks.New(s.Base(), webhooks.Config{Consumer: "i1", Send: rec.send,
			Endpoints: []webhooks.Endpoint{{ID: "good", Events: []string{"*"}}}})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		roomEvents(t, s)
		drain(t, d)
		if n := len(rec.of("good")); n != len(wantRoomEvents) {
			t.Fatalf("delivered %d events, want %d", n, len(wantRoomEvents))
		}
		for sh := range 8 {
			tag := s.Base().Tag(sh)
			for _, k := range []string{"", ":deliveries", ":retries", ":dead", ":backlog", ":recount", ":recount:checks"} {
				if err := s.Client().Del(ctx, tag+":webhooks"+k).Err(); err != nil {
					t.Fatal(err)
				}
			}
		}
		id := roomEvents(t, s)
		var stepErr error
		for range 10 {
			_, stepErr = d.Step(ctx)
			if stepErr == nil && len(rec.of("good")) == 2*len(wantRoomEvents) {
				break
			}
		}
		if stepErr != nil {
			t.Fatalf("a round after the keys were deleted: %v", stepErr)
		}
		got := hookTypes(t, rec.of("good")[len(wantRoomEvents):], id)
		slices.Sort(got)
		if want := slices.Sorted(slices.Values(wantRoomEvents)); !slices.Equal(got, want) {
			t.Fatalf("after the keys were deleted the endpoint got %v, want %v", got, want)
		}
	})
}

// TestWebhooksHourOfFailuresThenReplay is the acceptance: an
// endpoint broken for an hour of simulated time is retried with growing
// delays and a growing retry count, dead-lettered after MaxAttempts tries,
// listed, then replayed once it is back and delivered with the count reset;
// nothing remains in any webhook key afterwards.
func TestWebhooksHourOfFailuresThenReplay(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		prefix := redistest.Prefix(t)
		s := openStoreWith(t, b, func(c *store.Config) { c.Prefix = prefix; c.WebhookOutboxLen = 1000 })
		rec := &hookRecorder{down: map[string]bool{"ep": true}}
		clock := &fakeClock{t: time.Unix(1_800_000_000, 0)}
		var mu sync.Mutex
		var triedAt = map[string][]time.Time{}
		send := func(ctx context.Context, w webhooks.Delivery) error {
			mu.Lock()
			triedAt[w.MessageID] = append(triedAt[w.MessageID], clock.Now())
			mu.Unlock()
			return rec.send(ctx, w)
		}
		const attempts = 6
		d, err := webhooks.New(s.Base(), webhooks.Config{Consumer: "i1", Send: send, Now: clock.Now, MaxAttempts: attempts,
			BackoffBase: time.Second, BackoffMax: 10 * time.Minute,
			Jitter:    func() float64 { return 0.999 }, // the ceiling: delays must grow
			Endpoints: []webhooks.Endpoint{{ID: "ep", Events: []string{"*"}}}})
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
		list, next, err := webhooks.NewDeadLetters(s.Base(), webhooks.Config{}).DeadLetters(context.Background(), "", 100)
		if err != nil {
			t.Fatal(err)
		}
		if len(list) != len(events) || next != "" {
			t.Fatalf("%d dead letters (next %q), want %d", len(list), next, len(events))
		}
		// a page that holds the last letter is the last: no cursor to an
		// empty page
		if all, nxt, err := webhooks.NewDeadLetters(s.Base(), webhooks.Config{}).DeadLetters(context.Background(), "", len(list)); err != nil || len(all) != len(list) || nxt != "" {
			t.Fatalf("a page of all %d dead letters: %d, next %q, %v", len(list), len(all), nxt, err)
		}
		// paging: one at a time reaches the same letters
		var paged []string
		for cur := ""; ; {
			page, nxt, err := webhooks.NewDeadLetters(s.Base(), webhooks.Config{}).DeadLetters(context.Background(), cur, 1)
			if err != nil {
				t.Fatal(err)
			}
			if len(page) == 0 {
				t.Fatalf("an empty page after cursor %q", cur)
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
		// the greatest entry id of a shard: the next shards' letters
		// (Redis refuses an XRANGE from "(" of it: answered 500 before)
		for sh := range 8 {
			after, _, err := webhooks.NewDeadLetters(s.Base(), webhooks.Config{}).DeadLetters(context.Background(), strconv.Itoa(sh)+".18446744073709551615-18446744073709551615", 100)
			if err != nil {
				t.Fatalf("after the last id of shard %d: %v", sh, err)
			}
			n := 0
			for _, l := range list {
				if ls, _, _ := strings.Cut(l.ID, "."); atoi(t, ls) > sh {
					n++
				}
			}
			if len(after) != n {
				t.Fatalf("after the last id of shard %d: %d letters, want the %d of the shards after it", sh, len(after), n)
			}
		}
		for _, bad := range []string{"x", "0.1", "99.1-0", "-1.1-0", "0.1-x", "+0.1-0", "00.1-0", "0.01-0", "0.1-00"} {
			if _, _, err := webhooks.NewDeadLetters(s.Base(), webhooks.Config{}).DeadLetters(context.Background(), bad, 1); !errors.Is(err, deadletter.ErrBadCursor) {
				t.Fatalf("cursor %q: %v, want ErrBadCursor", bad, err)
			}
		}
		for _, l := range list {
			if l.Attempts != attempts || l.Endpoint != "ep" || l.LastError != "503 from ep" || !events[l.MessageID] {
				t.Fatalf("dead letter %+v", l)
			}
		}
		if _, _, retries, _ := webhookKeys(t, s, prefix, 8); retries != 0 {
			t.Fatalf("%d retries left after dead-lettering", retries)
		}
		if err := webhooks.NewDeadLetters(s.Base(), webhooks.Config{}).ReplayDeadLetter(context.Background(), "0.1-0"); !errors.Is(err, deadletter.ErrNotFound) {
			t.Fatalf("replay of an unknown id: %v", err)
		}
		rec.setDown("ep", false)
		before := len(rec.of("ep"))
		for _, l := range list {
			if err := webhooks.NewDeadLetters(s.Base(), webhooks.Config{}).ReplayDeadLetter(context.Background(), l.ID); err != nil {
				t.Fatal(err)
			}
		}
		if err := webhooks.NewDeadLetters(s.Base(), webhooks.Config{}).ReplayDeadLetter(context.Background(), list[0].ID); !errors.Is(err, deadletter.ErrNotFound) {
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
		checkBacklogCounts(t, s, prefix)
	})
}

// A delivery's time is observed from its event's write to the outbox
// (the outbox entry's id) to its delivery, retries included: events whose
// first try failed and whose retry a minute later (the dispatcher's clock)
// was delivered are observed at about a minute each. A replayed dead
// letter is not observed, its retry after a failed replay neither (the
// replay's mark kept through the retries).
func TestWebhooksDeliveryTimeFromTheOutbox(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		s := openStoreWith(t, b, func(c *store.Config) { c.WebhookOutboxLen = 1000 })
		rec := &hookRecorder{down: map[string]bool{"ep": true}}
		clock := &fakeClock{t: time.Now()}
		m := &outcomeRecorder{}
		// the retries due half a second (the clock's) after the first
		// tries: with the full jitter, a retry due under a millisecond
		// later ran within the first tries' drain, refused, and was
		// not the delivery the test observes (CI, once)
		d, err := webhooks.New(s.Base(), webhooks.Config{Consumer: "i1", Send: rec.send, Now: clock.Now, MaxAttempts: 2,
			BackoffBase: time.Second, BackoffMax: time.Second, Jitter: func() float64 { return 0.5 }, Metrics: m,
			Endpoints: []webhooks.Endpoint{{ID: "ep", Events: []string{"*"}}}})
		if err != nil {
			t.Fatal(err)
		}
		roomEvents(t, s)
		drain(t, d) // first tries: refused
		rec.setDown("ep", false)
		clock.Add(time.Minute)
		// the retries' deliveries are written to Redis (its clock) a
		// while after their events: measured from them, the times differ
		time.Sleep(1500 * time.Millisecond)
		drain(t, d) // retries: delivered
		after := m.deliveredAfter()
		var want []time.Duration // the clock at delivery less each event's outbox time
		for _, w := range rec.of("ep") {
			if at, ok := webhooks.OutboxTime(w.MessageID); ok && w.RetryCount == 1 {
				want = append(want, clock.Now().Sub(at))
			}
		}
		slices.Sort(after)
		slices.Sort(want)
		if len(want) != len(wantRoomEvents) || !slices.Equal(after, want) {
			t.Fatalf("delivery times observed %v, want %v (%d events)", after, want, len(wantRoomEvents))
		}
		for _, a := range after { // about a minute each: the events written as the test began
			if a < 50*time.Second || a > time.Minute+time.Millisecond {
				t.Fatalf("delivery times %v, want about a minute each", after)
			}
		}

		rec.setDown("ep", true)
		roomEvents(t, s)
		drain(t, d)
		clock.Add(time.Minute)
		drain(t, d) // the second tries fail too: dead letters
		letters, _, err := webhooks.NewDeadLetters(s.Base(), webhooks.Config{}).DeadLetters(context.Background(), "", 100)
		if err != nil || len(letters) != len(wantRoomEvents) {
			t.Fatalf("%d dead letters, want %d (%v)", len(letters), len(wantRoomEvents), err)
		}
		for _, l := range letters {
			if err := webhooks.NewDeadLetters(s.Base(), webhooks.Config{}).ReplayDeadLetter(context.Background(), l.ID); err != nil {
				t.Fatal(err)
			}
		}
		drain(t, d) // the replays refused once
		rec.setDown("ep", false)
		clock.Add(time.Minute)
		drain(t, d) // and delivered on their retry
		if n := len(rec.of("ep")); n != 6*len(wantRoomEvents) {
			t.Fatalf("%d tries, want %d", n, 6*len(wantRoomEvents))
		}
		if got := m.deliveredAfter(); len(got) != len(after) {
			t.Fatalf("%d delivery times observed after the replays, want still %d: %v", len(got), len(after), got)
		}
	})
}

// A delivery's event time is its message id's outbox entry id's
// milliseconds; an id without one gives none.
func TestOutboxTime(t *testing.T) {
	for _, tc := range []struct {
		id   string
		ms   int64
		good bool
	}{
		{"msg_3_1764950400123-7", 1764950400123, true},
		{"msg_12_5-0", 5, true},
		{"msg_3_x-1", 0, false},
		{"msg_3_1764950400123", 0, false},
		{"", 0, false},
	} {
		at, ok := webhooks.OutboxTime(tc.id)
		if ok != tc.good || ok && at.UnixMilli() != tc.ms {
			t.Errorf("%q: %v %v, want %d %v", tc.id, at.UnixMilli(), ok, tc.ms, tc.good)
		}
	}
}

// TestWebhooksTakenOverAfterACrash: an instance that read deliveries and
// died before settling them leaves them pending; another takes them over
// (XAUTOCLAIM) once idle and delivers them: at least once.
func TestWebhooksTakenOverAfterACrash(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		s := openWebhooks(t, b)
		eps := []webhooks.Endpoint{{ID: "ep", Events: []string{"*"}}}
		id, first := crashMidDelivery(t, s, eps)
		rec := &hookRecorder{down: map[string]bool{}}
		bInst, err := webhooks.New(s.Base(), webhooks.Config{Consumer: "b", Endpoints: eps, Send: rec.send, ClaimIdle: 50 * time.Millisecond})
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
		checkBacklogCounts(t, s, s.Base().Prefix) // the delivery taken over counted once
	})
}

// crashMidDelivery makes a room's events and has instance "a" (consumer
// "a", ClaimIdle an hour) die in the middle of its first round's sends:
// the room's id and the deliveries it tried, left pending for "a".
func crashMidDelivery(t *testing.T, s *store.Store, eps []webhooks.Endpoint) (string, []webhooks.Delivery) {
	t.Helper()
	crashCtx, crash := context.WithCancel(context.Background())
	var first []webhooks.Delivery
	var mu sync.Mutex
	a, err := webhooks.New(s.Base(), webhooks.Config{Consumer: "a", Endpoints: eps, ClaimIdle: time.Hour,
		Send: func(ctx context.Context, d webhooks.Delivery) error {
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
	return id, first
}

// consumersOf are the consumer names of the group on every shard's outbox
// and deliveries streams.
func consumersOf(t *testing.T, s *store.Store) []string {
	t.Helper()
	var out []string
	for sh := range s.Base().Shards {
		tag := s.Base().Tag(sh)
		for _, stream := range []string{tag + ":webhooks", tag + ":webhooks:deliveries"} {
			cs, err := s.Client().XInfoConsumers(context.Background(), stream, "wh").Result()
			if err != nil { // no stream, or no group yet
				continue
			}
			for _, c := range cs {
				if !slices.Contains(out, c.Name) {
					out = append(out, c.Name)
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// TestWebhooksConsumersDoNotPileUp: every instance reads the streams as a
// consumer of its own name, which the group kept for good (an abuse
// tester's five starts left five). A sweep removes other instances'
// consumers that hold nothing and idled ConsumerIdle, never one with a
// delivery pending (a crashed instance's, until another took it over),
// and an instance that stops removes its own.
func TestWebhooksConsumersDoNotPileUp(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		s := openWebhooks(t, b)
		eps := []webhooks.Endpoint{{ID: "ep", Events: []string{"*"}}}
		id, _ := crashMidDelivery(t, s, eps)
		tag, _ := s.RoomTag(id)
		// an instance that read and died holding nothing
		if err := s.Client().XGroupCreateConsumer(context.Background(), tag+":webhooks:deliveries", "wh", "gone").Err(); err != nil {
			t.Fatal(err)
		}
		if got := consumersOf(t, s); !slices.Equal(got, []string{"a", "gone"}) {
			t.Fatalf("consumers %v, want a and gone", got)
		}
		rec := &hookRecorder{down: map[string]bool{}}
		// no takeover yet (ClaimIdle an hour): a keeps its delivery
		patient, err := webhooks.New(s.Base(), webhooks.Config{Consumer: "b", Endpoints: eps, Send: rec.send,
			ClaimIdle: time.Hour, ConsumerIdle: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
		drain(t, patient)
		// b itself, where its reads of nothing made it a consumer (Redis;
		// not the embedded store)
		if got := consumersOf(t, s); !slices.Equal(got, []string{"a", "b"}) && !slices.Equal(got, []string{"a"}) {
			t.Fatalf("after a sweep: consumers %v, want a (a delivery pending) and b (itself), not gone", got)
		}
		bInst, err := webhooks.New(s.Base(), webhooks.Config{Consumer: "b", Endpoints: eps, Send: rec.send,
			ClaimIdle: 50 * time.Millisecond, ConsumerIdle: 100 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			drain(t, bInst)
			got := consumersOf(t, s)
			if slices.Equal(got, []string{"b"}) && slices.Contains(hookTypes(t, rec.of("ep"), id), "room_closed") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("consumers %v, delivered %v: want only b once it took a's delivery over", got, hookTypes(t, rec.of("ep"), id))
			}
		}
		ctx, cancel := context.WithCancel(context.Background())
		ran := make(chan struct{})
		go func() { defer close(ran); bInst.Run(ctx, nil) }()
		time.Sleep(50 * time.Millisecond)
		cancel()
		<-ran
		if got := consumersOf(t, s); len(got) != 0 {
			t.Fatalf("after the last instance stopped: consumers %v, want none", got)
		}
	})
}

// SetEndpoints (the endpoints file reloaded): events fanned out after it go
// to the new endpoints only; a delivery waiting for a removed endpoint is
// not sent again and ends in the dead letters saying why.
func TestWebhooksSetEndpoints(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		s := openWebhooks(t, b)
		rec := &hookRecorder{down: map[string]bool{"a": true}}
		clock := &fakeClock{t: time.Unix(1_800_000_000, 0)}
		d, err := webhooks.New(s.Base(), webhooks.Config{Consumer: "i1", Send: rec.send, Now: clock.Now, MaxAttempts: 3,
			Endpoints: []webhooks.Endpoint{{ID: "a", Events: []string{"*"}}}})
		if err != nil {
			t.Fatal(err)
		}
		first := roomEvents(t, s)
		drain(t, d) // a fails every first try: its deliveries wait to retry
		triedA := len(rec.of("a"))
		if triedA < len(wantRoomEvents) {
			t.Fatalf("a tried %d times, want at least %d", triedA, len(wantRoomEvents))
		}
		d.SetEndpoints([]webhooks.Endpoint{{ID: "b", Events: []string{"room_closed"}}})
		second := roomEvents(t, s)
		for range 5 {
			clock.Add(time.Hour)
			drain(t, d)
		}
		if n := len(rec.of("a")); n != triedA {
			t.Fatalf("a was tried %d more times after it was removed", n-triedA)
		}
		if got := hookTypes(t, rec.of("b"), second); !slices.Equal(got, []string{"room_closed"}) {
			t.Fatalf("b got %v, want the second room's room_closed only (not %s's)", got, first)
		}
		dead, _, err := webhooks.NewDeadLetters(s.Base(), webhooks.Config{}).DeadLetters(context.Background(), "", 100)
		if err != nil {
			t.Fatal(err)
		}
		// one a delivery (an event) each: a try may have been sent twice
		// (at least once: taken over on a loaded machine)
		events := map[string]bool{}
		for _, w := range rec.of("a") {
			events[w.MessageID] = true
		}
		if len(dead) != len(events) {
			t.Fatalf("%d dead letters, want one for each of a's %d events (%d tries)", len(dead), len(events), triedA)
		}
		for _, l := range dead {
			if l.Endpoint != "a" || !strings.Contains(l.LastError, "no longer configured") {
				t.Fatalf("dead letter %+v", l)
			}
		}
		checkBacklogCounts(t, s, s.Base().Prefix) // the removed endpoint's count gone with its deliveries
	})
}

// TestWebhooksBacklogWaitsInTheOutbox: deliveries running behind the rooms
// (a slow endpoint, a soak's 100 events/s against 30 sends/s) no longer
// move the whole backlog into the deliveries stream, which nothing caps: a
// round fans out only what leaves MaxDeliveries queued, the rest waits in
// the outbox (MAXLEN ~), and every event is still delivered once.
func TestWebhooksBacklogWaitsInTheOutbox(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		prefix := redistest.Prefix(t)
		s := openStoreWith(t, b, func(c *store.Config) { c.Prefix = prefix; c.WebhookOutboxLen = 1000 })
		rec := &hookRecorder{down: map[string]bool{}}
		const maxDels = 5
		d, err := webhooks.New(s.Base(), webhooks.Config{Consumer: "i1", Send: rec.send, Workers: 1,
			MaxDeliveries: maxDels, Endpoints: []webhooks.Endpoint{{ID: "ep", Events: []string{"*"}}}})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for range 5 {
			ids = append(ids, roomEvents(t, s))
		}
		events := 5 * len(wantRoomEvents)
		for step := 0; len(rec.of("ep")) < events; step++ {
			if step > 50 {
				t.Fatalf("%d of %d events delivered after 50 rounds", len(rec.of("ep")), events)
			}
			if _, err := d.Step(context.Background()); err != nil {
				t.Fatal(err)
			}
			outbox, dels, _, _ := webhookKeys(t, s, prefix, 8)
			if dels > maxDels {
				t.Fatalf("round %d left %d deliveries queued (MaxDeliveries %d), %d in the outbox", step, dels, maxDels, outbox)
			}
			if step == 0 && outbox == 0 {
				t.Fatalf("round 0 emptied the outbox of %d events", events)
			}
		}
		seen := map[string]bool{}
		for _, g := range rec.of("ep") {
			if seen[g.MessageID] {
				t.Fatalf("delivered twice: %+v", g)
			}
			seen[g.MessageID] = true
		}
		for _, id := range ids {
			got := hookTypes(t, slices.DeleteFunc(slices.Clone(rec.of("ep")), func(g webhooks.Delivery) bool {
				return !strings.Contains(string(g.Event), `"roomId":"`+id+`"`)
			}), id)
			slices.Sort(got)
			if !slices.Equal(got, wantRoomEvents) {
				t.Fatalf("room %s: delivered %v, want %v", id, got, wantRoomEvents)
			}
		}
		if outbox, dels, retries, _ := webhookKeys(t, s, prefix, 8); outbox+dels+retries != 0 {
			t.Fatalf("left behind: outbox %d, deliveries %d, retries %d", outbox, dels, retries)
		}
	})
}

// lagRecorder records the dispatcher's lag reports.
type lagRecorder struct {
	mu  sync.Mutex
	lag []time.Duration
}

func (r *lagRecorder) WebhookDelivered(string, string)             {}
func (r *lagRecorder) WebhookDeliveredAfter(string, time.Duration) {}
func (r *lagRecorder) WebhookRefused(string)                       {}
func (r *lagRecorder) WebhookEndpoints([]string)                   {}
func (r *lagRecorder) WebhookBacklog(map[string]int64)             {}
func (r *lagRecorder) WebhookDeliveryLag(time.Duration)            {}
func (r *lagRecorder) WebhookLag(d time.Duration) {
	r.mu.Lock()
	r.lag = append(r.lag, d)
	r.mu.Unlock()
}

func (r *lagRecorder) last() (time.Duration, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.lag) == 0 {
		return -1, 0
	}
	return r.lag[len(r.lag)-1], len(r.lag)
}

// TestWebhooksLagFallsToZeroWhenIdle: realsync_webhook_outbox_lag_seconds
// is the age of the oldest event a round read or left waiting in the
// outbox (the deliveries full), and 0 once every outbox is empty: it kept
// the last read event's age while idle (a soak's gauge stayed at 2.3 s
// after the load; after an outage, the outage's length: an alert firing
// with nothing behind), and a backlog left waiting was reported by no
// round.
func TestWebhooksLagFallsToZeroWhenIdle(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		prefix := redistest.Prefix(t)
		s := openStoreWith(t, b, func(c *store.Config) { c.Prefix = prefix; c.WebhookOutboxLen = 1000 })
		eps := []webhooks.Endpoint{{ID: "ep", Events: []string{"*"}}}
		// instance a fans out a room's events and dies sending them:
		// its deliveries stay queued, pending for it
		crashCtx, crash := context.WithCancel(context.Background())
		a, err := webhooks.New(s.Base(), webhooks.Config{Consumer: "a", Endpoints: eps,
			Send: func(ctx context.Context, _ webhooks.Delivery) error { crash(); return ctx.Err() }})
		if err != nil {
			t.Fatal(err)
		}
		roomEvents(t, s)
		a.Step(crashCtx) //nolint:errcheck // it dies in the middle
		roomEvents(t, s) // the next room's events wait in the outbox
		rec := &hookRecorder{down: map[string]bool{}}
		lags := &lagRecorder{}
		clock := &fakeClock{t: time.Now().Add(time.Hour)} // every event an hour old
		d, err := webhooks.New(s.Base(), webhooks.Config{Consumer: "b", Send: rec.send, Now: clock.Now, Metrics: lags,
			ClaimIdle: time.Millisecond, MaxDeliveries: 1, Endpoints: eps})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		if _, err := d.Step(ctx); err != nil {
			t.Fatal(err)
		}
		if lag, n := lags.last(); n != 1 || lag < 50*time.Minute {
			t.Fatalf("a round that left the outbox's events waiting (deliveries full) reported lag %v (%d reports), want about an hour", lag, n)
		}
		drain(t, d)
		if outbox, dels, retries, _ := webhookKeys(t, s, prefix, 8); outbox+dels+retries != 0 || len(rec.of("ep")) != 2*len(wantRoomEvents) {
			t.Fatalf("left: outbox %d, deliveries %d, retries %d; delivered %d", outbox, dels, retries, len(rec.of("ep")))
		}
		if lag, _ := lags.last(); lag != 0 {
			t.Fatalf("every outbox empty: lag %v, want 0", lag)
		}
	})
}

// A round sends every shard's deliveries at once: a slow endpoint holds
// the round for its timeout once, not once for each shard with a delivery
// to it. Here its sends wait until all of them are in flight together
// (the test's own 10 s bound aside): one room_closed each of four rooms,
// on several of the 8 shards, after a fifth's, whose try ends at once. A round sent one shard's deliveries at a
// time, waiting for the slowest before the next shard: one receiver at
// its timeout held every endpoint's deliveries for that timeout once a
// shard.
func TestWebhooksSlowEndpointHoldsARoundOnce(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		s := openWebhooks(t, b)
		const n = 4 // at most Workers/2 (4) to one endpoint at once
		var mu sync.Mutex
		inFlight, together := 0, make(chan struct{})
		var held atomic.Bool
		proven := false
		send := func(_ context.Context, d webhooks.Delivery) error {
			if d.Endpoint != "slow" {
				return nil
			}
			mu.Lock()
			if !proven { // its first try ends at once: an endpoint sends one at a time until one did
				proven = true
				mu.Unlock()
				return nil
			}
			if inFlight++; inFlight == n {
				close(together)
			}
			mu.Unlock()
			select {
			case <-together:
			case <-time.After(10 * time.Second):
				held.Store(true)
			}
			return nil
		}
		d, err := webhooks.New(s.Base(), webhooks.Config{Consumer: "i1", Send: send,
			Endpoints: []webhooks.Endpoint{{ID: "slow", Events: []string{"room_closed"}}, {ID: "good", Events: []string{"*"}}}})
		if err != nil {
			t.Fatal(err)
		}
		for i := range n + 1 { // five modes: most likely on several of the 8 shards
			nr := newRoom()
			nr.Mode = fmt.Sprintf("mode-%d", i)
			roomEventsOf(t, s, nr)
		}
		drain(t, d)
		if held.Load() {
			t.Fatal("the slow endpoint's deliveries of different shards were not in flight together")
		}
	})
}

// One endpoint's sends take at most every worker but one for each other
// endpoint (half the workers, one, at least): those stay for the other
// endpoints. Here two workers, and a slow
// endpoint with four deliveries ahead of the healthy one's: its sends wait
// until the healthy one got its delivery (the test's 10 s bound aside);
// with every worker theirs, it waited for them.
func TestWebhooksSlowEndpointLeavesAWorkerToAnother(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		s := openWebhooks(t, b)
		got := make(chan struct{})
		var held atomic.Bool
		send := func(_ context.Context, d webhooks.Delivery) error {
			if d.Endpoint == "good" {
				close(got)
				return nil
			}
			select {
			case <-got:
			case <-time.After(10 * time.Second):
				held.Store(true)
			}
			return nil
		}
		d, err := webhooks.New(s.Base(), webhooks.Config{Consumer: "i1", Send: send, Workers: 2,
			Endpoints: []webhooks.Endpoint{{ID: "slow", Events: []string{"*"}}, {ID: "good", Events: []string{"room_closed"}}}})
		if err != nil {
			t.Fatal(err)
		}
		roomEvents(t, s)
		drain(t, d)
		if held.Load() {
			t.Fatal("the slow endpoint took every worker: the healthy one waited for it")
		}
	})
}

// TestWebhooksHealthyEndpointFlowsWhileAnotherHangs: Run keeps reading and
// sending while an endpoint hangs on every send: the healthy endpoint gets
// every event, made before and after the other hung, while the hung
// sends still run (until the test's end; 10 s bound aside); the hung
// endpoint, none of whose tries ended, never has more than one send in
// flight (before, every worker but the other's one), and no delivery is sent
// twice by the instance, though its pending ones are read again every
// round (the scan) and its own idle ones claimed (ClaimIdle 20 ms). Run
// waited for every send of a round before reading more: the healthy
// endpoint got only the first round's deliveries.
func TestWebhooksHealthyEndpointFlowsWhileAnotherHangs(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		prefix := redistest.Prefix(t)
		s := openStoreWith(t, b, func(c *store.Config) { c.Prefix = prefix; c.WebhookOutboxLen = 1000 })
		const workers = 4
		release := make(chan struct{})
		var mu sync.Mutex
		hung, maxHung := 0, 0
		tries := map[string]int{} // endpoint/message id
		rec := &hookRecorder{down: map[string]bool{}}
		send := func(ctx context.Context, w webhooks.Delivery) error {
			mu.Lock()
			tries[w.Endpoint+"/"+w.MessageID]++
			mu.Unlock()
			if w.Endpoint != "hangs" {
				return rec.send(ctx, w)
			}
			mu.Lock()
			hung++
			maxHung = max(maxHung, hung)
			mu.Unlock()
			defer func() { mu.Lock(); hung--; mu.Unlock() }()
			select {
			case <-release:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		d, err := webhooks.New(s.Base(), webhooks.Config{Consumer: "i1", Send: send, Workers: workers,
			ClaimIdle: 20 * time.Millisecond, Poll: 10 * time.Millisecond, ShutdownWait: 10 * time.Second,
			Endpoints: []webhooks.Endpoint{{ID: "hangs", Events: []string{"*"}}, {ID: "good", Events: []string{"*"}}}})
		if err != nil {
			t.Fatal(err)
		}
		const before, after = 3, 3
		for range before {
			roomEvents(t, s)
		}
		ctx, cancel := context.WithCancel(context.Background())
		ran := make(chan struct{})
		go func() { defer close(ran); d.Run(ctx, func(err error) { t.Error(err) }) }()
		stop := func() { close(release); cancel(); <-ran }
		// the hung endpoint holds its first send from the first round on
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			mu.Lock()
			h := hung
			mu.Unlock()
			if h == 1 {
				break
			}
			if time.Now().After(deadline) {
				stop()
				t.Fatalf("the hanging endpoint has %d sends in flight, want 1", h)
			}
		}
		for range after {
			roomEvents(t, s)
		}
		want := (before + after) * len(wantRoomEvents)
		for deadline := time.Now().Add(10 * time.Second); len(rec.of("good")) < want; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				stop()
				t.Fatalf("the healthy endpoint got %d of %d deliveries while the other hung", len(rec.of("good")), want)
			}
		}
		time.Sleep(50 * time.Millisecond) // more rounds scan and claim the hung ones
		mu.Lock()
		m := maxHung
		for k, n := range tries {
			if n > 1 {
				mu.Unlock()
				stop()
				t.Fatalf("%s sent %d times", k, n)
			}
		}
		mu.Unlock()
		stop()
		if m > 1 {
			t.Fatalf("the hanging endpoint had %d sends in flight of %d workers, more than one while none of its tries ended", m, workers)
		}
	})
}

// outcomeRecorder records the dispatcher's tries by outcome, its lag and
// its backlogs.
type outcomeRecorder struct {
	mu          sync.Mutex
	out         []string
	lag         time.Duration    // the last round's
	deliveryLag time.Duration    // the last WebhookDeliveryLag
	reports     int              // WebhookDeliveryLag's
	eps         []string         // the last WebhookEndpoints
	backlogs    map[string]int64 // the last WebhookBacklog
	after       []time.Duration  // WebhookDeliveredAfter's
}

func (r *outcomeRecorder) WebhookDeliveredAfter(_ string, d time.Duration) {
	r.mu.Lock()
	r.after = append(r.after, d)
	r.mu.Unlock()
}

// deliveredAfter are the delivery times observed so far.
func (r *outcomeRecorder) deliveredAfter() []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.after)
}

func (r *outcomeRecorder) WebhookEndpoints(ids []string) {
	r.mu.Lock()
	r.eps = slices.Clone(ids)
	r.mu.Unlock()
}
func (r *outcomeRecorder) WebhookBacklog(b map[string]int64) {
	r.mu.Lock()
	r.backlogs = maps.Clone(b)
	r.mu.Unlock()
}

// lastBacklog is the last WebhookBacklog's map, printed ("" before one).
func (r *outcomeRecorder) lastBacklog() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.backlogs == nil {
		return ""
	}
	return fmt.Sprint(r.backlogs)
}

func (r *outcomeRecorder) WebhookDelivered(endpoint, outcome string) {
	r.mu.Lock()
	r.out = append(r.out, endpoint+"/"+outcome)
	r.mu.Unlock()
}
func (r *outcomeRecorder) WebhookRefused(endpoint string) {
	r.mu.Lock()
	r.out = append(r.out, endpoint+"/refused")
	r.mu.Unlock()
}
func (r *outcomeRecorder) WebhookLag(d time.Duration) {
	r.mu.Lock()
	r.lag = d
	r.mu.Unlock()
}
func (r *outcomeRecorder) WebhookDeliveryLag(d time.Duration) {
	r.mu.Lock()
	r.deliveryLag = d
	r.reports++
	r.mu.Unlock()
}

// lags are the last round's outbox lag, the last delivery lag and the
// delivery lag reports so far.
func (r *outcomeRecorder) lags() (outbox, delivery time.Duration, reports int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lag, r.deliveryLag, r.reports
}

// lastLag is the lag the last round reported.
func (r *outcomeRecorder) lastLag() time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lag
}

// all returns the recorded "endpoint/outcome"s, sorted.
func (r *outcomeRecorder) all() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Sorted(slices.Values(r.out))
}

// TestWebhooksShutdownWaitsThenLeavesPending: Run's ctx ended, the sends in
// flight that end within ShutdownWait are settled (acknowledged and
// deleted: not sent again by anyone) and counted delivered, nothing new is
// started, and those
// still running past it are cut and left pending, which another instance
// takes over. A send ending after the cancel was not settled (its
// acknowledgement ran with the cancelled ctx): another instance sent it
// again.
func TestWebhooksShutdownWaitsThenLeavesPending(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		prefix := redistest.Prefix(t)
		s := openStoreWith(t, b, func(c *store.Config) { c.Prefix = prefix; c.WebhookOutboxLen = 1000 })
		eps := []webhooks.Endpoint{{ID: "slow", Events: []string{"*"}}, {ID: "stuck", Events: []string{"room_closed"}}}
		ctx, cancel := context.WithCancel(context.Background())
		var mu sync.Mutex
		var sent []webhooks.Delivery
		inFlight := make(chan struct{}, 100)
		send := func(sctx context.Context, w webhooks.Delivery) error {
			inFlight <- struct{}{}
			if w.Endpoint == "stuck" {
				<-sctx.Done() // hangs until cut
				return sctx.Err()
			}
			<-ctx.Done() // the slow one ends after the shutdown began
			mu.Lock()
			sent = append(sent, w)
			mu.Unlock()
			return nil
		}
		outcomes := &outcomeRecorder{}
		a, err := webhooks.New(s.Base(), webhooks.Config{Consumer: "a", Send: send, Workers: 3, Endpoints: eps,
			ShutdownWait: 300 * time.Millisecond, ClaimIdle: time.Hour, Metrics: outcomes})
		if err != nil {
			t.Fatal(err)
		}
		id := roomEvents(t, s)
		ran := make(chan struct{})
		go func() { defer close(ran); a.Run(ctx, nil) }()
		for range 2 { // one slow, one stuck (each one at a time until a try of it ends)
			select {
			case <-inFlight:
			case <-time.After(10 * time.Second):
				cancel()
				<-ran
				t.Fatal("instance a did not start its sends")
			}
		}
		cancel()
		select {
		case <-ran:
		case <-time.After(10 * time.Second):
			t.Fatal("Run did not return after its ShutdownWait")
		}
		mu.Lock()
		first := slices.Clone(sent)
		mu.Unlock()
		if len(first) != 1 {
			t.Fatalf("the slow endpoint's sends in flight at the shutdown: %d ended, want 1", len(first))
		}
		// the cut send is no failed try: left pending, not counted
		if got := outcomes.all(); !slices.Equal(got, []string{"slow/delivered"}) {
			t.Fatalf("instance a counted %v, want the slow endpoint's 1 delivered", got)
		}
		// another instance takes over what a left: never what a settled
		rec := &hookRecorder{down: map[string]bool{}}
		bInst, err := webhooks.New(s.Base(), webhooks.Config{Consumer: "b", Endpoints: eps, Send: rec.send, ClaimIdle: 50 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond) // a's pending ones idle past b's ClaimIdle
		drain(t, bInst)
		if got := hookTypes(t, rec.of("stuck"), id); !slices.Equal(got, []string{"room_closed"}) {
			t.Fatalf("instance b sent the stuck endpoint %v, want the room_closed a left pending", got)
		}
		again := map[string]bool{}
		for _, w := range rec.of("slow") {
			again[w.MessageID] = true
		}
		for _, w := range first {
			if again[w.MessageID] {
				t.Fatalf("%s was settled by a at its shutdown and sent again by b", w.MessageID)
			}
		}
		if got := len(first) + len(rec.of("slow")); got != len(wantRoomEvents) {
			t.Fatalf("the slow endpoint got %d deliveries, want %d", got, len(wantRoomEvents))
		}
	})
}

// TestWebhooksNoDeliverySentTwiceAcrossRounds: a delivery whose send is in
// flight stays pending for the instance, and Run's next rounds read it
// again (the scan of its pending deliveries, XAUTOCLAIM once idle past
// ClaimIdle, 1 ms here) while its endpoint has room: it is not started a
// second time.
func TestWebhooksNoDeliverySentTwiceAcrossRounds(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		s := openWebhooks(t, b)
		release := make(chan struct{})
		var mu sync.Mutex
		tries := map[string]int{}
		send := func(ctx context.Context, w webhooks.Delivery) error {
			mu.Lock()
			tries[w.MessageID]++
			mu.Unlock()
			select {
			case <-release:
			case <-ctx.Done():
			}
			return ctx.Err()
		}
		rounds := &lagRecorder{}
		d, err := webhooks.New(s.Base(), webhooks.Config{Consumer: "i1", Send: send, Workers: 8, Metrics: rounds,
			ClaimIdle: time.Millisecond, Poll: time.Millisecond,
			Endpoints: []webhooks.Endpoint{{ID: "ep", Events: []string{"room_closed"}}}})
		if err != nil {
			t.Fatal(err)
		}
		roomEvents(t, s)
		ctx, cancel := context.WithCancel(context.Background())
		ran := make(chan struct{})
		go func() { defer close(ran); d.Run(ctx, nil) }()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
			mu.Lock()
			n := len(tries)
			mu.Unlock()
			if n > 0 {
				break
			}
			if time.Now().After(deadline) {
				break
			}
		}
		_, start := rounds.last()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
			if _, n := rounds.last(); n >= start+20 || time.Now().After(deadline) {
				break
			}
		}
		close(release)
		cancel()
		<-ran
		mu.Lock()
		defer mu.Unlock()
		if len(tries) != 1 {
			t.Fatalf("tried %v, want the room_closed", tries)
		}
		for m, n := range tries {
			if n != 1 {
				t.Fatalf("%s sent %d times", m, n)
			}
		}
	})
}

// scanHook holds the first reply of the dispatcher's scan of its pending
// deliveries (XREADGROUP from an id, not ">") that carries an entry, once
// armed, and runs settle before the dispatcher gets it.
type scanHook struct {
	armed  atomic.Bool
	settle func()
}

func (h *scanHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *scanHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (h *scanHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		args := cmd.Args()
		xs, ok := cmd.(*redis.XStreamSliceCmd)
		if ok && strings.EqualFold(cmd.Name(), "xreadgroup") && fmt.Sprint(args[len(args)-1]) != ">" &&
			len(xs.Val()) > 0 && len(xs.Val()[0].Messages) > 0 && h.armed.CompareAndSwap(true, false) {
			h.settle()
		}
		return err
	}
}

// TestWebhooksSettledAfterTheScanReadItIsNotSentAgain: the scan of the
// instance's pending deliveries reads a delivery whose send is in flight;
// that send ends and settles (acknowledged, deleted) before the scan's
// reply is handled. The delivery is not started again. The pool forgot
// the delivery when its send ended, so the scan's stale copy of it was
// sent a second time.
func TestWebhooksSettledAfterTheScanReadItIsNotSentAgain(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		prefix := redistest.Prefix(t)
		s := openStoreWith(t, b, func(c *store.Config) { c.Prefix = prefix; c.WebhookOutboxLen = 1000 })
		release := make(chan struct{})
		hook := &scanHook{settle: func() {
			close(release) // the send in flight ends now, after the scan read its delivery
			for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
				if _, dels, _, _ := webhookKeys(t, s, prefix, 8); dels == 0 {
					break
				}
			}
			time.Sleep(20 * time.Millisecond) // its worker lets it go
		}}
		s.Client().AddHook(hook)
		var mu sync.Mutex
		tries := map[string]int{}
		send := func(ctx context.Context, w webhooks.Delivery) error {
			mu.Lock()
			tries[w.MessageID]++
			first := tries[w.MessageID] == 1
			mu.Unlock()
			if first {
				hook.armed.Store(true)
			}
			select {
			case <-release:
			case <-ctx.Done():
			}
			return ctx.Err()
		}
		rounds := &lagRecorder{}
		d, err := webhooks.New(s.Base(), webhooks.Config{Consumer: "i1", Send: send, Workers: 2, Metrics: rounds,
			ClaimIdle: time.Hour, Poll: time.Millisecond,
			Endpoints: []webhooks.Endpoint{{ID: "ep", Events: []string{"room_closed"}}}})
		if err != nil {
			t.Fatal(err)
		}
		roomEvents(t, s)
		ctx, cancel := context.WithCancel(context.Background())
		ran := make(chan struct{})
		go func() { defer close(ran); d.Run(ctx, nil) }()
		select {
		case <-release:
		case <-time.After(10 * time.Second):
			cancel()
			<-ran
			t.Fatal("no scan read the delivery in flight")
		}
		_, start := rounds.last()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
			if _, n := rounds.last(); n >= start+20 || time.Now().After(deadline) {
				break
			}
		}
		cancel()
		<-ran
		mu.Lock()
		defer mu.Unlock()
		if len(tries) != 1 {
			t.Fatalf("tried %v, want the room_closed", tries)
		}
		for m, n := range tries {
			if n != 1 {
				t.Fatalf("%s sent %d times", m, n)
			}
		}
	})
}

// TestWebhooksAbandonedBehindManyLiveDeliveriesAreTakenOver: a dead
// instance's deliveries lie in the pending list behind hundreds that a
// live instance holds (read again by its scan every round, so never idle).
// Another instance takes them over. XAUTOCLAIM looks at 10·COUNT pending
// entries a call (Redis 7): from 0-0 every round it never got past the
// live ones and the dead instance's deliveries were never sent.
func TestWebhooksAbandonedBehindManyLiveDeliveriesAreTakenOver(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		prefix := redistest.Prefix(t)
		s := openStoreWith(t, b, func(c *store.Config) { c.Prefix = prefix; c.WebhookOutboxLen = 1000 })
		ctx := context.Background()
		c := s.Client()
		key := s.Base().Tag(0) + ":webhooks:deliveries"
		if err := c.XGroupCreateMkStream(ctx, key, "wh", "0").Err(); err != nil {
			t.Fatal(err)
		}
		const live, abandoned = 400, 5
		var ids []string
		for i := range live + abandoned {
			id, err := c.XAdd(ctx, &redis.XAddArgs{Stream: key, Values: []any{"m", fmt.Sprintf("msg_0_%d", i),
				"e", "ep", "t", "room_closed", "d", "{}", "n", "0"}}).Result()
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
		// instance "dead" read them all and died an hour ago; "live" holds the first 400
		if err := c.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "wh", Consumer: "dead", Streams: []string{key, ">"},
			Count: live + abandoned, Block: -1}).Err(); err != nil {
			t.Fatal(err)
		}
		args := []any{"XCLAIM", key, "wh", "dead", 0}
		for _, id := range ids[live:] {
			args = append(args, id)
		}
		if err := c.Do(ctx, append(args, "IDLE", time.Hour.Milliseconds())...).Err(); err != nil {
			t.Fatal(err)
		}
		if err := c.XClaim(ctx, &redis.XClaimArgs{Stream: key, Group: "wh", Consumer: "live", Messages: ids[:live]}).Err(); err != nil {
			t.Fatal(err)
		}
		rec := &hookRecorder{down: map[string]bool{}}
		d, err := webhooks.New(s.Base(), webhooks.Config{Consumer: "b", Send: rec.send, Workers: 8,
			ClaimIdle: time.Minute, Endpoints: []webhooks.Endpoint{{ID: "ep", Events: []string{"*"}}}})
		if err != nil {
			t.Fatal(err)
		}
		for range 10 {
			if _, err := d.Step(ctx); err != nil {
				t.Fatal(err)
			}
		}
		var got []string
		for _, w := range rec.of("ep") {
			got = append(got, w.MessageID)
		}
		slices.Sort(got)
		var want []string
		for i := range abandoned {
			want = append(want, fmt.Sprintf("msg_0_%d", live+i))
		}
		if !slices.Equal(got, want) {
			t.Fatalf("instance b sent %v, want the dead instance's %v", got, want)
		}
	})
}

// TestWebhooksLargePendingListThatCannotStartWaitsPoll: an instance holds
// 2000 pending deliveries to an endpoint whose sends hang; once its pool
// holds what it may of them, its rounds take nothing and it pauses Poll
// (an hour here) between them. It scanned the rest back to back, 8 a
// round, and paused only at the end of the list: a cycle of 250 rounds of
// every shard's reads per Poll, re-reading every pending delivery, for as
// long as the endpoint hung.
func TestWebhooksLargePendingListThatCannotStartWaitsPoll(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		prefix := redistest.Prefix(t)
		s := openStoreWith(t, b, func(c *store.Config) { c.Prefix = prefix; c.WebhookOutboxLen = 1000 })
		ctx := context.Background()
		const pending = 2000
		holdPending(t, s, "hangs", pending)
		started := make(chan struct{}, pending)
		send := func(sctx context.Context, _ webhooks.Delivery) error {
			started <- struct{}{}
			<-sctx.Done() // hangs until cut at the shutdown
			return sctx.Err()
		}
		rounds := &lagRecorder{}
		d, err := webhooks.New(s.Base(), webhooks.Config{Consumer: "i1", Send: send, Workers: 2, Metrics: rounds,
			ClaimIdle: time.Hour, Poll: time.Hour, ShutdownWait: time.Millisecond,
			Endpoints: []webhooks.Endpoint{{ID: "hangs", Events: []string{"*"}}}})
		if err != nil {
			t.Fatal(err)
		}
		runCtx, cancel := context.WithCancel(ctx)
		ran := make(chan struct{})
		go func() { defer close(ran); d.Run(runCtx, nil) }()
		select { // its first send: it sends one at a time until a try of it ends
		case <-started:
		case <-time.After(10 * time.Second):
			t.Fatal("no send started")
		}
		time.Sleep(time.Second) // rounds that take nothing would follow
		_, n := rounds.last()
		cancel()
		<-ran
		// one send (the endpoint's first, which hangs) and 32 waiting
		// (16·Workers) take 5 rounds of 8; the 6th takes nothing
		if n > 10 {
			t.Fatalf("%d rounds in a second with nothing to start and Poll an hour", n)
		}
		if len(started) > 0 {
			t.Fatalf("%d more sends started to the hung endpoint", len(started))
		}
	})
}

// TestWebhooksNewDeliveryIsNotHeldBehindALargePendingList: an instance holds
// 2000 pending deliveries to an endpoint whose sends hang (its pool full of
// them); a new delivery to a healthy endpoint is read and sent by the next
// rounds. New deliveries were read only once the scan of the pending list
// had reached its end: 250 rounds of 8 (a Poll each, none taking anything),
// so the healthy endpoint waited for the whole list.
func TestWebhooksNewDeliveryIsNotHeldBehindALargePendingList(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		prefix := redistest.Prefix(t)
		s := openStoreWith(t, b, func(c *store.Config) { c.Prefix = prefix; c.WebhookOutboxLen = 1000 })
		ctx := context.Background()
		c := s.Client()
		const pending = 2000
		key := holdPending(t, s, "hangs", pending)
		hung := make(chan struct{}, pending)
		good := make(chan string, 10)
		send := func(sctx context.Context, w webhooks.Delivery) error {
			if w.Endpoint == "good" {
				good <- w.MessageID
				return nil
			}
			hung <- struct{}{}
			<-sctx.Done() // hangs until cut at the shutdown
			return sctx.Err()
		}
		rounds := &lagRecorder{}
		d, err := webhooks.New(s.Base(), webhooks.Config{Consumer: "i1", Send: send, Workers: 2, Metrics: rounds,
			ClaimIdle: time.Hour, Poll: 20 * time.Millisecond, ShutdownWait: time.Millisecond,
			Endpoints: []webhooks.Endpoint{{ID: "hangs", Events: []string{"*"}}, {ID: "good", Events: []string{"*"}}}})
		if err != nil {
			t.Fatal(err)
		}
		runCtx, cancel := context.WithCancel(ctx)
		defer cancel()
		ran := make(chan struct{})
		go func() { defer close(ran); d.Run(runCtx, nil) }()
		select {
		case <-hung:
		case <-time.After(10 * time.Second):
			t.Fatal("no send to the hanging endpoint")
		}
		// the pool holds what it may of the hung endpoint's deliveries
		_, n := rounds.last()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			if _, m := rounds.last(); m >= n+10 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the dispatcher stopped its rounds")
			}
		}
		_, before := rounds.last()
		if err := c.XAdd(ctx, &redis.XAddArgs{Stream: key, Values: []any{"m", "msg_0_new",
			"e", "good", "t", "room_closed", "d", "{}", "n", "0"}}).Err(); err != nil {
			t.Fatal(err)
		}
		select {
		case <-good:
		case <-time.After(20 * time.Second):
		}
		_, after := rounds.last()
		cancel()
		<-ran
		if after-before > 3 {
			t.Fatalf("the healthy endpoint's new delivery waited %d rounds", after-before)
		}
	})
}

// holdPending adds n deliveries to endpoint in shard 0's deliveries stream
// of s and has instance "i1" read them (its consumer name is its
// instance id): they are its pending deliveries. It returns the stream.
func holdPending(t *testing.T, s *store.Store, endpoint string, n int) string {
	t.Helper()
	ctx := context.Background()
	c := s.Client()
	key := s.Base().Tag(0) + ":webhooks:deliveries"
	if err := c.XGroupCreateMkStream(ctx, key, "wh", "0").Err(); err != nil {
		t.Fatal(err)
	}
	p := c.Pipeline()
	for i := range n {
		p.XAdd(ctx, &redis.XAddArgs{Stream: key, Values: []any{"m", fmt.Sprintf("msg_0_%d", i),
			"e", endpoint, "t", "room_closed", "d", "{}", "n", "0"}})
	}
	if _, err := p.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "wh", Consumer: "i1", Streams: []string{key, ">"},
		Count: int64(n), Block: -1}).Err(); err != nil {
		t.Fatal(err)
	}
	return key
}

// fullRedisStore is a store with webhooks on (an outbox of 1 000) on a
// Redis server of its own, which the test may fill (redistest.Fill), and
// the store's key prefix.
func fullRedisStore(t *testing.T) (*redistest.Server, *store.Store, string) {
	t.Helper()
	srv, err := redistest.StartServer()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	prefix := redistest.Prefix(t)
	s := openStoreWith(t, redistest.Backend{Name: "full", URL: "redis://" + srv.Addr},
		func(c *store.Config) { c.Prefix = prefix; c.WebhookOutboxLen = 1000 })
	return srv, s, prefix
}

// A full Redis (maxmemory, noeviction) does not make the dispatcher send a
// delivery again and again: a delivery sent was settled with XACK and
// XDEL in a MULTI, every command of which Redis refuses out of memory, so
// it stayed pending and every round's scan read it and sent it again (a
// tester's run: 25 deliveries sent 93 500 times in 3 minutes, up to 7 376
// times one, to a healthy endpoint). Out of memory, each delivery sent is
// settled, sent once, and nothing is left behind.
func TestWebhooksFullRedisSendsEachDeliveryOnce(t *testing.T) {
	srv, s, prefix := fullRedisStore(t)
	rec := &hookRecorder{down: map[string]bool{}}
	started, filled := make(chan struct{}, 1), make(chan struct{})
	send := func(ctx context.Context, d webhooks.Delivery) error {
		select { // the first send waits for Redis to be full: the settle runs out of memory
		case started <- struct{}{}:
		default:
		}
		<-filled
		return rec.send(ctx, d)
	}
	d, err := webhooks.New(s.Base(), webhooks.Config{Consumer: "i1", Send: send,
		Endpoints: []webhooks.Endpoint{{ID: "good", Events: []string{"*"}}}})
	if err != nil {
		t.Fatal(err)
	}
	id := roomEvents(t, s)
	stepped := make(chan struct{})
	go func() {
		defer close(stepped)
		d.Step(context.Background()) //nolint:errcheck // the later shards' rounds run out of memory: refused, not this test's
	}()
	<-started
	redistest.Fill(t, srv.Addr)
	close(filled)
	<-stepped
	for range 5 {
		d.Step(context.Background()) //nolint:errcheck // as above
	}
	// each settle out of memory took its delivery off its endpoint's backlog
	checkBacklogCounts(t, s, prefix)
	times := map[string]int{}
	for _, g := range rec.of("good") {
		times[g.MessageID]++
	}
	for m, n := range times {
		if n != 1 {
			t.Fatalf("delivery %s sent %d times out of memory, want once (all: %v)", m, n, times)
		}
	}
	redistest.Unfill(t, srv.Addr)
	drain(t, d)
	got := hookTypes(t, rec.of("good"), id)
	slices.Sort(got)
	if !slices.Equal(got, wantRoomEvents) {
		t.Fatalf("delivered %v, want each of %v once", got, wantRoomEvents)
	}
	if outbox, dels, _, _ := webhookKeys(t, s, prefix, 8); outbox != 0 || dels != 0 {
		t.Fatalf("left behind: outbox %d, deliveries %d", outbox, dels)
	}
	checkBacklogCounts(t, s, prefix)
}

// A full Redis does not make the dispatcher try a failing endpoint again
// and again: a failed try's move to the retries (webhook_fail) is refused
// out of memory, so the delivery stayed pending and every round's scan
// read it and tried it again at once, with no backoff, as long as Redis
// was full. Out of memory each is tried once (ClaimIdle/2 passes before
// the next) and stays pending, nothing lost.
func TestWebhooksFullRedisDoesNotRetryAtOnce(t *testing.T) {
	srv, s, prefix := fullRedisStore(t)
	rec := &hookRecorder{down: map[string]bool{"bad": true}}
	started, filled := make(chan struct{}, 1), make(chan struct{})
	send := func(ctx context.Context, d webhooks.Delivery) error {
		select { // the first try waits for Redis to be full: the move to the retries is refused
		case started <- struct{}{}:
		default:
		}
		<-filled
		return rec.send(ctx, d)
	}
	d, err := webhooks.New(s.Base(), webhooks.Config{Consumer: "i1", Send: send, ClaimIdle: time.Hour,
		Endpoints: []webhooks.Endpoint{{ID: "bad", Events: []string{"*"}}}})
	if err != nil {
		t.Fatal(err)
	}
	roomEvents(t, s)
	stepped := make(chan struct{})
	go func() {
		defer close(stepped)
		d.Step(context.Background()) //nolint:errcheck // out of memory the tries' moves are refused: what this test is about
	}()
	<-started
	redistest.Fill(t, srv.Addr)
	close(filled)
	<-stepped
	for range 5 {
		d.Step(context.Background()) //nolint:errcheck // as above
	}
	times := map[string]int{}
	for _, g := range rec.of("bad") {
		times[g.MessageID]++
	}
	if len(times) != len(wantRoomEvents) {
		t.Fatalf("tried %v, want each of the %d deliveries", times, len(wantRoomEvents))
	}
	for m, n := range times {
		if n != 1 {
			t.Fatalf("delivery %s tried %d times out of memory, want once (all: %v)", m, n, times)
		}
	}
	redistest.Unfill(t, srv.Addr)
	if _, dels, retries, dead := webhookKeys(t, s, prefix, 8); dels+retries+dead != int64(len(wantRoomEvents)) {
		t.Fatalf("deliveries %d, retries %d, dead %d: want the %d deliveries kept", dels, retries, dead, len(wantRoomEvents))
	}
}

// TestWebhooksFullRedisRecounts: out of memory (maxmemory, noeviction) a
// shard's backlog recount runs, and repairs a count gone astray, without
// an error: its first write, a field's increment, was refused, and every
// round of every instance warned of it while Redis was full.
func TestWebhooksFullRedisRecounts(t *testing.T) {
	srv, s, prefix := fullRedisStore(t)
	d, err := webhooks.New(s.Base(), webhooks.Config{Consumer: "i1", Send: (&hookRecorder{}).send, RecountEvery: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	tag := s.Base().Tag(0)
	for range 3 { // deliveries read by no one yet
		if err := s.Client().XAdd(ctx, &redis.XAddArgs{Stream: tag + ":webhooks:deliveries",
			Values: []any{"e", "a", "m", "msg_0_1", "t", "x", "d", "{}", "n", 0}}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Client().HSet(ctx, tag+":webhooks:backlog", "a", 9, "b", 4).Err(); err != nil { // gone astray
		t.Fatal(err)
	}
	redistest.Fill(t, srv.Addr)
	if err := d.RecountStep(ctx, 0); err != nil {
		t.Fatalf("a recount out of memory: %v", err)
	}
	redistest.Unfill(t, srv.Addr)
	checkBacklogCounts(t, s, prefix)
}

// TestWebhooksDeliveryLagWhileSendsWait: realsync_webhook_delivery_lag_seconds
// is how long the head of the deliveries (fanned out, not delivered) has
// waited there: above 0 while an endpoint's sends hang (its events
// waiting), where the outbox lag is 0 (every event fanned out), and 0 once
// they are delivered. A soak's find: an endpoint one try at a time behind
// held deliveries 29 minutes while the only lag gauge read 0.
func TestWebhooksDeliveryLagWhileSendsWait(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		prefix := redistest.Prefix(t)
		s := openStoreWith(t, b, func(c *store.Config) { c.Prefix = prefix; c.WebhookOutboxLen = 1000 })
		release := make(chan struct{})
		send := func(ctx context.Context, _ webhooks.Delivery) error {
			select {
			case <-release:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		m := &outcomeRecorder{}
		d, err := webhooks.New(s.Base(), webhooks.Config{Consumer: "i1", Send: send, Workers: 1, Metrics: m,
			BacklogEvery: time.Nanosecond, Poll: 10 * time.Millisecond, ShutdownWait: time.Second,
			Endpoints: []webhooks.Endpoint{{ID: "slow", Events: []string{"*"}}}})
		if err != nil {
			t.Fatal(err)
		}
		roomEvents(t, s)
		ctx, cancel := context.WithCancel(context.Background())
		ran := make(chan struct{})
		go func() { defer close(ran); d.Run(ctx, func(err error) { t.Error(err) }) }()
		stop := func() { cancel(); <-ran }
		waitFor := func(what string, ok func(outbox, delivery time.Duration) bool) {
			t.Helper()
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
				_, _, before := m.lags()
				time.Sleep(20 * time.Millisecond) // a report after this moment
				outbox, delivery, after := m.lags()
				if after > before && ok(outbox, delivery) {
					return
				}
				if time.Now().After(deadline) {
					stop()
					t.Fatalf("%s: outbox lag %v, delivery lag %v", what, outbox, delivery)
				}
			}
		}
		waitFor("every event fanned out, one send hung", func(outbox, delivery time.Duration) bool { return outbox == 0 && delivery > 0 })
		close(release)
		waitFor("every event delivered", func(outbox, delivery time.Duration) bool { return outbox == 0 && delivery == 0 })
		stop()
	})
}
