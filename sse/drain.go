package sse

import (
	"context"
	"math/rand/v2"
	"time"
)

// A shutdown ends the instance's streams over Config.ShutdownSpread, not
// all at once (SSE-NOTES' graceful shutdown; NATS' lame-duck mode does
// the same with its clients): in a random order, evenly over the spread
// (the last at its end), each with the short jittered retry of any
// shutdown's end (EndShutdown), so its client resumes with Last-Event-ID
// on another instance. Ended at once, 10 000 streams came back to the
// other instances within the retry's 1.5 s, each with a stream token's
// request and an opening (a snapshot or a replay): about 6 700 openings a
// second on top of their own load; over a 10 s spread, about 1 000. A
// spread ends at least Config.ShutdownRate streams a second, so an
// instance of few streams ends them at once (50 streams: within half a
// second) rather than holding its shutdown for the whole spread. What a
// stream opened meanwhile (a request that was under way) ends with the
// rest at the spread's end.

// spreadTick is how often a shutdown's spread ends the streams due by
// then.
const spreadTick = 100 * time.Millisecond

// ender is a stream a spread ends: a taken-over one (*stream, whose end
// starts its drain) or one its goroutine serves (*held, whose end wakes
// it).
type ender interface{ end(why string) }

// spreadEnds ends the streams open now over spread, or less at
// Config.ShutdownRate (see above), in a random order; it returns once the
// last one was told to end, or when ctx ends first (the rest then end
// with the hub's close).
func (h *Hub) spreadEnds(ctx context.Context, spread time.Duration) {
	h.mu.Lock()
	all := make([]ender, 0, len(h.lines)+len(h.looped))
	for st := range h.lines {
		all = append(all, st)
	}
	for hd := range h.looped {
		all = append(all, hd)
	}
	h.mu.Unlock()
	if len(all) == 0 || ctx.Err() != nil {
		return
	}
	spread = spreadOf(len(all), spread, h.cfg.ShutdownRate)
	rand.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	h.cfg.Log.Info("sse: ending the streams over the shutdown's spread", "streams", len(all), "spread", spread.Round(time.Millisecond))
	t := time.NewTicker(spreadTick)
	defer t.Stop()
	endOver(ctx, all, spread, time.Now(), t.C)
}

// spreadOf is how long n streams take to end over spread at rate streams
// a second at least: spread, or less for fewer than spread·rate.
func spreadOf(n int, spread time.Duration, rate int) time.Duration {
	return min(spread, time.Duration(n)*time.Second/time.Duration(rate))
}

// endOver ends all in order over spread from start: at each tick, as
// many as are due by its time (due), until every one is ended or ctx
// ends.
func endOver(ctx context.Context, all []ender, spread time.Duration, start time.Time, ticks <-chan time.Time) {
	for ended := 0; ended < len(all); {
		select {
		case <-ctx.Done():
			return
		case now := <-ticks:
			for n := due(len(all), now.Sub(start), spread); ended < n; ended++ {
				all[ended].end(EndShutdown)
			}
		}
	}
}

// due is how many of n streams ending uniformly over spread have ended
// after elapsed: n·elapsed/spread, rounded down, and all of them once the
// spread is over.
func due(n int, elapsed, spread time.Duration) int {
	switch {
	case elapsed >= spread:
		return n
	case elapsed <= 0:
		return 0
	}
	// n·elapsed fits: a million streams times an hour in ns is 3.6e18
	return int(int64(n) * int64(elapsed) / int64(spread))
}
