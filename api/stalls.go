package api

import (
	"cmp"
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Over HTTP/2 a write deadline is a timer that resets the stream when it
// fires, write or no write, so an event stream cannot leave one set
// between its events as an HTTP/1.1 stream does (a quiet stream would die
// streamWriteTimeout after its last event). Setting one before each Send
// and clearing it after costs two messages to the connection's serve loop
// and a timer change an event: 8.7% of realsyncd's CPU over 10 000 h2c
// streams (docs/PERFORMANCE-HISTORY.md, "The 10 000-stream fan-out, taken
// apart"). Instead an HTTP/2 stream's Send records when it began, and the
// server's stallWatch, once a second, resets the streams whose Send has
// been under way for streamWriteTimeout or longer (a write deadline in the
// past resets an HTTP/2 stream at once; the blocked write returns an
// error and the stream ends as a failed write does). A write is thus
// bounded by 10 to 11 s with no timer and no serve-loop message of its
// own.

// stallTick is the time between two looks of the stall watch.
const stallTick = time.Second

// stallWatch cuts the HTTP/2 event streams of one Server whose write has
// been under way for too long (see above). Its goroutine runs while it
// watches a stream: started by the first, it ends at the first look that
// finds none. A stream leaves the watch at the first look that finds its
// request's context ended and no Send under way, and comes back with its
// next Send, if any (a shutdown ends the requests' contexts before their
// streams). The zero value is ready to use.
type stallWatch struct {
	// every and timeout, when set, replace stallTick and
	// streamWriteTimeout (tests)
	every, timeout time.Duration

	mu      sync.Mutex
	streams map[*stallable]struct{}
	running bool
	// epoch: the times of the watch are the monotonic clock's since
	// epoch, set by the first stream (a step of the wall clock cuts no
	// write and spares none)
	epoch time.Time
}

// stallable is an HTTP/2 stream's part in the watch: when its Send under
// way began, and its request, to reset it. The zero value is no part:
// its stream is not watched.
type stallable struct {
	w *stallWatch
	// writing is when the Send under way began (the watch's now); 0: none
	writing atomic.Int64
	// listed: among the watch's streams (changed under w.mu)
	listed atomic.Bool
	// mu keeps a reset and the end of a Send apart: the watch resets only
	// a stream whose Send has not ended, so its handler has not returned
	// (after it, an HTTP/2 response writer must not be used)
	mu  sync.Mutex
	ctx context.Context // the stream's request's
	rc  *http.ResponseController
}

// watched reports whether s is a watched stream's part.
func (s *stallable) watched() bool { return s.w != nil }

// begin marks a Send under way; ended must follow. A stream that left the
// watch comes back. (The watch drops a stream only after it found it
// writing nothing, and looks again once it dropped it: either it sees
// this Send, or begin sees the stream gone.)
func (s *stallable) begin() {
	s.writing.Store(s.w.now())
	if !s.listed.Load() {
		s.w.add(s)
	}
}

// ended marks the Send done.
func (s *stallable) ended() {
	s.mu.Lock()
	s.writing.Store(0)
	s.mu.Unlock()
}

// cut resets the stream when its Send under way began at or before
// since.
func (s *stallable) cut(since int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if at := s.writing.Load(); at != 0 && at <= since {
		s.rc.SetWriteDeadline(time.Unix(0, 1)) // in the past: resets the stream at once
	}
}

// watch makes s the part of the HTTP/2 stream of the request of ctx,
// written through rc, and watches it.
func (w *stallWatch) watch(s *stallable, ctx context.Context, rc *http.ResponseController) {
	s.ctx, s.rc, s.w = ctx, rc, w
	w.add(s)
}

// add puts s among the watched streams.
func (w *stallWatch) add(s *stallable) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.streams == nil {
		w.streams = make(map[*stallable]struct{})
		w.epoch = time.Now()
	}
	w.streams[s] = struct{}{}
	s.listed.Store(true)
	if !w.running {
		w.running = true
		go w.run()
	}
}

// now is the watch's time: nanoseconds since its epoch, plus one (never
// 0). Called once a stream was added (so after the epoch was set).
func (w *stallWatch) now() int64 { return int64(time.Since(w.epoch)) + 1 }

// run looks at the watched streams every tick until there are none.
func (w *stallWatch) run() {
	every, timeout := cmp.Or(w.every, stallTick), cmp.Or(w.timeout, streamWriteTimeout)
	t := time.NewTicker(every)
	defer t.Stop()
	var due []*stallable
	for range t.C {
		since := w.now() - int64(timeout)
		due = due[:0]
		w.mu.Lock()
		for s := range w.streams {
			switch at := s.writing.Load(); {
			case at != 0 && at <= since:
				due = append(due, s)
			case at == 0 && s.ctx.Err() != nil:
				delete(w.streams, s)
				s.listed.Store(false)
				if s.writing.Load() != 0 { // a Send began meanwhile, and may not have seen it gone
					w.streams[s] = struct{}{}
					s.listed.Store(true)
				}
			}
		}
		if len(w.streams) == 0 {
			w.running = false
			w.mu.Unlock()
			return
		}
		w.mu.Unlock()
		for _, s := range due {
			s.cut(since)
		}
		clear(due)
	}
}
