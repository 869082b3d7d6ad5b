//go:build linux

package main

import (
	"net"
	"time"

	"golang.org/x/sys/unix"
)

// setUserTimeout sets c's TCP_USER_TIMEOUT (milliseconds) to d, and its
// keepalive probes to what fits within d (keepAliveWithin).
func setUserTimeout(c *net.TCPConn, d time.Duration) error {
	raw, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := raw.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT, int(d.Milliseconds()))
	}); err != nil {
		return err
	}
	if serr != nil {
		return serr
	}
	return c.SetKeepAliveConfig(keepAliveWithin(d))
}

// keepAliveWithin is the keepalive of a connection whose TCP_USER_TIMEOUT
// is d. With the timeout set, Linux drops an idle connection once nothing
// was received for d and a probe is unanswered, whatever the probe count:
// with Go's keepalive (first probe after 15 s idle, then every 15 s) a
// timeout of 30 s leaves one probe, and one lost packet (the probe or its
// answer, on a phone's lossy network) drops a live client's keep-alive
// connection. So the first probe goes after half of d (15 s at most, Go's
// default), and the next ones a fifth of the rest apart (whole seconds, as
// the kernel counts them; 15 s at most): about five probes answer for a
// live client before the timeout, which still drops a vanished one within
// d. Count is what fits, up to the kernel's 127 (it ignores the count
// while the timeout is set).
func keepAliveWithin(d time.Duration) net.KeepAliveConfig {
	idle := min(max(d/2, time.Second), 15*time.Second).Truncate(time.Second)
	interval := min(max((d-idle)/5, time.Second), 15*time.Second).Truncate(time.Second)
	count := min(max(int((d-idle)/interval), 1), 127)
	return net.KeepAliveConfig{Enable: true, Idle: idle, Interval: interval, Count: count}
}
