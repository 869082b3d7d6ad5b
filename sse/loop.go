package sse

import (
	"context"
	"time"
)

// loop is the life of a stream served by its own goroutine (a lobby stream,
// a personal stream, a room stream not taken over): it flushes what out
// holds (the opening), then writes each item that arrives on items with
// handle, flushing once per item, and a heartbeat after every Heartbeat
// of silence, until the stream ends. handle returns why the stream ends
// after the item ("" to go on); what it wrote is flushed first.
//
// Returns why the stream ended (End…): the client went or could not be
// written, the hub shut down (a retry frame tells the client when to come
// back), the stream's token expired (its last frame is written), the
// stream was ended by the hub (hd.why), or handle's reason.
func loop[T any](ctx context.Context, h *Hub, hd *held, out *writer, items <-chan T, handle func(T) string) string {
	if out.flush() != nil {
		return EndWriteError
	}
	idle := time.NewTimer(h.cfg.Heartbeat)
	defer idle.Stop()
	expiring, last := expiryOf(ctx)
	for {
		select {
		case <-ctx.Done():
			return EndClientGone
		case <-h.done:
			out.write(retryFrame(shutdownRetry()))
			out.flush()
			return EndShutdown
		case <-expiring:
			out.write(last)
			out.flush()
			return EndTokenExpiry
		case <-hd.over:
			return hd.why
		case <-idle.C:
			out.write(pingFrame)
		case it := <-items:
			if why := handle(it); why != "" {
				out.flush()
				return why
			}
		}
		if out.flush() != nil {
			return EndWriteError
		}
		idle.Reset(h.cfg.Heartbeat)
	}
}
