package webhooks_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/store"
	"github.com/realsync/realsync/store/webhooks"
)

// BenchmarkDispatch: deliveries a second of one instance's dispatcher
// draining a backlog of room events (each room's 4) to one endpoint that
// answers at once, on a standalone Redis: what the dispatcher itself
// costs, the receiver's time aside. Its rounds are Step's (each waits for
// its sends); BenchmarkDispatchRun's, Run's, as realsyncd runs it.
func BenchmarkDispatch(b *testing.B) {
	benchDispatch(b, func(ctx context.Context, d *webhooks.Dispatcher, done func() bool) {
		for !done() {
			if _, err := d.Step(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkDispatchRun is BenchmarkDispatch with Run dispatching, started
// once each iteration's backlog is written and stopped once it is sent.
func BenchmarkDispatchRun(b *testing.B) {
	benchDispatch(b, func(ctx context.Context, d *webhooks.Dispatcher, done func() bool) {
		ctx, cancel := context.WithCancel(ctx)
		ran := make(chan struct{})
		go func() { defer close(ran); d.Run(ctx, func(err error) { b.Error(err) }) }()
		for !done() {
			time.Sleep(100 * time.Microsecond)
		}
		cancel()
		<-ran
	})
}

// benchDispatch measures dispatch draining each iteration's backlog until
// done.
func benchDispatch(b *testing.B, dispatch func(ctx context.Context, d *webhooks.Dispatcher, done func() bool)) {
	s := openStoreWith(b, redistest.Backend{Name: "standalone", URL: redistest.StandaloneURL(b)},
		func(c *store.Config) { c.WebhookOutboxLen = 100_000 })
	var sent atomic.Int64
	d, err := webhooks.New(s.Base(), webhooks.Config{Consumer: "i1", Endpoints: []webhooks.Endpoint{{ID: "e", Events: []string{"*"}}},
		Send: func(context.Context, webhooks.Delivery) error { sent.Add(1); return nil }})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	const rooms = 500 // 2 000 events
	var elapsed time.Duration
	for b.Loop() {
		b.StopTimer()
		for range rooms {
			j, err := s.Create(ctx, alice, newRoom())
			if err != nil {
				b.Fatal(err)
			}
			if _, err := s.Join(ctx, bob, j.Room.ID); err != nil {
				b.Fatal(err)
			}
			if err := s.Leave(ctx, bob, j.Room.ID); err != nil {
				b.Fatal(err)
			}
			if err := s.Delete(ctx, alice, j.Room.ID); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
		start, want := time.Now(), sent.Load()+4*rooms
		dispatch(ctx, d, func() bool { return sent.Load() >= want })
		elapsed += time.Since(start)
	}
	b.ReportMetric(float64(sent.Load())/elapsed.Seconds(), "deliveries/s")
}
