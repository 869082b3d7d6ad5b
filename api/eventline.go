package api

import (
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/realsync/realsync/sse"
)

// endWriteTimeout bounds the last write of a taken-over stream (its last
// frame and the end of the body): a client that stopped reading must not
// hold up its stream's end, nor a shutdown.
const endWriteTimeout = time.Second

// crlf ends a chunk's size line and its data.
var crlf = []byte("\r\n")

// eventLine is an HTTP/1.1 event stream's connection taken over from
// net/http (sse.Line): the response headers (Transfer-Encoding: chunked,
// Connection: close) are out, and each Send is one chunk, written with
// writev from the frames as they are. No reader and no buffer stay with
// it: a client that went away is noticed by Alive (its watch's flag, set
// by the server's Hangups, or else a read that does not block) or by a
// failed write.
type eventLine struct {
	conn net.Conn
	// watch: the connection is watched by the server's Hangups (set
	// before the hub has the line, never changed); nil: Alive peeks
	watch *hangupWatch
	// deadline is the connection's write deadline: none when the line is
	// made (net/http's Hijack clears a connection's deadlines), then
	// set by Send (moved at most once a second) and End only; TrySend's
	// writes never wait and need none, and clear one that is about to
	// pass. Set the connection's deadline through it only.
	deadline time.Time
	now      nowWriter   // TrySend's
	size     [18]byte    // the chunk's size line
	bufs     net.Buffers // size line, frames, CRLF
	parts    [3][]byte

	// rest is what a TrySend could not write at once (a copy): the next
	// write starts with it.
	rest []byte

	mu    sync.Mutex
	ended bool
	after func() // the request's metrics and access line (observe)
}

// onEnd runs f once the line has ended: now if it has.
func (l *eventLine) onEnd(f func()) {
	l.mu.Lock()
	ended := l.ended
	if !ended {
		l.after = f
	}
	l.mu.Unlock()
	if ended {
		f()
	}
}

var (
	_ sse.Line           = (*eventLine)(nil)
	_ sse.TrySender      = (*eventLine)(nil)
	_ sse.HangupNotifier = (*eventLine)(nil)
)

// Send writes what a TrySend left, then frames as one chunk, within 9 to
// 10 s (streamWriteTimeout).
func (l *eventLine) Send(frames []byte) error {
	if len(frames) == 0 && len(l.rest) == 0 {
		return nil // an empty chunk would end the body
	}
	if err := l.extend(); err != nil {
		return err
	}
	if len(l.rest) > 0 {
		if _, err := l.conn.Write(l.rest); err != nil {
			return err
		}
		l.rest = nil
	}
	if len(frames) == 0 {
		return nil
	}
	l.bufs = append(net.Buffers(l.parts[:0]), l.sizeLine(frames), frames, crlf)
	_, err := l.bufs.WriteTo(l.conn)
	l.parts = [3][]byte{}
	return err
}

// extend moves Send's write deadline streamWriteTimeout ahead, at most once
// a second: every write must find it in the future (a deadline past fails
// even a write that would not wait). TrySend's writes need none: they
// leave it as it is, or clear it within a second of its end, so that the
// streams written by their room's worker alone, most of them, cost no
// timer change per write, and a slow one at most one a second.
func (l *eventLine) extend() error {
	if now := time.Now(); l.deadline.Sub(now) < streamWriteTimeout-time.Second {
		l.deadline = now.Add(streamWriteTimeout)
		return l.conn.SetWriteDeadline(l.deadline)
	}
	return nil
}

// sizeLine is the size line of a chunk of frames.
func (l *eventLine) sizeLine(frames []byte) []byte {
	return append(strconv.AppendInt(l.size[:0], int64(len(frames)), 16), crlf...)
}

// TrySend writes frames as one chunk without waiting for the connection
// (one writev that does not block, with no deadline and no allocation);
// what the connection did not take is kept in rest for the next Send.
// With a rest already kept it writes nothing and keeps frames too.
func (l *eventLine) TrySend(frames []byte) (bool, error) {
	if len(frames) == 0 {
		return len(l.rest) == 0, nil
	}
	size := l.sizeLine(frames)
	n := 0
	if len(l.rest) == 0 {
		var err error
		if !l.deadline.IsZero() && time.Until(l.deadline) < time.Second {
			// a deadline Send set would fail this write once past
			l.deadline = time.Time{}
			err = l.conn.SetWriteDeadline(l.deadline)
		}
		if err == nil {
			l.parts = [3][]byte{size, frames, crlf}
			n, err = l.now.write(l.conn, l.parts[:])
			l.parts = [3][]byte{}
		}
		if err != nil {
			return false, err
		}
	}
	if n == len(size)+len(frames)+len(crlf) {
		return true, nil
	}
	for _, p := range [][]byte{size, frames, crlf} {
		k := min(n, len(p))
		l.rest = append(l.rest, p[k:]...)
		n -= k
	}
	return false, nil
}

// Alive reports whether the client has not closed its end: what the
// watch knows when it knows (no system call), else by a peek
// (peerClosed).
func (l *eventLine) Alive() bool {
	if gone, known := l.watch.state(); known {
		return !gone
	}
	return !peerClosed(l.conn)
}

// OnHangup has f called once the server's Hangups is told that the
// client hung up (sse.HangupNotifier): at once, rather than at the hub's
// next sweep. A line the Hangups does not watch never calls it (its sweep
// peeks).
func (l *eventLine) OnHangup(f func()) { l.watch.onGone(f) }

// End writes final as a last chunk, then the end of the body, within
// endWriteTimeout, and closes the connection, unwatched first (its
// descriptor is another connection's once closed).
func (l *eventLine) End(final []byte) {
	b := l.rest // the end of a chunk begun
	l.rest = nil
	if len(final) > 0 {
		b = strconv.AppendInt(b, int64(len(final)), 16)
		b = append(b, crlf...)
		b = append(b, final...)
		b = append(b, crlf...)
	}
	b = append(b, "0\r\n\r\n"...)
	l.conn.SetWriteDeadline(time.Now().Add(endWriteTimeout))
	l.conn.Write(b)
	l.watch.unwatch()
	l.conn.Close()
	l.mu.Lock()
	l.ended = true
	f := l.after
	l.after = nil
	l.mu.Unlock()
	if f != nil {
		f()
	}
}
