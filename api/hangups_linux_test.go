package api

import (
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/realsync/realsync/internal/wait"
	"golang.org/x/sys/unix"
)

// newTestHangups is a Hangups closed when the test ends.
func newTestHangups(t *testing.T) *Hangups {
	t.Helper()
	h, err := NewHangups()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// loopback is a listener on 127.0.0.1, closed when the test ends.
func loopback(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

// dialPair is a TCP connection over ln: the client's end and the
// server's, both closed when the test ends.
func dialPair(t *testing.T, ln net.Listener) (client *net.TCPConn, server net.Conn) {
	t.Helper()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(); s.Close() })
	return c.(*net.TCPConn), s
}

// settle returns once h's goroutine has handled every hang-up the kernel
// had for it when settle was called: it watches a connection of its own,
// whose peer closes, and waits for that one. The epoll instance reports
// its ready connections in the order they became ready, and the goroutine
// marks them in that order, so whatever was ready before (a connection
// wrongly reported for the bytes its client sent, say) has been marked.
func settle(t *testing.T, h *Hangups, ln net.Listener) {
	t.Helper()
	c, s := dialPair(t, ln)
	w := h.watch(s)
	if w == nil {
		t.Fatal("the sentinel connection was not watched")
	}
	c.Close()
	wait.Until(t, "the sentinel's hang-up seen", w.gone.Load)
	w.unwatch()
}

// hasBytes waits until the server's end of a connection has bytes to read
// (peeked, left there).
func hasBytes(t *testing.T, conn net.Conn) {
	t.Helper()
	rc, err := conn.(syscall.Conn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	wait.Until(t, "the client's bytes received", func() bool {
		n := 0
		rc.Control(func(fd uintptr) {
			var b [1]byte
			n, _, _ = unix.Recvfrom(int(fd), b[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
		})
		return n > 0
	})
}

// peer actions on the client's end of a connection.
var (
	peerCloses      = func(t *testing.T, c *net.TCPConn) { c.Close() }
	peerShutsWrites = func(t *testing.T, c *net.TCPConn) { c.CloseWrite() }
	peerResets      = func(t *testing.T, c *net.TCPConn) {
		c.SetLinger(0) // close sends RST
		c.Close()
	}
	peerSends = func(t *testing.T, c *net.TCPConn) {
		if _, err := c.Write([]byte("GET / HTTP/1.1\r\n")); err != nil {
			t.Fatal(err)
		}
	}
)

// A watched connection's line is told that its client went away, when it
// closed (FIN), shut its write side (an SSE client that cannot ask
// anything more is gone: peerClosed, which reads end of file, says so
// too), reset the connection (RST), whether before the connection was
// watched or after; a client that sends bytes and stays is there, its
// bytes unread. A line is told of its client's hang-up once
// (eventLine.OnHangup), and never of a client still there.
func TestHangupsTellGoneClients(t *testing.T) {
	for _, tc := range []struct {
		name          string
		before, after func(*testing.T, *net.TCPConn) // the peer's, before and after the watch
		gone          bool
	}{
		{name: "open", gone: false},
		{name: "peer closes", after: peerCloses, gone: true},
		{name: "peer shuts its write side", after: peerShutsWrites, gone: true},
		{name: "peer resets", after: peerResets, gone: true},
		{name: "peer sends bytes and stays", after: peerSends, gone: false},
		{name: "peer sends bytes then closes", after: func(t *testing.T, c *net.TCPConn) { peerSends(t, c); c.Close() }, gone: true},
		{name: "peer closed before the watch", before: peerCloses, gone: true},
		{name: "peer shut its write side before the watch", before: peerShutsWrites, gone: true},
		{name: "peer reset before the watch", before: peerResets, gone: true},
		{name: "peer sent bytes before the watch", before: peerSends, gone: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, ln := newTestHangups(t), loopback(t)
			c, s := dialPair(t, ln)
			if tc.before != nil {
				tc.before(t, c)
				// the server's end is in that state as it is watched
				if tc.gone {
					wait.Until(t, "the hang-up at the server's end", func() bool { return peerClosed(s) })
				} else {
					hasBytes(t, s)
				}
			}
			w := h.watch(s)
			if w == nil {
				t.Fatal("not watched")
			}
			l := &eventLine{conn: s, watch: w}
			var told atomic.Int32
			l.OnHangup(func() { told.Add(1) })
			if tc.after != nil {
				tc.after(t, c)
			}
			if tc.gone {
				wait.Until(t, "the line not alive", func() bool { return !l.Alive() })
				if !w.gone.Load() {
					t.Fatal("the line saw the client gone by a peek, not by its watch")
				}
				wait.Until(t, "the hang-up told", func() bool { return told.Load() > 0 })
				settle(t, h, ln)
				if n := told.Load(); n != 1 {
					t.Fatalf("the hang-up told %d times, want once", n)
				}
				return
			}
			if tc.after != nil {
				hasBytes(t, s)
			}
			settle(t, h, ln)
			if gone, known := w.state(); gone || !known {
				t.Fatalf("watch state: gone %v, known %v; want an open connection, watched", gone, known)
			}
			if !l.Alive() {
				t.Fatal("the line is not alive")
			}
			if told.Load() != 0 {
				t.Fatal("a hang-up told of a client still there")
			}
		})
	}
}

// A connection watched, unwatched and closed leaves nothing to the next
// connection, which likely gets its descriptor: the next one's client is
// there, and its going away is told to it.
func TestHangupsDescriptorReuse(t *testing.T) {
	h, ln := newTestHangups(t), loopback(t)
	ca, sa := dialPair(t, ln)
	wa := h.watch(sa)
	ca.Close()
	wait.Until(t, "A's client gone", wa.gone.Load)
	fdA := fdOf(t, sa)
	wa.unwatch()
	sa.Close()

	cb, sb := dialPair(t, ln)
	if fdB := fdOf(t, sb); fdB != fdA {
		t.Logf("B got descriptor %d, A had %d: not reused", fdB, fdA)
	}
	wb := h.watch(sb)
	lb := &eventLine{conn: sb, watch: wb}
	settle(t, h, ln)
	if !lb.Alive() || wb.gone.Load() {
		t.Fatal("B inherited A's hang-up")
	}
	if n := h.watching(); n != 1 {
		t.Fatalf("%d connections watched, want 1 (B)", n)
	}
	cb.Close()
	wait.Until(t, "B's client gone", func() bool { return !lb.Alive() })
	if !wb.gone.Load() {
		t.Fatal("B's hang-up seen by a peek, not by its watch")
	}
}

// fdOf is conn's file descriptor (for a log line only: it may be another
// connection's once conn is closed).
func fdOf(t *testing.T, conn net.Conn) int {
	t.Helper()
	rc, err := conn.(syscall.Conn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	fd := -1
	rc.Control(func(f uintptr) { fd = int(f) })
	return fd
}

// What cannot be watched, what is unwatched and what remains once the
// Hangups is closed falls back to peeking: the line still tells an open
// connection from a gone one.
func TestHangupsFallBackToPeeking(t *testing.T) {
	t.Run("no Hangups", func(t *testing.T) {
		c, s := dialPair(t, loopback(t))
		var h *Hangups
		w := h.watch(s)
		if w != nil {
			t.Fatal("a nil Hangups watched")
		}
		l := &eventLine{conn: s, watch: w}
		if !l.Alive() {
			t.Fatal("an open connection not alive")
		}
		c.Close()
		wait.Until(t, "the client gone, peeked", func() bool { return !l.Alive() })
	})
	t.Run("not a socket", func(t *testing.T) {
		a, b := net.Pipe()
		defer a.Close()
		defer b.Close()
		if w := newTestHangups(t).watch(a); w != nil {
			t.Fatal("a pipe was watched")
		}
	})
	t.Run("closed before the watch", func(t *testing.T) {
		h := newTestHangups(t)
		_, s := dialPair(t, loopback(t))
		s.Close()
		w := h.watch(s)
		if w != nil {
			t.Fatal("a closed connection was watched")
		}
		if l := (&eventLine{conn: s, watch: w}); l.Alive() {
			t.Fatal("a closed connection alive")
		}
	})
	t.Run("unwatched", func(t *testing.T) {
		h := newTestHangups(t)
		_, s := dialPair(t, loopback(t))
		w := h.watch(s)
		l := &eventLine{conn: s, watch: w}
		w.unwatch()
		w.unwatch() // idempotent
		if _, known := w.state(); known {
			t.Fatal("an unwatched connection's watch still knows")
		}
		if !l.Alive() {
			t.Fatal("an open connection unwatched not alive")
		}
		s.Close()
		if l.Alive() {
			t.Fatal("a closed connection unwatched alive")
		}
		if n := h.watching(); n != 0 {
			t.Fatalf("%d connections watched after the unwatch", n)
		}
	})
	t.Run("after Close", func(t *testing.T) {
		h, ln := newTestHangups(t), loopback(t)
		cg, sg := dialPair(t, ln)
		wg := h.watch(sg)
		lg := &eventLine{conn: sg, watch: wg}
		cg.Close()
		wait.Until(t, "the client gone", wg.gone.Load)
		c, s := dialPair(t, ln)
		w := h.watch(s)
		l := &eventLine{conn: s, watch: w}
		if err := h.Close(); err != nil {
			t.Fatal(err)
		}
		if err := h.Close(); err != nil { // idempotent
			t.Fatal(err)
		}
		if lg.Alive() {
			t.Fatal("a line seen gone is alive again after Close")
		}
		if _, known := w.state(); known {
			t.Fatal("a watch still knows after Close")
		}
		if !l.Alive() {
			t.Fatal("an open connection not alive after Close")
		}
		c.Close()
		wait.Until(t, "the client gone, peeked after Close", func() bool { return !l.Alive() })
		if w.gone.Load() {
			t.Fatal("a watch was told after Close")
		}
		_, s2 := dialPair(t, ln)
		if h.watch(s2) != nil {
			t.Fatal("watched after Close")
		}
		w.unwatch() // after Close: nothing to do
		wg.unwatch()
	})
	t.Run("nil Close", func(t *testing.T) {
		var h *Hangups
		if err := h.Close(); err != nil {
			t.Fatal(err)
		}
	})
}

// Watches, unwatches, Alive and Close from many goroutines at once (for
// the race detector): every line ends told or peeked, none stays alive
// after its client left.
func TestHangupsConcurrent(t *testing.T) {
	h, ln := newTestHangups(t), loopback(t)
	const n = 64
	type pair struct {
		c *net.TCPConn
		l *eventLine
	}
	pairs := make([]pair, n)
	var wg sync.WaitGroup
	for i := range pairs {
		c, s := dialPair(t, ln)
		pairs[i].c = c
		wg.Go(func() { pairs[i].l = &eventLine{conn: s, watch: h.watch(s)} })
	}
	wg.Wait()
	for i, p := range pairs {
		wg.Go(func() {
			if i%2 == 0 {
				p.c.Close()
				wait.Until(t, "a line not alive", func() bool { return !p.l.Alive() })
			} else {
				p.l.Alive()
				p.l.End(nil)
			}
		})
		if i == n/2 {
			wg.Go(func() { h.Close() })
		}
	}
	wg.Wait()
}

// The id a watch is known by to the epoll instance survives the round
// trip through epoll_data, whatever its size.
func TestHangupsEventID(t *testing.T) {
	for _, id := range []uint64{0, 1, 1<<31 - 1, 1 << 31, 1<<32 - 1, 1 << 32, 1<<64 - 1} {
		var ev unix.EpollEvent
		setEventID(&ev, id)
		if got := eventID(&ev); got != id {
			t.Errorf("id %d came back %d", id, got)
		}
	}
}

// watching is how many connections are watched (for the tests).
func (h *Hangups) watching() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.watches)
}
