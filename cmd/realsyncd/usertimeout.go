package main

import (
	"log/slog"
	"net"
	"sync"
	"time"
)

// userTimeoutListener sets TCP_USER_TIMEOUT (REALSYNC_TCP_USER_TIMEOUT) on
// every connection it accepts: the longest time data written to the
// connection may stay unacknowledged before the kernel drops it, so the
// server's next read or write on it fails and the request ends.
//
// It is what ends the event stream of a client that vanished without
// closing its connection (a phone that changed network: a half-open
// connection). TCP keepalive (net/http's default, 15 s) never fires on
// such a stream: keepalive probes go only while nothing is unacknowledged,
// and the stream's `: ping` heartbeats are. Without the timeout the
// heartbeats only fill the kernel's send buffer, and the kernel gives up
// after its retransmissions (tcp_retries2, about 15 minutes) while the
// stream keeps its presence lease, the user online and in the room. With
// it, the stream ends within about REALSYNC_SSE_HEARTBEAT + the timeout,
// and its lease is released as for a closed connection. The timeout also
// bounds an idle connection's unanswered keepalive probes, so the
// connection's probes are spaced to fit several within it
// (keepAliveWithin). A client that
// stops reading but still acknowledges is dropped too once its receive
// window stayed shut for the timeout (Linux 5.11 and later time
// zero-window probes out), before the stream's write deadline when the
// socket buffer is large.
//
// A TLS or h2c listener wraps this one, so every protocol gets it. On
// other systems than Linux it does nothing.
type userTimeoutListener struct {
	net.Listener
	timeout time.Duration
	log     *slog.Logger
	warn    sync.Once
}

// withUserTimeout is ln setting timeout on each connection it accepts;
// ln itself for 0 (the kernel's own behaviour).
func withUserTimeout(ln net.Listener, timeout time.Duration, log *slog.Logger) net.Listener {
	if timeout <= 0 {
		return ln
	}
	return &userTimeoutListener{Listener: ln, timeout: timeout, log: log}
}

// Accept accepts a connection and sets its user timeout; a connection
// where that fails is served as it is (logged once).
func (l *userTimeoutListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return c, err
	}
	if tc, ok := c.(*net.TCPConn); ok {
		if err := setUserTimeout(tc, l.timeout); err != nil {
			l.warn.Do(func() { l.log.Warn("REALSYNC_TCP_USER_TIMEOUT not set on a connection", "err", err) })
		}
	}
	return c, nil
}
