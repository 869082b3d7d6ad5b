package sse

import "context"

// detachLooper takes the connection of looped stream l's client over, when the
// client can give it up (Detacher: plain HTTP/1.1) and the stream's end
// is a time, not a channel (an API key's revocation is watched through
// its request's context): the opening is flushed, l's writer writes to
// the Line, and l runs to its end on a goroutine of its own, so that the
// handler returns and the HTTP server's goroutines, buffers and request go
// with it. That was most of an idle personal stream over HTTP/1.1: two
// goroutines, net/http's 4 KiB read and write buffers
// (docs/PERFORMANCE-HISTORY.md, "Lobby and personal streams taken over").
// The stream's context is then its own, with its request's values (the
// token's end), cancelled once the stream ended: the request's ends with
// its handler. A client gone is told by the Line (HangupNotifier), or
// seen by the sweep (Line.Alive), as a taken-over room stream's. Reports whether it did; false leaves l to the
// request (carry).
func (h *Hub) detachLooper(c Client, l *looper) bool {
	d, ok := c.(Detacher)
	if !ok || !d.Detachable() {
		return false
	}
	if _, _, ok := deadlineOf(l.ctx); !ok || l.ctx.Err() != nil {
		return false
	}
	// counted before the shutdown is looked at: a Close that begins after
	// this waits for the stream (endLines); one that began before leaves
	// it to its request, which the HTTP server's shutdown waits for
	h.detached.Add(1)
	select {
	case <-h.done:
		h.detached.Add(-1)
		return false
	default:
	}
	var line Line
	if l.out.flush() == nil {
		line = d.Detach()
	}
	if line == nil {
		h.detached.Add(-1)
		return false
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(l.ctx))
	l.ctx, l.out.c, l.hd.line = ctx, line, line
	onHangup(line, func() { l.hd.end(EndClientGone) })
	done := l.done
	l.done = func(why string) {
		// released first, within releaseWait, as when its request held
		// it (awaitRelease)
		if done != nil {
			h.awaitRelease(func() { done(why) })
		}
		cancel()
		line.End(nil) // the stream's last frames are written already
	}
	go func() {
		defer h.detached.Add(-1)
		defer func() {
			// Step released the stream (looper.Step); the panic ends here
			if v := recover(); v != nil {
				// with its request's context: the request's id (api.LogHandler)
				h.cfg.Log.ErrorContext(l.ctx, "sse: a detached stream panicked", "panic", v, "user", l.hd.lease.UserID)
			}
		}()
		run(l)
	}()
	return true
}
