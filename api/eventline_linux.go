package api

import (
	"errors"
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// writeNow writes bufs to c with one writev that does not wait for the
// connection, and returns how many bytes went out: fewer than all (none
// included) when the socket's send buffer is full.
func writeNow(c net.Conn, bufs ...[]byte) (int, error) {
	rc, err := rawConn(c)
	if rc == nil {
		return 0, err
	}
	var n int
	var werr error
	err = rc.Write(func(fd uintptr) bool {
		for {
			n, werr = unix.Writev(int(fd), bufs)
			if werr != unix.EINTR {
				break
			}
		}
		if errors.Is(werr, unix.EAGAIN) {
			n, werr = 0, nil
		}
		return true // never wait: the caller's drain does
	})
	if err == nil {
		err = werr
	}
	return max(n, 0), err
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
