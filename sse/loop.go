package sse

import (
	"context"
	"time"
)

// loop is the life of a stream served by its own goroutine (a lobby stream,
// a personal stream, a room stream not taken over): it flushes what out
// holds (the opening), then writes each item that arrives on items with
// handle, flushing once per item, and a heartbeat when the hub's sweep
// finds it silent for about a Heartbeat, until the stream ends. handle
// returns why the stream ends after the item ("" to go on); what it wrote
// is flushed first. It holds no timer: the sweep (line.go) asks for its
// heartbeats and ends it at its token's end.
//
// Returns why the stream ended (End…): the client went or could not be
// written, the hub shut down (a retry frame tells the client when to come
// back), the stream's token expired (its last frame is written), the
// stream was ended by the hub (hd.why), or handle's reason.
func loop[T any](ctx context.Context, h *Hub, hd *held, out *writer, items <-chan T, handle func(T) string) string {
	if out.flush() != nil {
		return EndWriteError
	}
	fire, end, last := expiryOf(ctx)
	hd.endAt, hd.last, hd.tick = end, last, make(chan struct{}, 1)
	hd.lastWrite.Store(time.Now().UnixNano())
	h.mu.Lock()
	h.looped[hd] = struct{}{}
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		delete(h.looped, hd)
		h.mu.Unlock()
	}()
	for {
		select {
		case <-ctx.Done():
			return EndClientGone
		case <-h.done:
			out.write(retryFrame(shutdownRetry()))
			out.flush()
			return EndShutdown
		case <-fire:
			out.write(last)
			out.flush()
			return EndTokenExpiry
		case <-hd.over:
			if hd.why == EndTokenExpiry {
				out.write(last)
				out.flush()
			}
			return hd.why
		case <-hd.tick:
			out.write(pingFrame)
		case it := <-items:
			if why := handle(it); why != "" {
				out.flush()
				return why
			}
		}
		// handle may have flushed itself (a personal stream's logged
		// events): its failure ends the stream as a flush here does
		if out.flush() != nil {
			return EndWriteError
		}
		if out.sentAt > hd.lastWrite.Load() {
			hd.lastWrite.Store(out.sentAt)
		}
	}
}
