package sse_test

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/internal/wait"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/sse"
)

// A shutdown's spread ends n·elapsed/spread streams by elapsed (rounded
// down), all of them once it is over.
func TestDue(t *testing.T) {
	for _, tc := range []struct {
		n               int
		elapsed, spread time.Duration
		want            int
	}{
		{10, -time.Second, 10 * time.Second, 0},
		{10, 0, 10 * time.Second, 0},
		{10, 999 * time.Millisecond, 10 * time.Second, 0},
		{10, time.Second, 10 * time.Second, 1},
		{10, 5 * time.Second, 10 * time.Second, 5},
		{10, 9999 * time.Millisecond, 10 * time.Second, 9},
		{10, 10 * time.Second, 10 * time.Second, 10},
		{10, time.Hour, 10 * time.Second, 10},
		{3, 5 * time.Second, 10 * time.Second, 1},
		{1, 9 * time.Second, 10 * time.Second, 0},
		// no overflow: a million streams, an hour in nanoseconds
		{1_000_000, time.Hour - time.Millisecond, time.Hour, 999_999},
		{1_000_000, 30 * time.Minute, time.Hour, 500_000},
	} {
		if got := sse.Due(tc.n, tc.elapsed, tc.spread); got != tc.want {
			t.Errorf("due(%d, %s, %s) = %d, want %d", tc.n, tc.elapsed, tc.spread, got, tc.want)
		}
	}
}

// A spread ends at least its rate of streams a second: fewer streams end
// within less than the spread.
func TestSpreadOf(t *testing.T) {
	for _, tc := range []struct {
		n      int
		spread time.Duration
		rate   int
		want   time.Duration
	}{
		{10_000, 10 * time.Second, 100, 10 * time.Second},
		{1000, 10 * time.Second, 100, 10 * time.Second},
		{999, 10 * time.Second, 100, 9990 * time.Millisecond},
		{50, 10 * time.Second, 100, 500 * time.Millisecond},
		{1, 10 * time.Second, 100, 10 * time.Millisecond},
		{12, 2 * time.Second, 1, 2 * time.Second},
		{1_000_000, 10 * time.Minute, 100, 10 * time.Minute},
	} {
		if got := sse.SpreadOf(tc.n, tc.spread, tc.rate); got != tc.want {
			t.Errorf("spreadOf(%d, %s, %d) = %s, want %s", tc.n, tc.spread, tc.rate, got, tc.want)
		}
	}
}

// endOver ends the streams in their order, as many as are due at each
// tick, each for a shutdown, every one by the first tick past the spread,
// and none twice.
func TestEndOverEndsTheDueAtEachTick(t *testing.T) {
	start := time.Unix(1_700_000_000, 0)
	at := func(ms int) time.Time { return start.Add(time.Duration(ms) * time.Millisecond) }
	// a late tick (1 700 ms after 300 ms: the process was descheduled)
	// ends all that came due meanwhile at once
	ticks := []time.Time{at(100), at(200), at(300), at(1700), at(1800), at(1900), at(2000), at(2100)}
	ends, after := sse.EndOver(20, 2*time.Second, start, ticks)
	want := []int{1, 2, 3, 17, 18, 19, 20, 20}
	if !slices.Equal(after, want) {
		t.Errorf("ended after each tick %v, want %v", after, want)
	}
	for i, e := range ends {
		if e.Stream != i || e.Why != sse.EndShutdown {
			t.Errorf("end %d: %+v, want stream %d ended for %q", i, e, i, sse.EndShutdown)
		}
	}
	if len(ends) != 20 {
		t.Errorf("%d ends, want 20", len(ends))
	}
	// ticks that stop before the spread is over: the rest is left to the
	// hub's close
	if ends, after := sse.EndOver(20, 2*time.Second, start, ticks[:3]); len(ends) != 3 || !slices.Equal(after, want[:3]) {
		t.Errorf("cut short: %d ends, %v after each tick, want 3 and %v", len(ends), after, want[:3])
	}
}

// Close with a ShutdownSpread ends the streams open then in a random
// order over it, not at once (a rate of 1 a second, so that 12 streams
// take the whole spread), each with the shutdown's retry line of 0.5 to 2 s:
// room and lobby streams alike. None ends before its share of the spread
// is due (the first a twelfth of it in), the last not before the spread
// is over, and the first well before the last.
func TestCloseSpreadsTheStreamsEnds(t *testing.T) {
	const spread = 2 * time.Second
	b := redistest.Backends(t)[0]
	e := newEnv(t, b, func(c *sse.Config) { c.ShutdownSpread, c.ShutdownRate = spread, 1 })
	id := e.room(t, alice, bob)
	type open struct {
		cl   *client
		done chan error
	}
	var opens []open
	for i := range 10 {
		cl := newClient()
		_, done := e.serve(t, []rooms.User{alice, bob}[i%2], id, sse.Cursor{}, cl)
		cl.waitFor(t, 1)
		opens = append(opens, open{cl, done})
	}
	for range 2 {
		cl := newClient()
		_, done := e.serveLobby(t, alice, cl)
		wait.Until(t, "the lobby stream's first event", func() bool { return len(cl.all()) > 0 })
		opens = append(opens, open{cl, done})
	}
	wait.Until(t, "every stream looped", func() bool { return sse.LoopedStreams(e.hub) == len(opens) })
	began := time.Now()
	closed := make(chan struct{})
	go func() {
		e.hub.Close()
		close(closed)
	}()
	ended := make([]time.Duration, len(opens))
	var wg sync.WaitGroup
	for i, o := range opens {
		wg.Go(func() {
			<-o.done
			ended[i] = time.Since(began)
		})
	}
	all := make(chan error, 1)
	go func() {
		wg.Wait()
		<-closed
		all <- nil
	}()
	awaitEnd(t, all, "every stream and Close")
	first, last := slices.Min(ended), slices.Max(ended)
	t.Logf("ends from %s to %s after Close (spread %s)", first.Round(time.Millisecond), last.Round(time.Millisecond), spread)
	if first < spread/time.Duration(len(opens)) {
		t.Errorf("a stream ended %s after Close, before the first share of the spread was due (%s)", first, spread/time.Duration(len(opens)))
	}
	if last < spread {
		t.Errorf("the last stream ended %s after Close, before the spread (%s) was over", last, spread)
	}
	if last-first < spread/2 {
		t.Errorf("the streams ended within %s of each other, want them spread over %s", last-first, spread)
	}
	for i, o := range opens {
		endsWithShutdownRetry(t, i, o.cl)
	}
}

// At the default rate (100 a second) a few streams end within a fraction
// of the spread: a shutdown is not held for the whole of it.
func TestCloseEndsFewStreamsSoon(t *testing.T) {
	b := redistest.Backends(t)[0]
	e := newEnv(t, b, func(c *sse.Config) { c.ShutdownSpread = time.Minute })
	id := e.room(t, alice)
	var dones []chan error
	for range 3 {
		cl := newClient()
		_, done := e.serve(t, alice, id, sse.Cursor{}, cl)
		cl.waitFor(t, 1)
		dones = append(dones, done)
	}
	closed := make(chan error, 1)
	go func() {
		e.hub.Close()
		closed <- nil
	}()
	for _, d := range dones {
		awaitEnd(t, d, "a stream of three within a minute's spread")
	}
	awaitEnd(t, closed, "Close of three streams within a minute's spread")
}
