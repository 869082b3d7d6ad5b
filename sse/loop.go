package sse

import (
	"context"
	"time"
)

// looper is the life of a stream served by its own goroutine (a lobby
// stream, a personal stream, a room stream not taken over), as a Rest: it
// flushes what out holds (the opening), then, at each wake-up, writes what
// the stream queued with handle (a room stream's pend, a lobby or personal
// stream's queue), flushing once, and a heartbeat when the hub's sweep
// finds it silent for about a Heartbeat, until the stream ends. handle
// returns why the stream ends after what it wrote ("" to go on); what it
// wrote is flushed first. It holds no timer: the sweep (line.go) asks for
// its heartbeats and ends it at its token's end. Everything but a token's
// end as a channel wakes it on the stream's one channel (held.wake): an
// item queued too.
//
// The stream ends (End…) when the client went or could not be written,
// the hub shut down (a retry frame tells the client when to come back),
// the stream's token expired (its last frame is written), the stream was
// ended by the hub (hd.why), or for handle's reason; or for begin's, before
// the opening is flushed. done is then called once with why, also when
// Step panics (with EndClientGone).
type looper struct {
	ctx context.Context
	h   *Hub
	hd  *held
	out *writer
	// handle and begin get the stream's context: the request's, or the
	// stream's own once its connection was taken over (detachLooper)
	handle func(ctx context.Context) string
	// begin, when set, runs at the first Step, before the opening is
	// flushed: it returns why the stream ends there ("" to go on)
	begin func(ctx context.Context) string
	// done is called once the stream ended, with why
	done func(why string)

	fire    <-chan time.Time // the token's end, when a channel (expiryOf)
	fired   time.Time        // what fire gave: when the token ended (its token_expiring's expiresAt)
	started bool             // the first Step ran
	looped  bool             // among the sweep's streams (h.looped)
	ended   bool             // end ran
	woke    int              // what Wait saw (woke…)
	why     string           // why the stream ended, once it did
	unwatch func() bool      // stops the wake-up at ctx's end (context.AfterFunc)
}

// What a looper's Wait saw.
const (
	wokeStart   = iota // nothing yet: the stream begins
	wokeExpired        // fire fired
	wokeWake           // held.wake: see step for what it may mean
)

// newLooper returns the rest of a stream whose opening out holds (see
// looper); set its begin and done before it runs.
func newLooper(ctx context.Context, h *Hub, hd *held, out *writer, handle func(context.Context) string) *looper {
	return &looper{ctx: ctx, h: h, hd: hd, out: out, handle: handle}
}

// Wait blocks until the stream has something to do. Its frame is all an
// idle stream holds on its goroutine's stack besides its caller's (and the
// runtime's select): no local of the stream's opening or its handlers.
func (l *looper) Wait() {
	switch {
	case !l.started:
		l.woke = wokeStart
	case l.fire == nil:
		<-l.hd.wake
		l.woke = wokeWake
	default:
		select {
		case <-l.hd.wake:
			l.woke = wokeWake
		case l.fired = <-l.fire:
			l.woke = wokeExpired
		}
	}
}

// Step does what Wait saw and reports whether the stream goes on; once it
// reported false, the stream ended and done was called.
func (l *looper) Step() (goOn bool) {
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
func (l *looper) step() string {
	h, hd, out := l.h, l.hd, l.out
	switch l.woke {
	case wokeStart:
		l.started = true
		if l.begin != nil {
			if why := l.begin(l.ctx); why != "" {
				return why
			}
		}
		if out.flush() != nil {
			return EndWriteError
		}
		l.fire, hd.endAt, hd.expires = expiryOf(l.ctx)
		hd.lastWrite.Store(time.Now().UnixNano())
		h.mu.Lock()
		h.looped[hd] = struct{}{}
		h.mu.Unlock()
		l.looped = true
		l.unwatch = context.AfterFunc(l.ctx, hd.hungUp)
		select {
		case <-h.done: // Close may have woken the looped streams before hd was among them
			hd.signal()
		default:
		}
		return ""
	case wokeExpired:
		out.write(expiringFrame(l.fired))
		out.flush()
		return EndTokenExpiry
	case wokeWake:
		select {
		case <-h.done:
			out.write(retryFrame(shutdownRetry()))
			out.flush()
			return EndShutdown
		default:
		}
		switch {
		case hd.gone.Load(): // the context ended (hungUp)
			return EndClientGone
		case hd.isOver():
			if l.ctx.Err() != nil { // ended before hungUp ran, as the hub ended it
				return EndClientGone
			}
			if f := endFrame(hd.why, hd.expires); f != nil {
				out.write(f)
				out.flush()
			}
			return hd.why
		}
		if hd.beat.Swap(false) {
			out.write(pingFrame)
		}
		if why := l.handle(l.ctx); why != "" {
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
func (l *looper) end(why string) {
	if l.ended {
		return
	}
	l.ended, l.why = true, why
	if l.unwatch != nil {
		l.unwatch()
	}
	if l.looped {
		l.h.mu.Lock()
		delete(l.h.looped, l.hd)
		l.h.mu.Unlock()
	}
	if l.done != nil {
		l.done(why)
	}
}
