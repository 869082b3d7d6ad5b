package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// OpenLoop is what an open-loop run (-arrival-rate) offered and what came
// of it. Requests start on a fixed schedule whatever the answers, as
// players do at a launch, so a slow server is met by more requests, not
// fewer (a closed loop's clients wait for their answers and slow down
// with it). Latencies count from each request's scheduled start, the
// wait for a free generator slot included (no coordinated omission).
type OpenLoop struct {
	// PerSecond is the arrival rate asked; Offered the requests scheduled
	// over -duration (PerSecond × seconds).
	PerSecond int `json:"perSecond"`
	Offered   int `json:"offered"`
	// Skipped were scheduled while -max-outstanding requests were in
	// flight already: the generator's bound, not the server's answer.
	Skipped int `json:"skipped"`
	// Unanswered were still in flight when the drain (-drain) ended.
	Unanswered int `json:"unanswered"`
	// Good are steps whose first request was answered without error within
	// GoodWithinms of its scheduled start; GoodPerSecond is Good over
	// -duration.
	Good          int     `json:"good"`
	GoodWithinms  float64 `json:"goodWithinms"`
	GoodPerSecond float64 `json:"goodPerSecond"`
	// PeakOutstanding is the most requests in flight at once.
	PeakOutstanding int `json:"peakOutstanding"`
}

// runOpen starts one step of the mix every 1/c.ArrivalRate s for
// c.Duration, each on the next client (round-robin), at most
// c.MaxOutstanding at once; then waits up to c.Drain for the steps in
// flight, which ctx then cuts. Steps of one client may overlap.
func runOpen(ctx context.Context, c Config, clients []*opsClient, ops []string, pool []*room, rec *recorder) *OpenLoop {
	ol := &OpenLoop{PerSecond: c.ArrivalRate, GoodWithinms: ms(c.GoodWithin)}
	reqCtx, cancel := context.WithTimeout(ctx, c.Duration+c.Drain)
	defer cancel()
	var inFlight, peak atomic.Int64
	var good atomic.Int64
	var wg sync.WaitGroup
	interval := time.Second / time.Duration(c.ArrivalRate)
	pick := rand.New(rand.NewPCG(uint64(c.ArrivalRate), 3))
	start := time.Now()
	for i := 0; ; i++ {
		sched := start.Add(time.Duration(i) * interval)
		if sched.Sub(start) >= c.Duration {
			break
		}
		if d := time.Until(sched); d > 0 {
			select {
			case <-time.After(d):
			case <-ctx.Done():
				return ol
			}
		}
		ol.Offered++
		if inFlight.Load() >= int64(c.MaxOutstanding) {
			ol.Skipped++
			continue
		}
		n := inFlight.Add(1)
		if n > peak.Load() {
			peak.Store(n) // only this goroutine raises it
		}
		cl, op := clients[i%len(clients)], ops[pick.IntN(len(ops))]
		rng := rand.New(rand.NewPCG(uint64(i), 4))
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer inFlight.Add(-1)
			if ok, took := cl.step(reqCtx, op, pool, rec, sched, rng); ok && took <= c.GoodWithin {
				good.Add(1)
			}
		}()
	}
	wg.Wait()
	ol.Unanswered = int(rec.cut.Load())
	ol.Good, ol.PeakOutstanding = int(good.Load()), int(peak.Load())
	ol.GoodPerSecond = float64(ol.Good) / c.Duration.Seconds()
	return ol
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func (o *OpenLoop) print(w io.Writer) {
	fmt.Fprintf(w, "  open loop  %d/s offered (%d), %d skipped at the generator's bound, %d unanswered after the drain; peak in flight %d; good (no error within %.0f ms of its schedule) %d, %.0f/s\n",
		o.PerSecond, o.Offered, o.Skipped, o.Unanswered, o.PeakOutstanding, o.GoodWithinms, o.Good, o.GoodPerSecond)
}
