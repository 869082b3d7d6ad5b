package sse

import (
	"context"
	"time"
)

// LoopedStreams counts the streams served by loop that the hub's sweep
// keeps, for the tests of package sse_test.
func LoopedStreams(h *Hub) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.looped)
}

// LobbyResync makes every lobby stream send a fresh list, as after the
// lobby subscription reconnected (notices lost meanwhile).
func LobbyResync(h *Hub) { h.lobbyResync() }

// SpreadOf is spreadOf: how long n streams take to end over spread at
// rate a second at least.
func SpreadOf(n int, spread time.Duration, rate int) time.Duration { return spreadOf(n, spread, rate) }

// Due is due: how many of n streams ending over spread have ended after
// elapsed.
func Due(n int, elapsed, spread time.Duration) int { return due(n, elapsed, spread) }

// endRecorder is an ender that records its ends.
type endRecorder struct {
	i    int
	ends *[]RecordedEnd
}

// RecordedEnd is an end EndOver saw: the stream's index and why.
type RecordedEnd struct {
	Stream int
	Why    string
}

func (r endRecorder) end(why string) { *r.ends = append(*r.ends, RecordedEnd{Stream: r.i, Why: why}) }

// EndOver runs endOver over n streams from start, ticking at the times
// given one after the other, then ending its context; it returns the ends
// in the order they came and, for each tick, how many had come once endOver
// was done with it.
func EndOver(n int, spread time.Duration, start time.Time, ticks []time.Time) (ends []RecordedEnd, after []int) {
	ctx, cancel := context.WithCancel(context.Background())
	ch, finished := make(chan time.Time), make(chan struct{})
	all := make([]ender, n)
	for i := range all {
		all[i] = endRecorder{i: i, ends: &ends}
	}
	fed := make(chan struct{})
	go func() {
		defer close(fed)
		defer cancel()
		for _, at := range ticks {
			select {
			case ch <- at:
			case <-finished:
				after = append(after, len(ends))
				continue
			}
			// a zero time ends nothing: once endOver took it, it was done
			// with the tick before
			select {
			case ch <- time.Time{}:
			case <-finished:
			}
			after = append(after, len(ends))
		}
	}()
	endOver(ctx, all, spread, start, ch)
	close(finished)
	<-fed
	return ends, after
}

// LobbyResyncDue reports whether a lobby resync was asked for and its
// lists are not yet all queued on the streams.
func LobbyResyncDue(h *Hub) bool {
	h.lobby.mu.Lock()
	defer h.lobby.mu.Unlock()
	return h.lobby.resync.due || h.lobby.resync.reading
}

// StatusReloadDue reports whether followed users' statuses were asked for
// again (a resubscription) and are not yet all queued on the streams.
func StatusReloadDue(h *Hub) bool {
	h.me.mu.Lock()
	defer h.me.mu.Unlock()
	return len(h.me.reload.users) > 0 || h.me.reload.reading
}
