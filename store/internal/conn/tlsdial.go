package conn

import (
	"context"
	"crypto/tls"
	"net"
	"syscall"
	"time"
)

// tlsDialer dials Redis over TLS (rediss://) as go-redis does, and lets
// go-redis' pool see the TCP socket under the TLS connection. The pool
// checks each connection before it hands it out (a peek at the socket: a
// connection Redis closed, after a restart or an idle timeout, is dropped
// and another used), but only one that shows its socket (syscall.Conn),
// which a *tls.Conn does not: a script run, sent once (redisx.sentOnce),
// then failed on a dead connection with 503. The peek does not read: data
// waiting on an idle connection makes the pool drop it. With RESP3 push
// notifications the pool would read what waits through TLS; the store
// speaks RESP2 unless the URL says otherwise, and then this is not used.
func tlsDialer(cfg *tls.Config, timeout time.Duration) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		// keepalive as go-redis' own dialer: probes after 30 s idle, so a
		// NAT or load balancer does not drop an idle pooled connection
		d := net.Dialer{Timeout: timeout, KeepAliveConfig: net.KeepAliveConfig{Enable: true,
			Idle: 30 * time.Second, Interval: 5 * time.Second, Count: 3}}
		raw, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		c := tls.Client(raw, cfg)
		raw.SetDeadline(time.Now().Add(timeout))
		if err := c.HandshakeContext(ctx); err != nil {
			raw.Close()
			// a connection never made: nothing was sent on it (redisx.NotSent)
			return nil, &net.OpError{Op: "dial", Net: network, Addr: raw.RemoteAddr(), Err: err}
		}
		raw.SetDeadline(time.Time{})
		sc, ok := raw.(syscall.Conn)
		if !ok {
			return c, nil
		}
		return &tlsConn{Conn: c, raw: sc}, nil
	}
}

// tlsConn is a TLS connection that shows its TCP socket (tlsDialer).
type tlsConn struct {
	*tls.Conn
	raw syscall.Conn
}

// SyscallConn is the TCP socket's.
func (c *tlsConn) SyscallConn() (syscall.RawConn, error) { return c.raw.SyscallConn() }
