package api

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/realsync/realsync/internal/wait"
	"github.com/realsync/realsync/sse"
)

// h2Streams serves each request as an event stream over HTTP/2 (TLS)
// through Server.stream, with s's stall watch, running serve as the
// stream's life; the server's connections live within base.
func h2Streams(t *testing.T, base context.Context, s *Server, serve func(c sse.Client) error) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor != 2 {
			t.Errorf("request over HTTP/%d", r.ProtoMajor)
		}
		s.stream(w, r, func(_ context.Context, c sse.Client) error { return serve(c) })
	}))
	srv.Config.BaseContext = func(net.Listener) context.Context { return base }
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

// stallServer is a Server whose stall watch looks every every and cuts a
// write under way for timeout.
func stallServer(every, timeout time.Duration) *Server {
	s := &Server{log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	s.stalls.every, s.stalls.timeout = every, timeout
	return s
}

// sendUntilCut sends frames of 64 KiB on c until a Send fails, and then
// says how many bytes went before.
func sendUntilCut(c sse.Client, failed chan<- int) {
	frame := bytes.Repeat([]byte("data: x\n\n"), 64<<10/9)
	for n := 0; ; n++ {
		if c.Send(frame) != nil {
			failed <- n * len(frame)
			return
		}
	}
}

// openStalled opens a stream of s over HTTP/2 whose client never reads
// its body: once its opening went out, the stream waits for resume to be
// closed, then sends 64 KiB frames until a Send fails.
func openStalled(t *testing.T, base context.Context, s *Server) (resume chan<- struct{}, failed <-chan int) {
	t.Helper()
	fails, resumed := make(chan int, 1), make(chan struct{})
	srv := h2Streams(t, base, s, func(c sse.Client) error {
		c.Start()
		c.Send([]byte(": open\n\n")) // the headers go with it
		<-resumed
		sendUntilCut(c, fails)
		return nil
	})
	res, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Body.Close() })
	return resumed, fails
}

// awaitCut waits for sendUntilCut's report: the Send that blocked once the
// client's stream window (4 MiB for net/http's transport) was full was
// cut.
func awaitCut(t *testing.T, failed <-chan int) {
	t.Helper()
	select {
	case sent := <-failed:
		if sent < 1<<20 {
			t.Errorf("the Send failed after %d bytes: before the client's window was full", sent)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the blocked Send was not cut")
	}
}

// A client that stops reading an HTTP/2 stream blocks its Send once the
// stream's flow-control window is full; the stall watch resets the
// stream and the Send fails, though no write deadline was set. The
// stream is watched while it is open, and leaves the watch, whose
// goroutine ends, once it ended.
func TestStallWatchCutsABlockedHTTP2Send(t *testing.T) {
	s := stallServer(20*time.Millisecond, 200*time.Millisecond)
	resume, failed := openStalled(t, t.Context(), s)
	if n := s.stalls.watching(); n != 1 {
		t.Errorf("%d streams watched while one is open, want 1", n)
	}
	close(resume)
	awaitCut(t, failed)
	wait.Until(t, "the stream to leave the watch", func() bool { return s.stalls.watching() == 0 })
	wait.Until(t, "the watch's goroutine to end", func() bool {
		s.stalls.mu.Lock()
		defer s.stalls.mu.Unlock()
		return !s.stalls.running
	})
}

// A stream whose request's context ended while it stays open (a
// shutdown ends them first) leaves the watch, and comes back with its
// next Send: a Send that then blocks is still cut.
func TestStallWatchTakesBackAStreamWhoseContextEnded(t *testing.T) {
	s := stallServer(20*time.Millisecond, 200*time.Millisecond)
	base, cancel := context.WithCancel(t.Context())
	defer cancel()
	resume, failed := openStalled(t, base, s)
	cancel()
	wait.Until(t, "the stream to leave the watch", func() bool { return s.stalls.watching() == 0 })
	close(resume)
	awaitCut(t, failed)
}

// A stream that writes nothing for longer than the write timeout is not
// reset, nor is one that writes now and then to a client that reads; it
// is watched all along (without the watch, a deadline would bound its
// writes, and a deadline over HTTP/2 fires write or no write).
func TestStallWatchLeavesQuietHTTP2StreamsAlone(t *testing.T) {
	s := stallServer(50*time.Millisecond, 500*time.Millisecond)
	const sends = 3
	errs := make(chan error, sends)
	watched := make(chan int, sends)
	srv := h2Streams(t, t.Context(), s, func(c sse.Client) error {
		c.Start()
		for i := range sends {
			if i > 0 {
				time.Sleep(time.Second) // twice the timeout, 20 looks of the watch
			}
			watched <- s.stalls.watching()
			errs <- c.Send([]byte("data: quiet\n\n"))
		}
		return nil
	})
	res, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	lines := bufio.NewScanner(res.Body)
	got := 0
	for lines.Scan() {
		if lines.Text() == "data: quiet" {
			got++
		}
	}
	if err := lines.Err(); err != nil {
		t.Errorf("reading the stream: %v", err)
	}
	for i := range sends {
		if err := <-errs; err != nil {
			t.Errorf("Send %d: %v", i, err)
		}
		if n := <-watched; n != 1 {
			t.Errorf("before Send %d: %d streams watched, want 1", i, n)
		}
	}
	if got != sends {
		t.Errorf("%d events read, want %d", got, sends)
	}
}

// Streams ending while the watch resets the ones whose Send is under way:
// a reset reaches only a stream whose handler still runs (after it, an
// HTTP/2 response writer must not be used; run with -race). Every Send is
// overdue at once (timeout 1 ns).
func TestStallWatchRacesStreamsEnding(t *testing.T) {
	s := stallServer(time.Millisecond, time.Nanosecond)
	srv := h2Streams(t, t.Context(), s, func(c sse.Client) error {
		c.Start()
		for range 20 {
			if c.Send([]byte("data: x\n\n")) != nil {
				break
			}
		}
		return nil
	})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 25 {
				res, err := srv.Client().Get(srv.URL)
				if err != nil {
					continue
				}
				io.Copy(io.Discard, res.Body) // a reset ends the body with an error
				res.Body.Close()
			}
		})
	}
	wg.Wait()
	wait.Until(t, "the streams to leave the watch", func() bool { return s.stalls.watching() == 0 })
}

// watching returns how many streams the watch holds (tests).
func (w *stallWatch) watching() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.streams)
}
