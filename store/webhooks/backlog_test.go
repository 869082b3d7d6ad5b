package webhooks_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/internal/webhook/deadletter"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/store"
	"github.com/realsync/realsync/store/webhooks"
)

// held returns the message ids of endpoint ep's deliveries in s's webhook
// keys of every shard: in the deliveries stream, in the retries.
func held(t *testing.T, s *store.Store, prefix, ep string) []string {
	t.Helper()
	ctx := context.Background()
	c := s.Client()
	var out []string
	for sh := range 8 {
		tag := s.Base().Tag(sh)
		msgs, err := c.XRange(ctx, tag+":webhooks:deliveries", "-", "+").Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs {
			if m.Values["e"] == ep {
				out = append(out, m.Values["m"].(string))
			}
		}
		members, err := c.ZRange(ctx, tag+":webhooks:retries", 0, -1).Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range members {
			var r struct{ E, M string }
			if err := json.Unmarshal([]byte(m), &r); err != nil {
				t.Fatal(err)
			}
			if r.E == ep {
				out = append(out, r.M)
			}
		}
	}
	return out
}

// checkBacklogCounts checks each shard's backlog hash against what its
// deliveries stream and retries hold, endpoint by endpoint: equal, no
// field at 0, and no hash once both are empty.
func checkBacklogCounts(t *testing.T, s *store.Store, prefix string) {
	t.Helper()
	ctx := context.Background()
	c := s.Client()
	for sh := range 8 {
		tag := s.Base().Tag(sh)
		want := map[string]string{}
		msgs, err := c.XRange(ctx, tag+":webhooks:deliveries", "-", "+").Result()
		if err != nil {
			t.Fatal(err)
		}
		n := map[string]int{}
		for _, m := range msgs {
			n[m.Values["e"].(string)]++
		}
		members, err := c.ZRange(ctx, tag+":webhooks:retries", 0, -1).Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range members {
			var r struct{ E string }
			if err := json.Unmarshal([]byte(m), &r); err != nil {
				t.Fatal(err)
			}
			n[r.E]++
		}
		for ep, k := range n {
			want[ep] = strconv.Itoa(k)
		}
		got, err := c.HGetAll(ctx, tag+":webhooks:backlog").Result()
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 0 && len(want) == 0 {
			if exists := c.Exists(ctx, tag+":webhooks:backlog").Val(); exists != 0 {
				t.Fatalf("shard %d: an empty backlog hash left", sh)
			}
			continue
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("shard %d: backlog counts %v, its deliveries and retries hold %v", sh, got, want)
		}
	}
}

// deadOf returns the dead letters of endpoint ep.
func deadOf(t *testing.T, s *store.Store, ep string) []deadletter.Letter {
	t.Helper()
	var out []deadletter.Letter
	for cur := ""; ; {
		page, next, err := webhooks.NewDeadLetters(s.Base(), webhooks.Config{}).DeadLetters(context.Background(), cur, 100)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range page {
			if l.Endpoint == ep {
				out = append(out, l)
			}
		}
		if next == "" {
			return out
		}
		cur = next
	}
}

// messageIDs are the distinct message ids of ds.
func messageIDs(ds []webhooks.Delivery) map[string]bool {
	out := map[string]bool{}
	for _, d := range ds {
		out[d.MessageID] = true
	}
	return out
}

// runUntilDelivered makes the events of rooms rooms and runs d until
// endpoint ep got that many deliveries, 20 s at most; it returns the
// number of events made.
func runUntilDelivered(t *testing.T, s *store.Store, d *webhooks.Dispatcher, rec *hookRecorder, ep string, rooms int) int {
	t.Helper()
	for range rooms {
		roomEvents(t, s)
	}
	events := rooms * len(wantRoomEvents)
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { defer close(ran); d.Run(ctx, nil) }()
	for deadline := time.Now().Add(20 * time.Second); len(rec.of(ep)) < events && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	<-ran
	return events
}

// TestWebhooksDeadEndpointDoesNotHoldTheOthers: one endpoint is dead
// (every try hangs to its timeout, or is refused at once), one healthy,
// and the rooms make more events than the dead one's backlog may hold
// (MaxDeliveries 8: the per-endpoint bound defaults to it). Run delivers
// every event to the healthy endpoint while the dead one's sends hang;
// the dead endpoint keeps exactly its bound of deliveries (pending, or
// waiting to retry) and the rest of its events are in the dead letters,
// untried, saying why; no event of either is lost. The deliveries stream
// held the outbox back once it was MaxDeliveries long, whoever's
// deliveries filled it: the dead endpoint's backlog (a hung send holds
// its delivery for the timeout, half the workers at a time) stopped every
// endpoint's events in the outbox.
func TestWebhooksDeadEndpointDoesNotHoldTheOthers(t *testing.T) {
	for _, b := range redistest.Backends(t) {
		for _, dead := range []string{"hangs", "refuses"} {
			t.Run(b.Name+"/"+dead, func(t *testing.T) {
				prefix := redistest.Prefix(t)
				s := openStoreWith(t, b, func(c *store.Config) { c.Prefix = prefix; c.WebhookOutboxLen = 1000 })
				rec := &hookRecorder{down: map[string]bool{"dead": true}}
				send := func(ctx context.Context, w webhooks.Delivery) error {
					if w.Endpoint == "dead" && dead == "hangs" {
						<-ctx.Done() // to its timeout: the test's end here
						return ctx.Err()
					}
					return rec.send(ctx, w)
				}
				const maxDels, rooms = 8, 10
				outcomes := &outcomeRecorder{}
				clock := &fakeClock{t: time.Now()} // still: a failed try's retry never comes due
				d, err := webhooks.New(s.Base(), webhooks.Config{Consumer: "i1", Send: send, Workers: 4, Now: clock.Now,
					MaxDeliveries: maxDels, Poll: 10 * time.Millisecond, ShutdownWait: time.Millisecond, Metrics: outcomes,
					Endpoints: []webhooks.Endpoint{{ID: "dead", Events: []string{"*"}}, {ID: "good", Events: []string{"*"}}}})
				if err != nil {
					t.Fatal(err)
				}
				events := runUntilDelivered(t, s, d, rec, "good", rooms)
				good := messageIDs(rec.of("good"))
				if len(good) != events || len(rec.of("good")) != events {
					outbox, dels, retries, deadN := webhookKeys(t, s, prefix, 8)
					t.Fatalf("the healthy endpoint got %d deliveries of %d distinct events, want each of %d once (outbox %d, deliveries %d, retries %d, dead %d)",
						len(rec.of("good")), len(good), events, outbox, dels, retries, deadN)
				}
				kept := held(t, s, prefix, "dead")
				if len(kept) != maxDels {
					t.Fatalf("the dead endpoint holds %d deliveries, want its bound %d", len(kept), maxDels)
				}
				letters := deadOf(t, s, "dead")
				all := map[string]bool{}
				for _, m := range kept {
					all[m] = true
				}
				for _, l := range letters {
					if !strings.HasPrefix(l.LastError, webhooks.ErrBacklogFull) || l.Attempts != 0 {
						t.Fatalf("dead letter %+v: want %q, 0 attempts", l, webhooks.ErrBacklogFull)
					}
					if all[l.MessageID] {
						t.Fatalf("%s both held and dead-lettered", l.MessageID)
					}
					all[l.MessageID] = true
				}
				if len(letters) != events-maxDels || len(all) != events {
					t.Fatalf("the dead endpoint: %d held, %d dead letters, %d distinct events; want %d, %d, %d",
						len(kept), len(letters), len(all), maxDels, events-maxDels, events)
				}
				for m := range good {
					if !all[m] {
						t.Fatalf("event %s reached the healthy endpoint and is lost for the dead one", m)
					}
				}
				refused := 0
				for _, o := range outcomes.all() {
					if o == "dead/refused" {
						refused++
					}
				}
				if refused != len(letters) {
					t.Fatalf("%d refusals counted, %d dead letters", refused, len(letters))
				}
				if outbox, _, _, _ := webhookKeys(t, s, prefix, 8); outbox != 0 {
					t.Fatalf("%d events left in the outbox", outbox)
				}
				checkBacklogCounts(t, s, prefix)
			})
		}
	}
}

// TestWebhooksHungEndpointsDoNotHoldTheOthers: two endpoints whose every
// try hangs (to the test's end) and one healthy, 4 workers: each hung
// endpoint may take half the pool, and before the pool kept a worker for
// an endpoint with none in flight the two took all four between them and
// the healthy endpoint got nothing until a hung try ended. The healthy
// endpoint gets every event once while the others hang.
func TestWebhooksHungEndpointsDoNotHoldTheOthers(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		prefix := redistest.Prefix(t)
		s := openStoreWith(t, b, func(c *store.Config) { c.Prefix = prefix; c.WebhookOutboxLen = 1000 })
		rec := &hookRecorder{}
		send := func(ctx context.Context, w webhooks.Delivery) error {
			if w.Endpoint != "good" {
				<-ctx.Done()
				return ctx.Err()
			}
			return rec.send(ctx, w)
		}
		d, err := webhooks.New(s.Base(), webhooks.Config{Consumer: "i1", Send: send, Workers: 4,
			Poll: 10 * time.Millisecond, ShutdownWait: time.Millisecond,
			Endpoints: []webhooks.Endpoint{{ID: "hung1", Events: []string{"*"}}, {ID: "hung2", Events: []string{"*"}}, {ID: "good", Events: []string{"*"}}}})
		if err != nil {
			t.Fatal(err)
		}
		const rooms = 5
		events := runUntilDelivered(t, s, d, rec, "good", rooms)
		if good := messageIDs(rec.of("good")); len(good) != events || len(rec.of("good")) != events {
			t.Fatalf("the healthy endpoint got %d deliveries of %d distinct events while two hung, want each of %d once",
				len(rec.of("good")), len(good), events)
		}
	})
}

// TestWebhooksBacklogBoundThenRecovery: an endpoint down keeps exactly
// MaxBacklog deliveries (3; MaxDeliveries 100) waiting to retry, the next
// event to it is refused into the dead letters while the other endpoint
// gets it; once the endpoint is back its retries are delivered, its
// backlog falls to nothing and new events reach it again, and the refused
// ones, replayed, are delivered; then no webhook key is left (the backlog
// hash included). The counts follow every move (fan-out, retry, due,
// delivery, dead letter, replay).
func TestWebhooksBacklogBoundThenRecovery(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		prefix := redistest.Prefix(t)
		s := openStoreWith(t, b, func(c *store.Config) { c.Prefix = prefix; c.WebhookOutboxLen = 1000 })
		rec := &hookRecorder{down: map[string]bool{"flaky": true}}
		clock := &fakeClock{t: time.Unix(1_800_000_000, 0)}
		const bound = 3
		d, err := webhooks.New(s.Base(), webhooks.Config{Consumer: "i1", Send: rec.send, Now: clock.Now,
			MaxDeliveries: 100, MaxBacklog: bound,
			Endpoints: []webhooks.Endpoint{{ID: "flaky", Events: []string{"room_closed"}}, {ID: "good", Events: []string{"room_closed"}}}})
		if err != nil {
			t.Fatal(err)
		}
		for i := range bound {
			roomEvents(t, s)
			drain(t, d)
			if n := len(held(t, s, prefix, "flaky")); n != i+1 {
				t.Fatalf("after %d events the down endpoint holds %d", i+1, n)
			}
			checkBacklogCounts(t, s, prefix)
		}
		if n := len(deadOf(t, s, "flaky")); n != 0 {
			t.Fatalf("%d dead letters below the bound", n)
		}
		roomEvents(t, s) // one past the bound
		drain(t, d)
		letters := deadOf(t, s, "flaky")
		if len(letters) != 1 || !strings.HasPrefix(letters[0].LastError, webhooks.ErrBacklogFull) ||
			!strings.Contains(letters[0].LastError, "3 deliveries") {
			t.Fatalf("past the bound: dead letters %+v", letters)
		}
		if n := len(held(t, s, prefix, "flaky")); n != bound {
			t.Fatalf("past the bound the down endpoint holds %d, want %d", n, bound)
		}
		if n := len(rec.of("good")); n != bound+1 {
			t.Fatalf("the healthy endpoint got %d, want %d", n, bound+1)
		}
		checkBacklogCounts(t, s, prefix)

		rec.setDown("flaky", false)
		clock.Add(time.Hour) // its retries come due
		drain(t, d)
		if n := len(held(t, s, prefix, "flaky")); n != 0 {
			t.Fatalf("recovered: %d still held", n)
		}
		checkBacklogCounts(t, s, prefix)
		for range 2 * bound { // more than the bound: each delivered before the next
			roomEvents(t, s)
			drain(t, d)
		}
		if n := len(deadOf(t, s, "flaky")); n != 1 {
			t.Fatalf("recovered: %d dead letters, want the one refused before", n)
		}
		if err := webhooks.NewDeadLetters(s.Base(), webhooks.Config{}).ReplayDeadLetter(context.Background(), letters[0].ID); err != nil {
			t.Fatal(err)
		}
		checkBacklogCounts(t, s, prefix)
		drain(t, d)
		got := messageIDs(rec.of("flaky"))
		if want := 1 + 3*bound; len(got) != want || !got[letters[0].MessageID] {
			t.Fatalf("the recovered endpoint got %d distinct events, want %d with the replayed %s", len(got), want, letters[0].MessageID)
		}
		outbox, dels, retries, deadN := webhookKeys(t, s, prefix, 8)
		if outbox+dels+retries+deadN != 0 {
			t.Fatalf("left behind: outbox %d, deliveries %d, retries %d, dead %d", outbox, dels, retries, deadN)
		}
		checkBacklogCounts(t, s, prefix)
	})
}

// driftBacklogs adds n to endpoint ep's count in every shard's backlog
// hash: a count gone astray (a delivery settled by an instance that does
// not count, or deleted by hand), and ends each shard's recount pause.
func driftBacklogs(t *testing.T, s *store.Store, prefix, ep string, n int64) {
	t.Helper()
	ctx := context.Background()
	for sh := range 8 {
		tag := s.Base().Tag(sh)
		if err := s.Client().HIncrBy(ctx, tag+":webhooks:backlog", ep, n).Err(); err != nil {
			t.Fatal(err)
		}
		if err := s.Client().Del(ctx, tag+":webhooks:recount").Err(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestWebhooksBacklogCountGoneAstrayIsRepaired: a healthy endpoint's count
// gone astray up to the bound (driftBacklogs) on shards that never drain
// (a down endpoint's retries wait there) is recounted from the deliveries
// and retries once the recount's pause ends, and the endpoint's next event
// reaches it. The count was repaired only when a shard's deliveries and
// retries were empty at once: the healthy endpoint's every event went to
// the dead letters, untried, for as long as the other one was down.
func TestWebhooksBacklogCountGoneAstrayIsRepaired(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		prefix := redistest.Prefix(t)
		s := openStoreWith(t, b, func(c *store.Config) { c.Prefix = prefix; c.WebhookOutboxLen = 1000 })
		rec := &hookRecorder{down: map[string]bool{"down": true}}
		clock := &fakeClock{t: time.Unix(1_800_000_000, 0)} // still: the retries never come due
		const bound = 10                                    // above a round's fan-out: 2 rooms' events
		d, err := webhooks.New(s.Base(), webhooks.Config{Consumer: "i1", Send: rec.send, Now: clock.Now,
			MaxDeliveries: 100, MaxBacklog: bound, RecountEvery: time.Hour,
			Endpoints: []webhooks.Endpoint{{ID: "down", Events: []string{"*"}}, {ID: "good", Events: []string{"*"}}}})
		if err != nil {
			t.Fatal(err)
		}
		for range 2 { // the down endpoint's retries on a shard or two
			roomEvents(t, s)
		}
		drain(t, d)
		checkBacklogCounts(t, s, prefix)
		driftBacklogs(t, s, prefix, "good", bound)
		if _, err := d.Step(context.Background()); err != nil { // the recount
			t.Fatal(err)
		}
		checkBacklogCounts(t, s, prefix)
		before := len(rec.of("good"))
		roomEvents(t, s)
		drain(t, d)
		if got := len(rec.of("good")) - before; got != len(wantRoomEvents) {
			t.Fatalf("the healthy endpoint got %d of %d events after its count went astray (dead letters: %d)",
				got, len(wantRoomEvents), len(deadOf(t, s, "good")))
		}
		if n := len(deadOf(t, s, "good")); n != 0 {
			t.Fatalf("%d of the healthy endpoint's events in the dead letters", n)
		}
		checkBacklogCounts(t, s, prefix)
	})
}

// TestWebhooksBacklogRecountWalksWhileDeliveriesMove: a recount walks a
// shard's deliveries two a step (RecountStep) while, between its steps,
// deliveries it walked are settled, fail into the retries or go to the
// dead letters, deliveries it has not walked yet are settled, and new ones
// are added; the counts it leaves are what the deliveries and retries
// hold, the drift it started from gone. A delivery the walk had counted
// and a settle or a failed try then removed was counted still.
func TestWebhooksBacklogRecountWalksWhileDeliveriesMove(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		prefix := redistest.Prefix(t)
		s := openStoreWith(t, b, func(c *store.Config) { c.Prefix = prefix; c.WebhookOutboxLen = 1000 })
		d, err := webhooks.New(s.Base(), webhooks.Config{Consumer: "i1", Send: (&hookRecorder{}).send,
			MaxAttempts: 3, RecountEvery: time.Hour, RecountStep: 2})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		c := s.Client()
		tag := s.Base().Tag(0)
		dels, backlog := tag+":webhooks:deliveries", tag+":webhooks:backlog"
		if err := c.XGroupCreateMkStream(ctx, dels, "wh", "0").Err(); err != nil {
			t.Fatal(err)
		}
		add := func(ep string, tries int) string { // a delivery as the fan-out (or the due move) adds it
			t.Helper()
			id, err := c.XAdd(ctx, &redis.XAddArgs{Stream: dels, Values: []any{"e", ep, "m", "msg_0_" + ep, "t", "x", "d", "{}", "n", tries}}).Result()
			if err != nil {
				t.Fatal(err)
			}
			if err := c.HIncrBy(ctx, backlog, ep, 1).Err(); err != nil {
				t.Fatal(err)
			}
			return id
		}
		step := func() {
			t.Helper()
			if err := d.RecountStep(ctx, 0); err != nil {
				t.Fatal(err)
			}
		}
		fail := func(id, want string) {
			t.Helper()
			if out, err := d.Fail(ctx, 0, id, 1); err != nil || out != want {
				t.Fatalf("fail %s: %q, %v; want %q", id, out, err, want)
			}
		}
		e1, e2, e3, _, e5, _ := add("a", 0), add("a", 0), add("b", 2), add("b", 0), add("a", 0), add("b", 0)
		if err := c.HIncrBy(ctx, backlog, "a", 7).Err(); err != nil { // gone astray
			t.Fatal(err)
		}
		step() // walks e1, e2
		if err := d.Settle(ctx, 0, e1); err != nil {
			t.Fatal(err)
		}
		fail(e2, "retry")
		if err := d.Settle(ctx, 0, e5); err != nil { // not walked yet
			t.Fatal(err)
		}
		add("a", 0)
		step() // walks e3, e4
		fail(e3, "dead")
		step() // walks e6, e7
		add("b", 0)
		step() // walks e8, reaches the end
		checkBacklogCounts(t, s, prefix)
		if got := c.HGetAll(ctx, backlog).Val(); fmt.Sprint(got) != "map[a:2 b:3]" {
			t.Fatalf("recounted %v, want a: the retry and the one added, b: e4, e6 and the one added", got)
		}
	})
}

// TestWebhooksEveryEndpointAtItsBoundWaitsInTheOutbox: the only endpoint
// is down and at its bound (3, MaxDeliveries 100) in its shard: the
// events that come next wait in the outbox, not in the dead letters
// (refusing them would let no endpoint's events through), and the lag
// says so; once it answers they are delivered, none refused. They went
// to the dead letters: the deliveries stream, its failed tries waiting
// in the retries, was never MaxDeliveries long, the one case where the
// outbox held them.
func TestWebhooksEveryEndpointAtItsBoundWaitsInTheOutbox(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		prefix := redistest.Prefix(t)
		s := openStoreWith(t, b, func(c *store.Config) { c.Prefix = prefix; c.WebhookOutboxLen = 1000 })
		rec := &hookRecorder{down: map[string]bool{"down": true}}
		clock := &fakeClock{t: time.Unix(1_800_000_000, 0)}
		outcomes := &outcomeRecorder{}
		const bound = 3
		d, err := webhooks.New(s.Base(), webhooks.Config{Consumer: "i1", Send: rec.send, Now: clock.Now,
			MaxDeliveries: 100, MaxBacklog: bound, Metrics: outcomes,
			Endpoints: []webhooks.Endpoint{{ID: "down", Events: []string{"room_closed"}}}})
		if err != nil {
			t.Fatal(err)
		}
		nr := newRoom() // one shard
		for range bound {
			roomEventsOf(t, s, nr)
			drain(t, d)
		}
		if n := len(held(t, s, prefix, "down")); n != bound {
			t.Fatalf("the down endpoint holds %d, want its bound %d", n, bound)
		}
		for range 2 {
			roomEventsOf(t, s, nr)
		}
		drain(t, d)
		if n := len(deadOf(t, s, "down")); n != 0 {
			t.Fatalf("%d events in the dead letters while the only endpoint is at its bound, want them in the outbox", n)
		}
		if outbox, _, _, _ := webhookKeys(t, s, prefix, 8); outbox != int64(2*len(wantRoomEvents)) {
			t.Fatalf("outbox holds %d, want the 2 rooms' events past the bound", outbox)
		}
		if lag := outcomes.lastLag(); lag <= 0 {
			t.Fatalf("lag %v while events wait in the outbox", lag)
		}
		rec.setDown("down", false)
		clock.Add(time.Hour) // its retries come due
		for range 5 {
			drain(t, d)
		}
		if got := messageIDs(rec.of("down")); len(got) != bound+2 {
			t.Fatalf("delivered %d distinct events, want %d", len(got), bound+2)
		}
		outbox, dels, retries, deadN := webhookKeys(t, s, prefix, 8)
		if outbox+dels+retries+deadN != 0 {
			t.Fatalf("left behind: outbox %d, deliveries %d, retries %d, dead %d", outbox, dels, retries, deadN)
		}
		checkBacklogCounts(t, s, prefix)
	})
}

// TestWebhooksReplayKeepsTheBound: a dead letter of an endpoint still
// down and at its bound (3) in the letter's shard is not replayed:
// ErrBacklogFull, the letter still listed as it was, the endpoint still
// holding its bound, the counts unchanged; nor while the shard's
// deliveries stream is at its own bound (MaxDeliveries 4: 2 and 2 of two
// other endpoints), though one whose deliveries are all of an endpoint at
// its bound (3 of the 4) leaves room, as for the fan-out. Once the
// endpoint has caught up the replay goes through and the letter is
// delivered. A replay was never refused: the endpoint went one past its
// bound with each.
func TestWebhooksReplayKeepsTheBound(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		prefix := redistest.Prefix(t)
		s := openStoreWith(t, b, func(c *store.Config) { c.Prefix = prefix; c.WebhookOutboxLen = 1000 })
		rec := &hookRecorder{down: map[string]bool{"flaky": true}}
		clock := &fakeClock{t: time.Unix(1_800_000_000, 0)}
		const bound = 3
		cfg := webhooks.Config{Consumer: "i1", Send: rec.send, Now: clock.Now, MaxDeliveries: 100, MaxBacklog: bound,
			Endpoints: []webhooks.Endpoint{{ID: "flaky", Events: []string{"room_closed"}}, {ID: "good", Events: []string{"room_closed"}}}}
		d, err := webhooks.New(s.Base(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		nr := newRoom() // one shard
		for range bound + 1 {
			roomEventsOf(t, s, nr)
			drain(t, d)
		}
		letters := deadOf(t, s, "flaky")
		if len(letters) != 1 {
			t.Fatalf("dead letters %+v, want the one refused past the bound", letters)
		}
		ctx := context.Background()
		q := webhooks.NewDeadLetters(s.Base(), cfg)
		err = q.ReplayDeadLetter(ctx, letters[0].ID)
		shard, _, _ := strings.Cut(letters[0].ID, ".")
		want := fmt.Sprintf(`endpoint "flaky" has 3 deliveries pending or retrying in shard %s, its bound REALSYNC_WEBHOOK_MAX_BACKLOG (3): replay dead letter %s once it has caught up`, shard, letters[0].ID)
		if !errors.Is(err, deadletter.ErrBacklogFull) || !strings.HasPrefix(err.Error(), want) {
			t.Fatalf("replay of a letter of an endpoint at its bound: %v, want ErrBacklogFull saying %q", err, want)
		}
		if after := deadOf(t, s, "flaky"); fmt.Sprint(after) != fmt.Sprint(letters) {
			t.Fatalf("a refused replay changed the dead letters: %+v, was %+v", after, letters)
		}
		if n := len(held(t, s, prefix, "flaky")); n != bound {
			t.Fatalf("after a refused replay the endpoint holds %d, want its bound %d", n, bound)
		}
		checkBacklogCounts(t, s, prefix)

		rec.setDown("flaky", false)
		clock.Add(time.Hour) // its retries come due
		drain(t, d)
		if n := len(held(t, s, prefix, "flaky")); n != 0 {
			t.Fatalf("recovered: %d still held", n)
		}
		// the letter's shard's deliveries stream at its bound (4)
		n, _ := strconv.Atoi(shard)
		tag := s.Base().Tag(n)
		c := s.Client()
		var added []string
		add := func(ep string) {
			t.Helper()
			id, err := c.XAdd(ctx, &redis.XAddArgs{Stream: tag + ":webhooks:deliveries",
				Values: []any{"e", ep, "m", "msg_x", "t", "x", "d", "{}", "n", 0}}).Result()
			if err != nil {
				t.Fatal(err)
			}
			if err := c.HIncrBy(ctx, tag+":webhooks:backlog", ep, 1).Err(); err != nil {
				t.Fatal(err)
			}
			added = append(added, id)
		}
		for _, ep := range []string{"p", "p", "q", "q"} {
			add(ep)
		}
		small := webhooks.NewDeadLetters(s.Base(), webhooks.Config{MaxDeliveries: 4, MaxBacklog: bound})
		err = small.ReplayDeadLetter(ctx, letters[0].ID)
		want = fmt.Sprintf(`shard %s's deliveries stream holds 4 deliveries of endpoints under their backlog bound, its bound (4): replay dead letter %s once they have been sent`, shard, letters[0].ID)
		if !errors.Is(err, deadletter.ErrBacklogFull) || !strings.HasPrefix(err.Error(), want) {
			t.Fatalf("replay into a full deliveries stream: %v, want ErrBacklogFull saying %q", err, want)
		}
		if after := deadOf(t, s, "flaky"); fmt.Sprint(after) != fmt.Sprint(letters) {
			t.Fatalf("a refused replay changed the dead letters: %+v, was %+v", after, letters)
		}
		checkBacklogCounts(t, s, prefix)
		// q's 2 become p's: p at its bound (3 of the 4) does not count
		if err := c.XDel(ctx, tag+":webhooks:deliveries", added[3]).Err(); err != nil {
			t.Fatal(err)
		}
		if err := c.HIncrBy(ctx, tag+":webhooks:backlog", "q", -1).Err(); err != nil {
			t.Fatal(err)
		}
		add("p")
		checkBacklogCounts(t, s, prefix)
		if err := small.ReplayDeadLetter(ctx, letters[0].ID); err != nil {
			t.Fatalf("replay while the stream's other deliveries are of an endpoint at its bound: %v", err)
		}
		if n := len(deadOf(t, s, "flaky")); n != 0 {
			t.Fatalf("replayed, %d dead letters left", n)
		}
		checkBacklogCounts(t, s, prefix)
		if err := c.XDel(ctx, tag+":webhooks:deliveries", added[0], added[1], added[2], added[4]).Err(); err != nil {
			t.Fatal(err)
		}
		if err := c.HDel(ctx, tag+":webhooks:backlog", "p", "q").Err(); err != nil {
			t.Fatal(err)
		}
		drain(t, d)
		if got := messageIDs(rec.of("flaky")); !got[letters[0].MessageID] {
			t.Fatalf("the replayed %s never delivered", letters[0].MessageID)
		}
		checkBacklogCounts(t, s, prefix)
	})
}

// TestWebhooksBacklogGauge: every BacklogEvery (here every round) the
// dispatcher reports each endpoint in force's backlog in its fullest
// shard, what the fan-out compares with the bound: the down endpoint's 3
// in its rooms' shard, 0 for the healthy one (it had a count a moment in
// each shard); a larger count in another shard is reported instead, a
// smaller one is not; an endpoint removed from the file is no longer
// reported, one added is at 0 (WebhookEndpoints names the endpoints at
// New and at each SetEndpoints). Before, no backlog was reported: an
// operator learnt of a dying receiver at its first refusal.
func TestWebhooksBacklogGauge(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		prefix := redistest.Prefix(t)
		s := openStoreWith(t, b, func(c *store.Config) { c.Prefix = prefix; c.WebhookOutboxLen = 1000 })
		rec := &hookRecorder{down: map[string]bool{"down": true}}
		clock := &fakeClock{t: time.Unix(1_800_000_000, 0)} // still: the retries never come due
		m := &outcomeRecorder{}
		d, err := webhooks.New(s.Base(), webhooks.Config{Consumer: "i1", Send: rec.send, Now: clock.Now,
			MaxDeliveries: 100, MaxBacklog: 10, Metrics: m, BacklogEvery: time.Nanosecond,
			Endpoints: []webhooks.Endpoint{{ID: "down", Events: []string{"room_closed"}}, {ID: "good", Events: []string{"room_closed"}}}})
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(m.eps); got != "[down good]" {
			t.Fatalf("WebhookEndpoints at New: %s", got)
		}
		nr := newRoom() // one shard
		for range 3 {
			roomEventsOf(t, s, nr)
		}
		drain(t, d)
		if got := m.lastBacklog(); got != "map[down:3 good:0]" {
			t.Fatalf("backlogs %s, want down 3 (its shard's), good 0", got)
		}
		// the counts of another shard: larger, then smaller
		l := held(t, s, prefix, "down")
		if len(l) != 3 {
			t.Fatalf("the down endpoint holds %v", l)
		}
		var shard int
		if _, err := fmt.Sscanf(l[0], "msg_%d_", &shard); err != nil { // msg_<shard>_<outbox id>
			t.Fatal(err)
		}
		other := s.Base().Tag((shard+1)%8) + ":webhooks:backlog"
		ctx := context.Background()
		if err := s.Client().HSet(ctx, other, "down", 7, "gone", 9).Err(); err != nil {
			t.Fatal(err)
		}
		if _, err := d.Step(ctx); err != nil {
			t.Fatal(err)
		}
		if got := m.lastBacklog(); got != "map[down:7 good:0]" {
			t.Fatalf("backlogs %s, want down 7 (the fullest shard's), good 0, no endpoint out of the file", got)
		}
		if err := s.Client().HSet(ctx, other, "down", 2).Err(); err != nil {
			t.Fatal(err)
		}
		if _, err := d.Step(ctx); err != nil {
			t.Fatal(err)
		}
		if got := m.lastBacklog(); got != "map[down:3 good:0]" {
			t.Fatalf("backlogs %s, want down 3 (its fullest shard's)", got)
		}
		if err := s.Client().Del(ctx, other).Err(); err != nil {
			t.Fatal(err)
		}
		d.SetEndpoints([]webhooks.Endpoint{{ID: "down", Events: []string{"room_closed"}}, {ID: "new", Events: []string{"room_closed"}}})
		if got := fmt.Sprint(m.eps); got != "[down new]" {
			t.Fatalf("WebhookEndpoints at SetEndpoints: %s", got)
		}
		if _, err := d.Step(ctx); err != nil {
			t.Fatal(err)
		}
		if got := m.lastBacklog(); got != "map[down:3 new:0]" {
			t.Fatalf("backlogs %s after a reload, want down 3, new 0, good gone", got)
		}
		checkBacklogCounts(t, s, prefix)
	})
}

// TestWebhooksBacklogDriftThatAddsUpIsRepaired: in the shard where a down
// endpoint holds its bound (10), its count goes astray by -10 and a
// healthy endpoint's by +10: the counts still add up to the deliveries
// and retries held, so a recount takes them as right, and the healthy
// endpoint's events are refused. Every RecountWalkEvery-th recount (3)
// walks anyway: the third repairs the counts, and the healthy endpoint's
// next events reach it. The count of recounts that added up has an
// expiry, and is gone after the walk. Before, the counts were never
// walked while they added up: the healthy endpoint was refused for as
// long as the other one was down.
func TestWebhooksBacklogDriftThatAddsUpIsRepaired(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		prefix := redistest.Prefix(t)
		s := openStoreWith(t, b, func(c *store.Config) { c.Prefix = prefix; c.WebhookOutboxLen = 1000 })
		rec := &hookRecorder{down: map[string]bool{"down": true}}
		clock := &fakeClock{t: time.Unix(1_800_000_000, 0)} // still: the retries never come due
		const bound = 10
		d, err := webhooks.New(s.Base(), webhooks.Config{Consumer: "i1", Send: rec.send, Now: clock.Now,
			MaxDeliveries: 100, MaxBacklog: bound, RecountEvery: time.Hour, RecountWalkEvery: 3,
			Endpoints: []webhooks.Endpoint{{ID: "down", Events: []string{"*"}}, {ID: "good", Events: []string{"*"}}}})
		if err != nil {
			t.Fatal(err)
		}
		nr := newRoom() // one shard
		for range 3 {   // more than the bound's worth
			roomEventsOf(t, s, nr)
			drain(t, d) // the shard's first recount: the counts add up
		}
		l := held(t, s, prefix, "down")
		if len(l) != bound {
			t.Fatalf("the down endpoint holds %d, want its bound %d", len(l), bound)
		}
		var shard int
		if _, err := fmt.Sscanf(l[0], "msg_%d_", &shard); err != nil { // msg_<shard>_<outbox id>
			t.Fatal(err)
		}
		tag := s.Base().Tag(shard)
		ctx := context.Background()
		c := s.Client()
		if err := c.HIncrBy(ctx, tag+":webhooks:backlog", "down", -bound).Err(); err != nil {
			t.Fatal(err)
		}
		if err := c.HIncrBy(ctx, tag+":webhooks:backlog", "good", bound).Err(); err != nil {
			t.Fatal(err)
		}
		recount := func() { // the pause over, a recount
			t.Helper()
			if err := c.Del(ctx, tag+":webhooks:recount").Err(); err != nil {
				t.Fatal(err)
			}
			if err := d.RecountStep(ctx, shard); err != nil {
				t.Fatal(err)
			}
		}
		recount() // the second: the counts add up, no walk
		if ttl := c.PTTL(ctx, tag+":webhooks:recount:checks").Val(); ttl <= 0 {
			t.Fatalf("the recounts' count has no expiry (%v)", ttl)
		}
		before := len(rec.of("good"))
		roomEventsOf(t, s, nr)
		drain(t, d)
		if got := len(rec.of("good")) - before; got != 0 {
			t.Fatalf("the healthy endpoint got %d events while its count was at the bound, want them refused (as set up)", got)
		}
		recount() // the third: walks
		checkBacklogCounts(t, s, prefix)
		if n := c.Exists(ctx, tag+":webhooks:recount:checks").Val(); n != 0 {
			t.Fatal("the recounts' count left after the walk")
		}
		before = len(rec.of("good"))
		roomEventsOf(t, s, nr)
		drain(t, d)
		if got := len(rec.of("good")) - before; got != len(wantRoomEvents) {
			t.Fatalf("the healthy endpoint got %d of %d events after the walk", got, len(wantRoomEvents))
		}
		checkBacklogCounts(t, s, prefix)
	})
}

// TestWebhooksReplayOfARemovedEndpointsLetter: once the endpoints file no
// longer names an endpoint (SetEndpoints), a replay of one of its dead
// letters is ErrEndpointRemoved naming it, and the letter stays as it
// was, its last error kept; a letter of an endpoint still in the file is
// replayed, and the removed endpoint's once it is back in the file.
// Before, the letter went back into the deliveries, held a place in the
// shard's deliveries for its every try (each "no longer configured") and
// came back to the dead letters with its own error lost.
func TestWebhooksReplayOfARemovedEndpointsLetter(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		prefix := redistest.Prefix(t)
		s := openStoreWith(t, b, func(c *store.Config) { c.Prefix = prefix; c.WebhookOutboxLen = 1000 })
		rec := &hookRecorder{down: map[string]bool{"gone": true, "kept": true}}
		both := []webhooks.Endpoint{{ID: "gone", Events: []string{"room_closed"}}, {ID: "kept", Events: []string{"room_closed"}}}
		cfg := webhooks.Config{Consumer: "i1", Send: rec.send, MaxAttempts: 1, Endpoints: both}
		d, err := webhooks.New(s.Base(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		roomEventsOf(t, s, newRoom())
		drain(t, d)
		gone, kept := deadOf(t, s, "gone"), deadOf(t, s, "kept")
		if len(gone) != 1 || len(kept) != 1 {
			t.Fatalf("dead letters: gone %+v, kept %+v, want one each", gone, kept)
		}
		rec.setDown("gone", false)
		rec.setDown("kept", false)
		q := webhooks.NewDeadLetters(s.Base(), cfg)
		q.SetEndpoints([]string{"kept"}) // the file reloaded without gone
		d.SetEndpoints(both[1:])
		ctx := context.Background()
		err = q.ReplayDeadLetter(ctx, gone[0].ID)
		want := fmt.Sprintf(`endpoint "gone" of dead letter %s is not in the endpoints file: its tries would all fail ("no longer configured"); add the endpoint back to replay it`, gone[0].ID)
		if !errors.Is(err, deadletter.ErrEndpointRemoved) || !strings.HasPrefix(err.Error(), want) {
			t.Fatalf("replay of a removed endpoint's letter: %v, want ErrEndpointRemoved saying %q", err, want)
		}
		if after := deadOf(t, s, "gone"); fmt.Sprint(after) != fmt.Sprint(gone) {
			t.Fatalf("a refused replay changed the dead letters: %+v, was %+v", after, gone)
		}
		checkBacklogCounts(t, s, prefix)
		if err := q.ReplayDeadLetter(ctx, kept[0].ID); err != nil {
			t.Fatalf("replay of a letter of an endpoint in the file: %v", err)
		}
		q.SetEndpoints([]string{"kept", "gone"}) // back in the file
		d.SetEndpoints(both)
		if err := q.ReplayDeadLetter(ctx, gone[0].ID); err != nil {
			t.Fatalf("replay of a letter of an endpoint back in the file: %v", err)
		}
		drain(t, d)
		for ep, l := range map[string][]deadletter.Letter{"gone": gone, "kept": kept} {
			if got := messageIDs(rec.of(ep)); !got[l[0].MessageID] {
				t.Fatalf("the replayed %s never delivered to %s", l[0].MessageID, ep)
			}
		}
		checkBacklogCounts(t, s, prefix)
	})
}

// TestWebhooksDeadLettersBoundedByBytes: an endpoint down leaves a dead
// letter of each event, by either path: its tries failed (MaxAttempts 1),
// or its backlog was full (MaxBacklog 1, its one delivery waiting for a
// retry that never comes due: the fan-out refuses the rest untried).
// Those of large events (state patches of 8 KiB) are bounded by
// DeadMaxBytes as well as by their count, the newest kept, so that a
// player's patches cannot fill Redis while an endpoint is down; small
// events' letters (a room's joins and leaves) are bounded by count alone.
func TestWebhooksDeadLettersBoundedByBytes(t *testing.T) {
	const budget, patch = 64 << 10, 8 << 10
	for _, path := range []struct {
		name     string
		cfg      webhooks.Config
		attempts int
	}{
		{"failed", webhooks.Config{MaxAttempts: 1}, 1},
		{"refused", webhooks.Config{MaxBacklog: 1, MaxDeliveries: 100, Now: (&fakeClock{t: time.Now()}).Now}, 0},
	} {
		t.Run(path.name, func(t *testing.T) {
			redistest.Each(t, func(t *testing.T, b redistest.Backend) {
				prefix := redistest.Prefix(t)
				s := openStoreWith(t, b, func(c *store.Config) { c.Prefix = prefix; c.WebhookOutboxLen = 1000 })
				rec := &hookRecorder{down: map[string]bool{"down": true}}
				cfg := path.cfg
				cfg.Consumer, cfg.Send, cfg.DeadMaxBytes = "i1", rec.send, budget
				cfg.Endpoints = []webhooks.Endpoint{{ID: "down", Events: []string{"*"}}, {ID: "good", Events: []string{"*"}}} // refusing the one full lets the other's through
				d, err := webhooks.New(s.Base(), cfg)
				if err != nil {
					t.Fatal(err)
				}
				ctx := context.Background()
				roomEvents(t, s) // a few small letters first, kept by count
				drain(t, d)
				if small := len(deadOf(t, s, "down")); small < 2 {
					t.Fatalf("%d dead letters of the room's joins and leaves, want each but a backlog's", small)
				}
				j, err := s.Create(ctx, alice, newRoom())
				if err != nil {
					t.Fatal(err)
				}
				big := strings.Repeat("x", patch)
				const patches = 30
				for i := range patches {
					p := rooms.StatePatch{Set: rooms.State{"k": json.RawMessage(strconv.Quote(big + strconv.Itoa(i)))}, IfMatch: rooms.NoIfMatch}
					if _, err := s.PatchState(ctx, alice, j.Room.ID, p); err != nil {
						t.Fatal(err)
					}
					drain(t, d)
				}
				var letters []deadletter.Letter // the patched room's (the first may be on another shard)
				bytes := 0
				for _, l := range deadOf(t, s, "down") {
					bytes += len(l.Event) // every shard's: each holds at most the budget
					if strings.Contains(string(l.Event), `"roomId":"`+j.Room.ID+`"`) {
						letters = append(letters, l)
					}
				}
				if len(letters) == 0 || bytes > 2*budget {
					t.Fatalf("%d dead letters of the patched room, %d bytes of letters, after %d patches of %d bytes, want at most %d bytes a shard",
						len(letters), bytes, patches, patch, budget)
				}
				last := letters[len(letters)-1]
				if !strings.Contains(string(last.Event), big+strconv.Itoa(patches-1)) || last.Attempts != path.attempts {
					t.Fatalf("the newest dead letter is not the last patch's after %d tries: %d tries, %.80s", path.attempts, last.Attempts, last.Event)
				}
			})
		})
	}
}
