package api

import (
	"net"
	"syscall"
)

// peerClosed reports whether the peer of c closed its end (or the
// connection failed), by peeking at one byte without blocking: a
// connection with nothing to read is open; end of file or an error means
// it is gone. Bytes the client sent count as open.
func peerClosed(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return true
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
