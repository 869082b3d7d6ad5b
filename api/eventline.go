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
// it: a client that went away is noticed by Alive (a read that does not
// block) or by a failed write.
type eventLine struct {
	conn     net.Conn
	deadline time.Time   // of writes, moved at most once a second
	size     [18]byte    // the chunk's size line
	bufs     net.Buffers // size line, frames, CRLF
	parts    [3][]byte

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

var _ sse.Line = (*eventLine)(nil)

// Send writes frames as one chunk within 9 to 10 s (streamWriteTimeout).
func (l *eventLine) Send(frames []byte) error {
	if len(frames) == 0 {
		return nil // an empty chunk would end the body
	}
	if now := time.Now(); l.deadline.Sub(now) < streamWriteTimeout-time.Second {
		l.deadline = now.Add(streamWriteTimeout)
		if err := l.conn.SetWriteDeadline(l.deadline); err != nil {
			return err
		}
	}
	size := append(strconv.AppendInt(l.size[:0], int64(len(frames)), 16), crlf...)
	l.bufs = append(net.Buffers(l.parts[:0]), size, frames, crlf)
	_, err := l.bufs.WriteTo(l.conn)
	l.parts = [3][]byte{}
	return err
}

// Alive reports whether the client has not closed its end.
func (l *eventLine) Alive() bool { return !peerClosed(l.conn) }

// End writes final as a last chunk, then the end of the body, within
// endWriteTimeout, and closes the connection.
func (l *eventLine) End(final []byte) {
	var b []byte
	if len(final) > 0 {
		b = strconv.AppendInt(b, int64(len(final)), 16)
		b = append(b, crlf...)
		b = append(b, final...)
		b = append(b, crlf...)
	}
	b = append(b, "0\r\n\r\n"...)
	l.conn.SetWriteDeadline(time.Now().Add(endWriteTimeout))
	l.conn.Write(b)
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
