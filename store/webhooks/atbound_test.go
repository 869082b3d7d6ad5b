package webhooks_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/store"
	"github.com/realsync/realsync/store/webhooks"
)

// TestWebhooksEventsPastTheBoundWaitOrAreRefused: the rooms of one shard
// make more events at once (6 rooms, 24 events) than an endpoint's
// backlog may hold (MaxBacklog 5; MaxDeliveries 100), one round reading
// them all, while the endpoint "down" fails every try. An event whose
// every wanting endpoint is at its bound, and every other endpoint in
// force too, waits in the outbox: with "down" alone nothing is refused
// (on one instance or two taking turns), and once it answers every event
// reaches it, each fanned out once. Beside an endpoint that has room,
// "down" is refused past its bound (the dead letters, untried) and the
// other gets every event it wants: one wanting them all (at its bound
// too within the first round, its events wait for its sends, none
// refused), or one wanting none of "down"'s, its events made after
// "down" reached its bound (holding "down"'s would hold its own behind
// them, for as long as "down" is down).
//
// Until this test, the round that took "down" to its bound refused the
// rest of its fan-out (19 of the 24 events, its only endpoint at its
// bound; the healthy endpoint beside it lost as many), and each round
// after its backlog fell below the bound refused what it read past it (a
// tester's find: 262 of 1 300 events dead-lettered).
func TestWebhooksEventsPastTheBoundWaitOrAreRefused(t *testing.T) {
	const bound = 5
	all := []string{"*"}
	cases := []struct {
		name string
		// endpoints in force: "down" fails every try until it recovers,
		// any other answers
		endpoints []webhooks.Endpoint
		// instances fanning out the shard, each stepped in turn
		instances int
		// rooms made (4 events each), at once or each fanned out before
		// the next
		rooms    int
		oneByOne bool
		// the events of "down" refused past its bound (the dead letters);
		// the rest reach it once it answers
		refused int
	}{
		{"OnlyEndpointDownWaitsNoneRefused", []webhooks.Endpoint{{ID: "down", Events: all}}, 1, 6, false, 0},
		{"TwoInstancesFanOutEachEventOnceNoneRefused", []webhooks.Endpoint{{ID: "down", Events: all}}, 2, 6, false, 0},
		{"HealthyOtherGetsAllDownRefusedPastItsBound", []webhooks.Endpoint{{ID: "down", Events: all}, {ID: "good", Events: all}},
			1, 6, false, 6*len(wantRoomEvents) - bound},
		{"OtherWantingNoneOfItsEventsIsNotHeldDownRefused", []webhooks.Endpoint{{ID: "down", Events: []string{"room_closed"}},
			{ID: "good", Events: []string{"player_joined", "player_left"}}}, 1, 8, true, 8 - bound},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			redistest.Each(t, func(t *testing.T, b redistest.Backend) {
				prefix := redistest.Prefix(t)
				s := openStoreWith(t, b, func(c *store.Config) { c.Prefix = prefix; c.WebhookOutboxLen = 1000 })
				rec := &hookRecorder{down: map[string]bool{"down": true}}
				clock := &fakeClock{t: time.Unix(1_800_000_000, 0)}
				outcomes := &outcomeRecorder{}
				var ds []*webhooks.Dispatcher
				for i := range tc.instances {
					d, err := webhooks.New(s.Base(), webhooks.Config{Consumer: fmt.Sprintf("i%d", i+1), Send: rec.send,
						Now: clock.Now, MaxAttempts: 100, MaxDeliveries: 100, MaxBacklog: bound, Metrics: outcomes,
						Endpoints: tc.endpoints})
					if err != nil {
						t.Fatal(err)
					}
					ds = append(ds, d)
				}
				wanted := map[string]int{} // events each endpoint wants
				for _, ep := range tc.endpoints {
					for _, e := range wantRoomEvents {
						if slices.Contains(ep.Events, "*") || slices.Contains(ep.Events, e) {
							wanted[ep.ID] += tc.rooms
						}
					}
				}
				steps := func() {
					for range 3 {
						for _, d := range ds {
							drain(t, d)
						}
					}
				}
				nr := newRoom() // one shard
				for range tc.rooms {
					roomEventsOf(t, s, nr)
					if tc.oneByOne {
						steps()
					}
				}
				steps()
				if n := len(held(t, s, prefix, "down")); n != bound {
					t.Fatalf("the down endpoint holds %d, want its bound %d", n, bound)
				}
				checkRefused(t, s, outcomes, tc.refused)
				outbox, _, _, _ := webhookKeys(t, s, prefix, 8)
				if waiting := int64(wanted["down"] - bound - tc.refused); outbox != waiting {
					t.Fatalf("the outbox holds %d events, want the %d past the bound not refused", outbox, waiting)
				}
				if waiting := wanted["down"] - bound - tc.refused; waiting > 0 && outcomes.lastLag() <= 0 {
					t.Fatalf("lag %v while events wait in the outbox", outcomes.lastLag())
				}
				for ep, n := range wanted {
					if ep != "down" && len(messageIDs(rec.of(ep))) != n {
						t.Fatalf("%s got %d events while down was at its bound, want all %d", ep, len(messageIDs(rec.of(ep))), n)
					}
				}

				rec.setDown("down", false)
				for range 10 { // the retries come due; each round fans out what the bound has room for
					clock.Add(time.Hour)
					steps()
				}
				checkRefused(t, s, outcomes, tc.refused)
				for ep, n := range wanted {
					want := n
					if ep == "down" {
						want -= tc.refused
					}
					if got := len(messageIDs(rec.of(ep))); got != want {
						t.Fatalf("%s got %d distinct events, want %d", ep, got, want)
					}
					fanned := map[string]int{} // first tries: one per fan-out
					for _, w := range rec.of(ep) {
						if w.RetryCount == 0 {
							fanned[w.MessageID]++
						}
					}
					for m, k := range fanned {
						if k != 1 {
							t.Fatalf("%s: event %s fanned out %d times", ep, m, k)
						}
					}
				}
				outbox, dels, retries, _ := webhookKeys(t, s, prefix, 8)
				if outbox+dels+retries != 0 {
					t.Fatalf("left behind: outbox %d, deliveries %d, retries %d", outbox, dels, retries)
				}
				checkBacklogCounts(t, s, prefix)
			})
		})
	}
}

// TestWebhooksOnlyEndpointRecoversWithNothingRefused is the tester's run
// on Run's continuous rounds, two instances at once: the only endpoint
// fails every try (retried within milliseconds) and holds its bound (12,
// 3 rooms' events) when the rooms of its shard make 28 more events, which
// wait in the outbox. Once it answers, its backlog falls below the bound
// and fills again many times over while both instances fan out what
// waits: every event reaches it, none is refused, none fanned out twice.
// Each round after a dip below the bound refused what it read past it
// (the tester: 236 of 1 300 events).
func TestWebhooksOnlyEndpointRecoversWithNothingRefused(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		prefix := redistest.Prefix(t)
		s := openStoreWith(t, b, func(c *store.Config) { c.Prefix = prefix; c.WebhookOutboxLen = 1000 })
		const first, rooms = 3, 10
		const bound = first * 4
		events := rooms * len(wantRoomEvents)
		rec := &hookRecorder{down: map[string]bool{"down": true}}
		outcomes := &outcomeRecorder{}
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for i := range 2 {
			d, err := webhooks.New(s.Base(), webhooks.Config{Consumer: fmt.Sprintf("i%d", i+1), Send: rec.send,
				MaxAttempts: 1000, BackoffBase: time.Millisecond, BackoffMax: 5 * time.Millisecond, Workers: 4,
				MaxDeliveries: 100, MaxBacklog: bound, Poll: 5 * time.Millisecond, Metrics: outcomes,
				Endpoints: []webhooks.Endpoint{{ID: "down", Events: []string{"*"}}}})
			if err != nil {
				t.Fatal(err)
			}
			wg.Add(1)
			go func() { defer wg.Done(); d.Run(ctx, nil) }()
		}
		stop := func() { cancel(); wg.Wait() }
		defer stop()
		nr := newRoom()
		for range first {
			roomEventsOf(t, s, nr)
		}
		waitFor(t, "the endpoint to hold its bound", func() bool {
			outbox, _, _, dead := webhookKeys(t, s, prefix, 8)
			return len(held(t, s, prefix, "down")) == bound && outbox+dead == 0
		})
		for range rooms - first {
			roomEventsOf(t, s, nr)
		}
		tries := len(rec.of("down"))
		waitFor(t, "more failed tries, the events past the bound waiting", func() bool {
			outbox, _, _, dead := webhookKeys(t, s, prefix, 8)
			return len(rec.of("down")) > tries+3*bound && outbox+dead == int64(events-bound)
		})
		checkRefused(t, s, outcomes, 0)
		rec.setDown("down", false)
		waitFor(t, "every event delivered", func() bool {
			outbox, dels, retries, _ := webhookKeys(t, s, prefix, 8)
			return outbox+dels+retries == 0
		})
		stop()
		checkRefused(t, s, outcomes, 0)
		if got := len(messageIDs(rec.of("down"))); got != events {
			t.Fatalf("delivered %d distinct events, want %d", got, events)
		}
		fanned := map[string]int{}
		for _, w := range rec.of("down") {
			if w.RetryCount == 0 {
				fanned[w.MessageID]++
			}
		}
		for m, k := range fanned {
			if k != 1 {
				t.Fatalf("event %s fanned out %d times", m, k)
			}
		}
		checkBacklogCounts(t, s, prefix)
	})
}

// checkRefused checks that the dead letters hold want events of
// "down", each refused for its backlog, untried, and that the metric
// counted as many refusals.
func checkRefused(t *testing.T, s *store.Store, outcomes *outcomeRecorder, want int) {
	t.Helper()
	letters := deadOf(t, s, "down")
	for _, l := range letters {
		if !strings.HasPrefix(l.LastError, webhooks.ErrBacklogFull) || l.Attempts != 0 {
			t.Fatalf("dead letter %+v: want %q, 0 attempts", l, webhooks.ErrBacklogFull)
		}
	}
	refused := 0
	for _, o := range outcomes.all() {
		if o == "down/refused" {
			refused++
		}
	}
	if len(letters) != want || refused != want {
		t.Fatalf("%d dead letters of the down endpoint, %d refusals counted; want %d", len(letters), refused, want)
	}
}

// waitFor polls cond until it holds, failing the test after 30 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited 30 s for %s", what)
		}
	}
}
