package api

import (
	"bufio"
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/realsync/realsync/sse"
)

// h2Streams serves each request as an event stream over HTTP/2 (TLS)
// through Server.stream, with s's stall watch, running serve as the
// stream's life.
func h2Streams(t *testing.T, s *Server, serve func(c sse.Client) error) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor != 2 {
			t.Errorf("request over HTTP/%d", r.ProtoMajor)
		}
		s.stream(w, r, serve)
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

// A client that stops reading an HTTP/2 stream blocks its Send once the
// stream's flow-control window is full; the stall watch resets the
// stream and the Send fails, though no write deadline was set.
func TestStallWatchCutsABlockedHTTP2Send(t *testing.T) {
	s := &Server{log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	s.stalls.every, s.stalls.timeout = 20*time.Millisecond, 200*time.Millisecond
	frame := bytes.Repeat([]byte("data: x\n\n"), 64<<10/9)
	failed := make(chan int, 1)
	srv := h2Streams(t, s, func(c sse.Client) error {
		c.Start()
		for n := 0; ; n++ {
			if c.Send(frame) != nil {
				failed <- n * len(frame)
				return nil
			}
		}
	})
	res, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close() // never read
	select {
	case sent := <-failed:
		// the client's stream window (4 MiB for net/http's transport)
		// was filled before the write blocked
		if sent < 1<<20 {
			t.Errorf("the Send failed after %d bytes: before the client's window was full", sent)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the blocked Send was not cut (watch timeout 200 ms)")
	}
	soon(t, "the stream to leave the watch", func() bool { return s.stalls.watching() == 0 })
	soon(t, "the watch's goroutine to end", func() bool {
		s.stalls.mu.Lock()
		defer s.stalls.mu.Unlock()
		return !s.stalls.running
	})
}

// A stream that writes nothing for longer than the write timeout is not
// reset (over HTTP/2 a deadline left set would: it fires write or no
// write); nor is one that writes now and then to a client that reads.
func TestStallWatchLeavesQuietHTTP2StreamsAlone(t *testing.T) {
	s := &Server{log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	s.stalls.every, s.stalls.timeout = 10*time.Millisecond, 50*time.Millisecond
	const sends = 4
	errs := make(chan error, sends)
	srv := h2Streams(t, s, func(c sse.Client) error {
		c.Start()
		for i := range sends {
			if i > 0 {
				time.Sleep(300 * time.Millisecond) // six timeouts, 30 looks of the watch
			}
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
	s := &Server{log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	s.stalls.every, s.stalls.timeout = time.Millisecond, time.Nanosecond
	srv := h2Streams(t, s, func(c sse.Client) error {
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
	soon(t, "the streams to leave the watch", func() bool { return s.stalls.watching() == 0 })
}

// soon polls ok for up to 10 s, failing with what otherwise.
func soon(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !ok(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not within 10 s: %s", what)
		}
	}
}
