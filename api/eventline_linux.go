package api

import (
	"errors"
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// nowWriter writes a line's pieces with one writev that does not wait for
// the connection. It keeps the connection's raw form and the callback it
// runs, so that a write allocates nothing.
type nowWriter struct {
	raw  syscall.RawConn
	bufs [][]byte
	n    int
	err  error
	call func(fd uintptr) bool // w.writev, bound once
}

// write writes bufs to c and returns how many bytes went out: fewer than
// all (none included) when the socket's send buffer is full.
func (w *nowWriter) write(c net.Conn, bufs [][]byte) (int, error) {
	if w.raw == nil {
		rc, err := rawConn(c)
		if rc == nil {
			return 0, err
		}
		w.raw, w.call = rc, w.writev
	}
	w.bufs = bufs
	err := w.raw.Write(w.call)
	n, werr := w.n, w.err
	w.bufs, w.n, w.err = nil, 0, nil
	if err == nil {
		err = werr
	}
	return max(n, 0), err
}

// writev is the write on descriptor fd: never waits (the caller's drain
// does).
func (w *nowWriter) writev(fd uintptr) bool {
	for {
		w.n, w.err = unix.Writev(int(fd), w.bufs)
		if w.err != unix.EINTR {
			break
		}
	}
	if errors.Is(w.err, unix.EAGAIN) {
		w.n, w.err = 0, nil
	}
	return true
}

// rawConn is c's raw connection: nil with no error when c has none (not a
// socket of this process), nil with the error when it could not be had
// (closed).
func rawConn(c net.Conn) (syscall.RawConn, error) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil, nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil, err
	}
	return rc, nil
}

// peerClosed reports whether the peer of c closed its end (or the
// connection failed), by peeking at one byte without blocking: a
// connection with nothing to read is open; end of file or an error means
// it is gone. Bytes the client sent count as open.
func peerClosed(c net.Conn) bool {
	rc, err := rawConn(c)
	if rc == nil {
		return err != nil
	}
	closed := false
	var b [1]byte
	err = rc.Read(func(fd uintptr) bool {
		n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		switch err {
		case nil:
			closed = n == 0
		case syscall.EAGAIN, syscall.EINTR:
		default:
			closed = true
		}
		return true
	})
	return closed || err != nil
}
