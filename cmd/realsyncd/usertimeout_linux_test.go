//go:build linux

package main

import (
	"errors"
	"log/slog"
	"net"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Every connection the API's listener accepts carries
// REALSYNC_TCP_USER_TIMEOUT as its TCP_USER_TIMEOUT (in milliseconds);
// with 0 the listener is left as it is, and the connection has the
// kernel's (0).
func TestListenerSetsUserTimeout(t *testing.T) {
	for _, d := range []time.Duration{2500 * time.Millisecond, 0} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		wrapped := withUserTimeout(ln, d, slog.Default())
		if d == 0 && wrapped != ln {
			t.Fatal("REALSYNC_TCP_USER_TIMEOUT=0 wraps the listener")
		}
		client, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer client.Close()
		raw := acceptSocket(t, wrapped)
		ms := getsockopt(t, raw, func(fd int) (int, error) { return unix.GetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT) })
		if ms != int(d.Milliseconds()) {
			t.Errorf("timeout %v: the accepted connection's TCP_USER_TIMEOUT is %d ms", d, ms)
		}
	}
}

// acceptSocket accepts a connection on ln, closed when t ends, and returns
// its socket, to read its options.
func acceptSocket(t *testing.T, ln net.Listener) syscall.RawConn {
	t.Helper()
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	raw, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// getsockopt reads an option of raw's socket with get.
func getsockopt[T any](t *testing.T, raw syscall.RawConn, get func(fd int) (T, error)) T {
	t.Helper()
	var v T
	var err error
	if cerr := raw.Control(func(fd uintptr) { v, err = get(int(fd)) }); cerr != nil {
		t.Fatal(cerr)
	}
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// The keepalive of a connection with a user timeout fits several probes
// within it (whole seconds), so one lost probe does not drop a live idle
// client (TestUserTimeoutKeepsIdleClientPastALostProbe); at the default
// 30 s: the first after 15 s idle, then every 3 s.
func TestKeepAliveWithin(t *testing.T) {
	for _, tc := range []struct {
		d, idle, interval time.Duration
		count             int
	}{
		{30 * time.Second, 15 * time.Second, 3 * time.Second, 5},
		{6 * time.Second, 3 * time.Second, time.Second, 3},
		{2500 * time.Millisecond, time.Second, time.Second, 1},
		{time.Second, time.Second, time.Second, 1},
		{time.Hour, 15 * time.Second, 15 * time.Second, 127},
	} {
		got := keepAliveWithin(tc.d)
		if !got.Enable || got.Idle != tc.idle || got.Interval != tc.interval || got.Count != tc.count {
			t.Errorf("timeout %v: keepalive %+v, want idle %v, interval %v, count %d", tc.d, got, tc.idle, tc.interval, tc.count)
		}
	}
	// the kernel takes each of them, from the lowest to the highest timeout
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for _, d := range []time.Duration{minUserTimeout, 30 * time.Second, maxUserTimeout} {
		client, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		c, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		if err := setUserTimeout(c.(*net.TCPConn), d); err != nil {
			t.Errorf("timeout %v: %v", d, err)
		}
		c.Close()
		client.Close()
	}
}

// A client that stops reading but still acknowledges (its receive window
// shut) is dropped by the user timeout too, once the window stays shut
// that long (Linux applies it to zero-window probes, since 5.11): the
// server's write fails with ETIMEDOUT, before the write deadline, however
// much of the socket buffer is left.
func TestUserTimeoutDropsClientThatStopsReading(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	wrapped := withUserTimeout(ln, time.Second, slog.Default())
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close() // open, never read
	c, err := wrapped.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.SetWriteDeadline(time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64<<10)
	for {
		if _, err = c.Write(buf); err != nil {
			break
		}
	}
	if !errors.Is(err, syscall.ETIMEDOUT) {
		t.Fatalf("writing to a client that stopped reading: %v, want the user timeout's ETIMEDOUT", err)
	}
}
