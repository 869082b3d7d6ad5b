package sse

import (
	"context"
	"time"
)

// looper is the life of a stream served by its own goroutine (a lobby
// stream, a personal stream, a room stream not taken over), as a Rest: it
// flushes what out holds (the opening), then writes each item that arrives
// on items with handle, flushing once per item, and a heartbeat when the
// hub's sweep finds it silent for about a Heartbeat, until the stream ends.
// handle returns why the stream ends after the item ("" to go on); what it
// wrote is flushed first. It holds no timer: the sweep (line.go) asks for
// its heartbeats and ends it at its token's end.
//
// The stream ends (End…) when the client went or could not be written,
// the hub shut down (a retry frame tells the client when to come back),
// the stream's token expired (its last frame is written), the stream was
// ended by the hub (hd.why), or for handle's reason; or for begin's, before
// the opening is flushed. done is then called once with why, also when
// Step panics (with EndClientGone).
type looper[T any] struct {
	ctx    context.Context
	h      *Hub
	hd     *held
	out    *writer
	items  <-chan T
	handle func(T) string
	// begin, when set, runs at the first Step, before the opening is
	// flushed: it returns why the stream ends there ("" to go on)
	begin func() string
	// done is called once the stream ended, with why
	done func(why string)

	fire    <-chan time.Time // the token's end, when a channel (expiryOf)
	last    []byte           // the token_expiring frame
	started bool             // the first Step ran
	looped  bool             // among the sweep's streams (h.looped)
	ended   bool             // end ran
	woke    int              // what Wait saw (woke…)
	it      T                // the item Wait took, when woke is wokeItem
	why     string           // why the stream ended, once it did
}

// What a looper's Wait saw.
const (
	wokeStart = iota // nothing yet: the stream begins
	wokeGone
	wokeShutdown
	wokeExpired
	wokeEnded
	wokeTick
	wokeItem
)

// newLooper returns the rest of a stream whose opening out holds (see
// looper); set its begin and done before it runs.
func newLooper[T any](ctx context.Context, h *Hub, hd *held, out *writer, items <-chan T, handle func(T) string) *looper[T] {
	return &looper[T]{ctx: ctx, h: h, hd: hd, out: out, items: items, handle: handle}
}

// Wait blocks until the stream has something to do. Its frame is all an
// idle stream holds on its goroutine's stack besides its caller's (and the
// runtime's select): no local of the stream's opening or its handlers.
func (l *looper[T]) Wait() {
	if !l.started {
		l.woke = wokeStart
		return
	}
	select {
	case <-l.ctx.Done():
		l.woke = wokeGone
	case <-l.h.done:
		l.woke = wokeShutdown
	case <-l.fire:
		l.woke = wokeExpired
	case <-l.hd.over:
		l.woke = wokeEnded
	case <-l.hd.tick:
		l.woke = wokeTick
	case l.it = <-l.items:
		l.woke = wokeItem
	}
}

// Step does what Wait saw and reports whether the stream goes on; once it
// reported false, the stream ended and done was called.
func (l *looper[T]) Step() (goOn bool) {
	why := EndClientGone // should step panic
	defer func() {
		if !goOn {
			l.end(why)
		}
	}()
	why = l.step()
	return why == ""
}

// step does what Wait saw; returns why the stream ends ("" to go on).
func (l *looper[T]) step() string {
	h, hd, out := l.h, l.hd, l.out
	switch l.woke {
	case wokeStart:
		l.started = true
		if l.begin != nil {
			if why := l.begin(); why != "" {
				return why
			}
		}
		if out.flush() != nil {
			return EndWriteError
		}
		var end time.Time
		l.fire, end, l.last = expiryOf(l.ctx)
		hd.endAt, hd.last, hd.tick = end, l.last, make(chan struct{}, 1)
		hd.lastWrite.Store(time.Now().UnixNano())
		h.mu.Lock()
		h.looped[hd] = struct{}{}
		h.mu.Unlock()
		l.looped = true
		return ""
	case wokeGone:
		return EndClientGone
	case wokeShutdown:
		out.write(retryFrame(shutdownRetry()))
		out.flush()
		return EndShutdown
	case wokeExpired:
		out.write(l.last)
		out.flush()
		return EndTokenExpiry
	case wokeEnded:
		if hd.why == EndTokenExpiry {
			out.write(l.last)
			out.flush()
		}
		return hd.why
	case wokeTick:
		out.write(pingFrame)
	case wokeItem:
		it := l.it
		var zero T
		l.it = zero // not kept while idle
		if why := l.handle(it); why != "" {
			out.flush()
			return why
		}
	}
	// handle may have flushed itself (a personal stream's logged events):
	// its failure ends the stream as a flush here does
	if out.flush() != nil {
		return EndWriteError
	}
	if out.sentAt > hd.lastWrite.Load() {
		hd.lastWrite.Store(out.sentAt)
	}
	return ""
}

// end leaves the sweep's streams and calls done, once.
func (l *looper[T]) end(why string) {
	if l.ended {
		return
	}
	l.ended, l.why = true, why
	if l.looped {
		l.h.mu.Lock()
		delete(l.h.looped, l.hd)
		l.h.mu.Unlock()
	}
	if l.done != nil {
		l.done(why)
	}
}
