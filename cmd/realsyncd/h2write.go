package main

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// gatheredConn is an API connection whose writes are gathered once it
// speaks HTTP/2 (gather): a write queues its bytes and returns, and a
// goroutine that runs only while bytes wait sends all that waits in one
// system call, then what queued meanwhile, in order.
//
// Why: x/net's HTTP/2 server flushes its connection whenever its queue of
// frames runs dry, and with event streams, each written by its own
// handler, that is after nearly every frame: one write system call per
// event and stream, a quarter of the server's CPU in a fan-out over h2c.
// Gathered, the frames that come while one write is on the wire go out
// with the next: 2 000 h2c streams at 100 patches/s made a fifth of the
// write calls, at about a sixth less server CPU per event
// (docs/PERFORMANCE-HISTORY.md, "HTTP/2 writes gathered"). No write waits
// for a timer: an idle connection's next write goes out at once.
//
// An HTTP/1.1 connection, and one not known to speak HTTP/2 yet, is
// written as it is: a hijacked stream's Line keeps its own deadlines and
// non-blocking writes. An idle gathered connection holds no goroutine and
// no buffer.
//
// Limits: once maxGathered bytes wait, a write waits for room; about 64
// KiB wait then, and one send on the wire, where x/net alone held its 4
// KiB buffer. A send that makes no progress for sendWait fails (a client
// that stopped reading its socket: the connection ends, every stream on
// it, within 10 to 20 s). Without that bound such a client held the
// connection's writes, its streams and a shutdown up until
// TCP_USER_TIMEOUT dropped it (30 s; never with 0, or off Linux): the
// stall watch's reset of a stream is a frame, queued behind the writes
// that wait (a tester's find: a stream held 120 s, `slow` never said, a
// shutdown held its whole timeout). A failed send is returned by the
// writes that follow. A write deadline bounds the sends too; one that has
// passed applies once what was written before it is sent
// (SetWriteDeadline). A closed connection sends what waits, within
// closeFlushWait, then closes (Close).
//
// Methods of the embedded *net.TCPConn other than those below (CloseWrite,
// File, SyscallConn, net.Buffers' writev) go around the queue: neither
// x/net nor crypto/tls uses them on an HTTP/2 connection; HTTP/1.1's do,
// and they pass through as ever.
type gatheredConn struct {
	*net.TCPConn
	on atomic.Bool // gathered (gather ran)
	// flushing counts the closed connections whose last sends are under
	// way (the listener's; nil: not counted)
	flushing *atomic.Int64

	mu      sync.Mutex
	room    sync.Cond // a writer waits for room, a passed deadline for the sender
	buf     *[]byte   // waiting to be sent (gatherPool's), nil when none
	sending bool      // a sender runs
	err     error     // the first failed send's
	closed  bool
	cutoff  bool      // a passed write deadline was set: writes fail
	wdl     time.Time // the write deadline set last, when not passed (zero: none)
	flushBy time.Time // a close's or a passed deadline's bound of the sends (zero: none)
	armed   time.Time // the write deadline the socket holds, gathered
	// sendWait: a send that makes no progress this long fails
	sendWait time.Duration
	// sends counts the writes on the wire, for tests
	sends atomic.Int64
}

// maxGathered is how many bytes a gathered connection queues before its
// writers wait (x/net's own buffer is 4 KiB); one send may be on the wire
// besides.
const maxGathered = 64 << 10

// gatherPool holds the buffers of the gathered connections' queues.
var gatherPool = sync.Pool{New: func() any { b := make([]byte, 0, 4<<10); return &b }}

// maxPooledGather is the largest buffer given back to gatherPool: larger
// ones, grown by a burst (streams' openings, their snapshots), go to the
// collector. With 128 KiB, 10 000 h2c streams held about 1 KiB a stream
// more once open (docs/PERFORMANCE-HISTORY.md, "HTTP/2 writes gathered").
const maxPooledGather = 16 << 10

// closeFlushWait bounds the sends of what waits when a gathered
// connection closes, or a passed write deadline is set.
const closeFlushWait = time.Second

// sendWait is how long a gathered connection's send may go without
// progress: the write timeout of an HTTP/1.1 stream's frames
// (api.streamWriteTimeout), for a connection whose client stopped
// reading its socket.
const sendWait = 10 * time.Second

func newGatheredConn(c *net.TCPConn, flushing *atomic.Int64) *gatheredConn {
	g := &gatheredConn{TCPConn: c, flushing: flushing, sendWait: sendWait}
	g.room.L = &g.mu
	return g
}

// gather has c's writes gathered from now on. The caller makes no write
// meanwhile (an HTTP/2 server's hook, before it serves the connection).
func (c *gatheredConn) gather() { c.on.Store(true) }

func (c *gatheredConn) Write(p []byte) (int, error) {
	if !c.on.Load() {
		return c.TCPConn.Write(p)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.err == nil && !c.closed && !c.cutoff && c.buf != nil && len(*c.buf) >= maxGathered {
		c.room.Wait()
	}
	switch {
	case c.closed:
		return 0, net.ErrClosed
	case c.err != nil:
		return 0, c.err
	case c.cutoff:
		return 0, os.ErrDeadlineExceeded
	}
	if c.buf == nil {
		c.buf = gatherPool.Get().(*[]byte)
	}
	*c.buf = append(*c.buf, p...)
	if !c.sending {
		c.sending = true
		go c.send()
	}
	return len(p), nil
}

// send writes what waits, and what queued meanwhile, until nothing waits
// or a send failed; it closes the connection when it was closed meanwhile.
func (c *gatheredConn) send() {
	c.mu.Lock()
	for c.buf != nil && c.err == nil {
		out := c.buf
		c.buf = nil
		c.room.Broadcast()
		c.mu.Unlock()
		err := c.write(*out)
		if cap(*out) <= maxPooledGather {
			*out = (*out)[:0]
			gatherPool.Put(out)
		}
		c.mu.Lock()
		if err != nil {
			c.err = err
			// x/net's reader ends the connection now, not at its next
			// write (a quiet connection's heartbeat, 15 s on)
			c.TCPConn.SetReadDeadline(time.Unix(1, 0))
		}
	}
	c.buf = nil // what a failed send left
	c.sending = false
	c.room.Broadcast()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		c.TCPConn.Close()
		if c.flushing != nil {
			c.flushing.Add(-1)
		}
	}
}

// write sends b whole: each system call bounded by sendWait and the
// deadlines set (sendDeadline), tried again after a timeout that sent
// some of it, unless a close or a passed deadline bounds the sends (as
// x/net's writeWithByteTimeout, which its WriteByteTimeout would use). The
// socket's deadline is moved when an earlier one is due, when it has
// passed, or once it lags a second behind: setting one costs about as much as a small write
// (5.2 µs a 200-byte loopback write, 6.5 µs with a deadline set before
// it, a reviewer's figures), so a send stalled for 9 to 10 s fails.
func (c *gatheredConn) write(b []byte) error {
	for {
		c.mu.Lock()
		if d := c.sendDeadline(); !c.armed.After(time.Now()) || d.Before(c.armed) || d.Sub(c.armed) > time.Second {
			c.arm(d) // none armed, or passed (a timeout that sent some), an earlier one due, or a second behind
		}
		c.mu.Unlock()
		n, err := c.TCPConn.Write(b)
		c.sends.Add(1)
		b = b[n:]
		if err == nil || n == 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
			return err
		}
		c.mu.Lock()
		bounded := !c.flushBy.IsZero() || (!c.wdl.IsZero() && !time.Now().Before(c.wdl))
		c.mu.Unlock()
		if bounded {
			return err
		}
	}
}

// arm sets the socket's write deadline to d. c.mu is held.
func (c *gatheredConn) arm(d time.Time) error {
	c.armed = d
	return c.TCPConn.SetWriteDeadline(d)
}

// sendDeadline is the deadline of a send's next system call: sendWait
// from now, or the write deadline set, or a close's bound, whichever
// comes first. c.mu is held.
func (c *gatheredConn) sendDeadline() time.Time {
	d := time.Now().Add(c.sendWait)
	for _, t := range []time.Time{c.wdl, c.flushBy} {
		if !t.IsZero() && t.Before(d) {
			d = t
		}
	}
	return d
}

// SetWriteDeadline sets the deadline of c's sends. Gathered, one that has
// passed ("the writes from now on fail", as crypto/tls's Close sets once
// its close_notify is written) fails the writes after it at once, and
// applies once what was written before it is sent, within the deadline
// set before it (crypto/tls's: 5 s), or closeFlushWait without one: that
// goes out as it would have on an ungathered connection. A later
// deadline, or none, lets writes through again.
func (c *gatheredConn) SetWriteDeadline(t time.Time) error {
	if !c.on.Load() {
		return c.TCPConn.SetWriteDeadline(t)
	}
	c.mu.Lock()
	if t.IsZero() || t.After(time.Now()) {
		c.cutoff, c.wdl, c.flushBy = false, t, time.Time{}
		defer c.mu.Unlock()
		if !c.sending {
			return nil // the sender sets it before its system calls
		}
		return c.arm(c.sendDeadline())
	}
	c.cutoff = true
	c.room.Broadcast() // writers waiting for room fail
	if c.sending {
		c.flushBy = c.wdl
		if c.flushBy.IsZero() {
			c.flushBy = time.Now().Add(closeFlushWait)
		}
		c.arm(c.sendDeadline())
		for c.sending {
			c.room.Wait()
		}
	}
	defer c.mu.Unlock()
	return c.arm(t)
}

// SetDeadline is SetReadDeadline and SetWriteDeadline.
func (c *gatheredConn) SetDeadline(t time.Time) error {
	if err := c.TCPConn.SetReadDeadline(t); err != nil {
		return err
	}
	return c.SetWriteDeadline(t)
}

// ReadFrom copies r to c through Write once c is gathered (TCPConn's would
// write around the queue).
func (c *gatheredConn) ReadFrom(r io.Reader) (int64, error) {
	if !c.on.Load() {
		return c.TCPConn.ReadFrom(r)
	}
	return io.Copy(struct{ io.Writer }{c}, r)
}

// Close closes c: at once when nothing waits to be sent, else once it is
// sent (within closeFlushWait) by the sender, which the caller does not
// wait for (net/http's Server.Close closes its connections one after
// another; a shutdown waits for the last sends: gatheringListener's
// lastSends). Reads end at once, and writes fail. A second Close leaves
// the first's sends be.
func (c *gatheredConn) Close() error {
	if !c.on.Load() {
		return c.TCPConn.Close()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	c.room.Broadcast() // writers waiting for room fail
	if !c.sending {
		return c.TCPConn.Close()
	}
	c.flushBy = time.Now().Add(closeFlushWait)
	c.arm(c.sendDeadline())
	c.TCPConn.SetReadDeadline(time.Unix(1, 0))
	if c.flushing != nil {
		c.flushing.Add(1)
	}
	return nil
}

// gatheringListener wraps each TCP connection it accepts in a
// gatheredConn, so that the HTTP/2 servers' hooks (gatherHTTP2) can have
// its writes gathered once it speaks HTTP/2.
type gatheringListener struct {
	net.Listener
	flushing atomic.Int64 // closed connections whose last sends are under way
}

func (l *gatheringListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok && err == nil {
		return newGatheredConn(tc, &l.flushing), nil
	}
	return c, err
}

// lastSends waits, within ctx, until the connections closed so far have
// sent what waited (each within closeFlushWait); reports whether they did.
func (l *gatheringListener) lastSends(ctx context.Context) bool {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for l.flushing.Load() > 0 {
		select {
		case <-ctx.Done():
			return false
		case <-tick.C:
		}
	}
	return true
}

// http2Protos are the keys of an http.Server's HTTP/2 hooks: h2 by ALPN,
// and h2c by prior knowledge (net/http's key).
var http2Protos = []string{"h2", "unencrypted_http2"}

// gatherHTTP2 wraps srv's HTTP/2 hooks (h2 by ALPN, h2c) so that the
// connection handed to them has its writes gathered, and ln so that its
// connections can be: it returns the listener to serve srv on, and what
// waits, within a context, for the last sends of the connections closed
// (reporting whether they ended). ln itself, and a wait that has nothing
// to wait for, when srv serves no HTTP/2.
func gatherHTTP2(srv *http.Server, ln net.Listener) (net.Listener, func(context.Context) bool) {
	wrapped := false
	for _, proto := range http2Protos {
		serve := srv.TLSNextProto[proto]
		if serve == nil {
			continue
		}
		wrapped = true
		srv.TLSNextProto[proto] = func(s *http.Server, c *tls.Conn, h http.Handler) {
			if g := gatheredOf(c); g != nil {
				g.gather()
			}
			serve(s, c, h)
		}
	}
	if !wrapped {
		return ln, func(context.Context) bool { return true }
	}
	gl := &gatheringListener{Listener: ln}
	return gl, gl.lastSends
}

// gatheredOf finds the gatheredConn under c: its connection over TLS, or
// the unencrypted one net/http hands over as a *tls.Conn for h2c.
func gatheredOf(c *tls.Conn) *gatheredConn {
	nc := c.NetConn()
	if u, ok := nc.(interface{ UnencryptedNetConn() net.Conn }); ok {
		nc = u.UnencryptedNetConn()
	}
	g, _ := nc.(*gatheredConn)
	return g
}
