package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/internal/wait"
)

// tcpPair is a loopback TCP connection: the server's end gathered (not
// yet gathering: gather it), and the client's end.
func tcpPair(t *testing.T) (*gatheredConn, *net.TCPConn) {
	_, g, client := gatheredPair(t)
	return g, client
}

// gatheredPair is tcpPair with its listener, which counts the closed
// connections' last sends (closed when the test ends, as the ends).
func gatheredPair(t *testing.T) (*gatheringListener, *gatheredConn, *net.TCPConn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gl := &gatheringListener{Listener: ln}
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := gl.Accept()
		accepted <- c
	}()
	cc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	client := cc.(*net.TCPConn)
	g, ok := (<-accepted).(*gatheredConn)
	if !ok {
		t.Fatal("the gathering listener's connection is no gatheredConn")
	}
	t.Cleanup(func() { g.TCPConn.Close(); client.Close(); gl.Close() })
	return gl, g, client
}

// big is more than a loopback connection's socket buffers hold (Linux
// grows them up to 4 and 6 MiB): a write of it is not sent until its
// client reads.
const big = 32 << 20

// frames returns n numbered frames of varied sizes.
func frames(n int) [][]byte {
	fs := make([][]byte, n)
	for i := range fs {
		fs[i] = []byte(fmt.Sprintf("frame %d %s\n", i, strings.Repeat("x", i%97)))
	}
	return fs
}

// A gathered connection's writes return once queued and go out in their
// order; those made while a send is on the wire go out together, in one
// system call: here a write larger than the sockets' buffers (big), which
// its client does not read yet, holds the send, 500 frames queue behind
// it, and once the client reads the frames go in one send. Close sends
// what waits, then closes; a write after it fails.
func TestGatheredConnSendsInOrderAndTogether(t *testing.T) {
	g, client := tcpPair(t)
	g.gather()
	want := bytes.Repeat([]byte("b"), big)
	if n, err := g.Write(want); n != big || err != nil {
		t.Fatalf("write of %d bytes: %d, %v", big, n, err)
	}
	for _, f := range frames(500) {
		if _, err := g.Write(f); err != nil {
			t.Fatal(err)
		}
		want = append(want, f...)
	}
	got := make([]byte, len(want))
	if _, err := io.ReadFull(client, got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("read %d bytes, not the %d written in their order", len(got), len(want))
	}
	if n := g.sends.Load(); n != 2 {
		t.Errorf("%d sends, want 2: the big write, then the 500 frames queued behind it", n)
	}
	// what waits when Close comes is sent first
	want = nil
	for _, f := range frames(100) {
		if _, err := g.Write(f); err != nil {
			t.Fatal(err)
		}
		want = append(want, f...)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	if got, err := io.ReadAll(client); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("after Close: read %d bytes (%v), want the %d written before it", len(got), err, len(want))
	}
	if _, err := g.Write([]byte("late")); !errors.Is(err, net.ErrClosed) {
		t.Errorf("a write after Close: %v, want net.ErrClosed", err)
	}
}

// A gathered connection queues at most maxGathered bytes (and one write)
// while its client does not read: then its writes wait, so that a client
// that stopped reading holds the server's writes up; once it reads, every
// byte arrives. An idle connection holds no sender.
func TestGatheredConnWaitsForRoom(t *testing.T) {
	g, client := tcpPair(t)
	g.gather()
	if _, err := g.Write(bytes.Repeat([]byte("b"), big)); err != nil { // holds the send
		t.Fatal(err)
	}
	const chunk = 1 << 10
	var accepted atomic.Int64
	done := make(chan error, 1)
	go func() {
		for range 4 * maxGathered / chunk {
			if _, err := g.Write(bytes.Repeat([]byte("c"), chunk)); err != nil {
				done <- err
				return
			}
			accepted.Add(chunk)
		}
		done <- nil
	}()
	deadline := time.Now().Add(10 * time.Second)
	for accepted.Load() < maxGathered {
		if time.Now().After(deadline) {
			t.Fatalf("%d bytes queued in 10 s, want %d", accepted.Load(), maxGathered)
		}
		time.Sleep(time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // an unbounded queue takes the rest meanwhile
	if n := accepted.Load(); n > maxGathered+chunk {
		t.Fatalf("%d bytes queued while the client read nothing, want at most %d", n, maxGathered+chunk)
	}
	read := make(chan int64, 1)
	go func() {
		n, _ := io.Copy(io.Discard, client)
		read <- n
	}()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	wait.Within(t, 10*time.Second, "the sender's end", func() bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		return !g.sending && g.buf == nil
	})
	g.Close()
	if n := <-read; n != big+4*maxGathered {
		t.Errorf("the client read %d bytes, want %d", n, big+4*maxGathered)
	}
}

// A send that fails (the client reset the connection) fails the writes
// that follow, and Close, bounded, returns.
func TestGatheredConnFailsAfterAFailedSend(t *testing.T) {
	g, client := tcpPair(t)
	g.gather()
	client.SetLinger(0)
	client.Close() // a reset
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := g.Write([]byte("frame\n")); err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("writes to a reset connection still succeed after 10 s")
		}
		time.Sleep(time.Millisecond)
	}
	g.Close()
}

// A connection not gathered (HTTP/1.1) is written as it is: its write
// deadline fails the write itself, and no sender starts.
func TestNotGatheredConnWritesAsItIs(t *testing.T) {
	g, _ := tcpPair(t)
	g.SetWriteDeadline(time.Now().Add(-time.Second))
	var ne net.Error
	if _, err := g.Write([]byte("x")); !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("a write past its deadline: %v, want a timeout", err)
	}
	if g.sends.Load() != 0 || g.sending {
		t.Error("a connection not gathered sent through a sender")
	}
}

// The API server's HTTP/2 hooks gather the connections that speak HTTP/2,
// over h2c and over TLS (by ALPN); HTTP/1.1 connections, over TLS too, are
// not gathered.
func TestHTTP2ConnectionsGathered(t *testing.T) {
	cert, key, pool := redistest.SelfSigned(t)
	type connKey struct{}
	for _, tc := range []struct {
		name  string
		p     protocolSettings
		http2 bool
	}{
		{"h2c", protocolSettings{H2C: true}, true},
		{"HTTP/1.1 beside h2c", protocolSettings{H2C: true}, false},
		{"TLS, h2", protocolSettings{TLSCert: cert, TLSKey: key}, true},
		{"TLS, HTTP/1.1", protocolSettings{TLSCert: cert, TLSKey: key}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := &http.Server{ConnContext: func(ctx context.Context, c net.Conn) context.Context {
				if tlsc, ok := c.(*tls.Conn); ok {
					c = tlsc.NetConn()
				}
				return context.WithValue(ctx, connKey{}, c)
			}}
			if err := tc.p.configure(srv); err != nil {
				t.Fatal(err)
			}
			srv.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				g, _ := r.Context().Value(connKey{}).(*gatheredConn)
				fmt.Fprintf(w, "%d %v", r.ProtoMajor, g != nil && g.on.Load())
			})
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			gl, _ := gatherHTTP2(srv, ln) // as Run does
			if _, ok := gl.(*gatheringListener); !ok {
				t.Fatal("gatherHTTP2 found no HTTP/2 server")
			}
			go tc.p.serve(srv, gl)
			t.Cleanup(func() { srv.Close() })
			scheme := "http"
			if tc.p.TLS() {
				scheme = "https"
			}
			res, err := newH2Client(t, pool, tc.http2).Get(scheme + "://" + ln.Addr().String() + "/")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			want := "1 false"
			if tc.http2 {
				want = "2 true"
			}
			if string(body) != want {
				t.Errorf("protocol and gathered: %q, want %q", body, want)
			}
		})
	}
}

// A write deadline that has passed, set on a gathered connection (here
// by SetDeadline), fails the writes after it at once, not those before
// it, which are sent first within the deadline before it: crypto/tls's
// Close sets one 5 s ahead, writes its close_notify, then sets a passed
// one, then closes. A later deadline lets writes
// through again. Over TLS, what the HTTP/2 server wrote last and the
// close_notify reach the client.
func TestGatheredConnDeadlinePassedAfterItsWrites(t *testing.T) {
	g, client := tcpPair(t)
	g.gather()
	want := bytes.Repeat([]byte("b"), big) // on the wire when the deadline comes: its client reads nothing yet
	for _, f := range frames(100) {
		want = append(want, f...)
	}
	if _, err := g.Write(want); err != nil {
		t.Fatal(err)
	}
	g.SetDeadline(time.Now().Add(time.Minute)) // as crypto/tls's Close bounds its close_notify
	set := make(chan struct{})
	go func() {
		g.SetDeadline(time.Now()) // waits for the send on the wire
		close(set)
	}()
	wait.Within(t, 10*time.Second, "the passed deadline set", func() bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		return g.cutoff
	})
	var ne net.Error
	if _, err := g.Write([]byte("late")); !errors.As(err, &ne) || !ne.Timeout() {
		t.Errorf("a write after a passed deadline: %v, want a timeout", err)
	}
	read := make(chan []byte, 1)
	go func() {
		got, _ := io.ReadAll(client)
		read <- got
	}()
	select {
	case <-set:
	case <-time.After(10 * time.Second):
		t.Fatal("the passed deadline still waits for a send its client reads")
	}
	g.SetDeadline(time.Time{})
	g.TCPConn.SetReadDeadline(time.Time{})
	if _, err := g.Write([]byte("again")); err != nil {
		t.Errorf("a write once the deadline was lifted: %v", err)
	}
	want = append(want, "again"...)
	g.Close()
	if got := <-read; !bytes.Equal(got, want) {
		t.Errorf("the client read %d bytes, want the %d written outside the deadline", len(got), len(want))
	}

	// over TLS
	cert, key, pool := redistest.SelfSigned(t)
	pair, err := tls.LoadX509KeyPair(cert, key)
	if err != nil {
		t.Fatal(err)
	}
	g, client = tcpPair(t)
	srv := tls.Server(g, &tls.Config{Certificates: []tls.Certificate{pair}})
	cl := tls.Client(client, &tls.Config{RootCAs: pool, ServerName: "localhost"})
	shook := make(chan error, 1)
	go func() { shook <- cl.Handshake() }()
	if err := srv.Handshake(); err != nil {
		t.Fatal(err)
	}
	if err := <-shook; err != nil {
		t.Fatal(err)
	}
	g.gather()
	go func() {
		got, err := io.ReadAll(cl) // EOF: the close_notify came
		if err != nil {
			got = append(got, "; "+err.Error()...)
		}
		read <- got
	}()
	last := bytes.Repeat([]byte("t"), 1<<20)
	if _, err := srv.Write(last); err != nil {
		t.Fatal(err)
	}
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if got := <-read; !bytes.Equal(got, last) {
		t.Errorf("over TLS the client read %d bytes (%.60q), want the %d written before Close and its close_notify", len(got), got, len(last))
	}
}

// A gathered connection's Close does not wait for its sends: the sender
// sends what waits, then closes the connection (net/http's Server.Close
// closes its connections one after another); the listener's lastSends
// waits for them. A second Close leaves those sends be; writes after
// Close fail.
func TestGatheredConnCloseLeavesItsLastSendsToTheSender(t *testing.T) {
	gl, g, client := gatheredPair(t)
	// small socket buffers (no autotuning), so that the sockets hold far
	// less than what is written, and the client drains it fast once it
	// reads, however loaded the machine
	g.SetWriteBuffer(64 << 10)
	client.SetReadBuffer(64 << 10)
	g.gather()
	want := bytes.Repeat([]byte("b"), 2<<20) // more than the sockets hold
	for _, f := range frames(100) {
		want = append(want, f...)
	}
	if _, err := g.Write(want); err != nil {
		t.Fatal(err)
	}
	// the client reads nothing yet: a Close that waited for the sends
	// would wait for their deadline, and cut them
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	if n := gl.flushing.Load(); n != 1 {
		t.Fatalf("%d connections sending their last writes, want 1", n)
	}
	if err := g.Close(); err != nil {
		t.Errorf("a second Close: %v", err)
	}
	if _, err := g.Write([]byte("late")); !errors.Is(err, net.ErrClosed) {
		t.Errorf("a write after Close: %v, want net.ErrClosed", err)
	}
	if got, err := io.ReadAll(client); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("the client read %d bytes (%v), want the %d written before Close", len(got), err, len(want))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if !gl.lastSends(ctx) {
		t.Fatalf("the last sends still under way after 10 s: %d", gl.flushing.Load())
	}
}

// A client that reads nothing holds a gathered connection's Close and a
// passed write deadline up at most closeFlushWait: the sends under way
// give up, the connection closes, lastSends returns.
func TestGatheredConnStalledPeerBounded(t *testing.T) {
	for _, end := range []string{"Close", "SetWriteDeadline"} {
		t.Run(end, func(t *testing.T) {
			gl, g, _ := gatheredPair(t)
			g.gather()
			if _, err := g.Write(bytes.Repeat([]byte("b"), big)); err != nil {
				t.Fatal(err)
			}
			returned := make(chan struct{})
			go func() {
				if end == "Close" {
					g.Close()
				} else {
					g.SetWriteDeadline(time.Now())
				}
				close(returned)
			}()
			select {
			case <-returned:
			case <-time.After(10 * time.Second):
				t.Fatalf("%s with a client that reads nothing still waits after 10 s", end)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if !gl.lastSends(ctx) {
				t.Fatal("the last sends still under way after 10 s")
			}
			g.mu.Lock()
			sending := g.sending
			g.mu.Unlock()
			if sending {
				t.Error("the sender still runs")
			}
		})
	}
}

// ReadFrom, on a gathered connection, queues behind what waits.
func TestGatheredConnReadFromQueues(t *testing.T) {
	g, client := tcpPair(t)
	g.gather()
	want := bytes.Repeat([]byte("b"), big) // on the wire, the client reading nothing yet
	if _, err := g.Write(want); err != nil {
		t.Fatal(err)
	}
	var rest []byte
	for _, f := range frames(100) {
		rest = append(rest, f...)
	}
	copied := make(chan error, 1)
	go func() {
		_, err := g.ReadFrom(bytes.NewReader(rest))
		copied <- err
	}()
	select {
	case err := <-copied:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ReadFrom waits for the send under way: it went around the queue")
	}
	want = append(want, rest...)
	got := make([]byte, len(want))
	if _, err := io.ReadFull(client, got); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("the client read %v, not what was written in its order", err)
	}
}

// A send that makes no progress for sendWait fails, and with it the
// writes that follow: a client that stopped reading its socket no longer
// holds the connection (its streams, a shutdown) until TCP_USER_TIMEOUT
// drops it, which never comes with 0 or off Linux (a tester's find: an
// HTTP/2 stream held 120 s, the stall watch's reset queued behind the
// writes). A client that reads slowly, but reads, keeps it: a send that
// timed out having sent some goes on.
func TestGatheredConnSendWithoutProgressFails(t *testing.T) {
	t.Run("StoppedReading", func(t *testing.T) {
		g, _ := tcpPair(t)
		g.sendWait = 300 * time.Millisecond
		g.gather()
		if _, err := g.Write(bytes.Repeat([]byte("b"), big)); err != nil {
			t.Fatal(err)
		}
		failed := make(chan error, 1)
		go func() {
			for {
				if _, err := g.Write([]byte("c")); err != nil {
					failed <- err
					return
				}
				time.Sleep(10 * time.Millisecond)
			}
		}()
		select {
		case err := <-failed:
			if !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Errorf("the writes failed with %v, want the send's timeout", err)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("the writes of a connection whose client reads nothing still succeed after 20 s")
		}
	})
	t.Run("ReadingSlowly", func(t *testing.T) {
		g, client := tcpPair(t)
		g.sendWait = time.Second
		g.gather()
		const total = 24 << 20 // more than the sockets hold: sent only as the client reads
		if _, err := g.Write(bytes.Repeat([]byte("b"), total)); err != nil {
			t.Fatal(err)
		}
		read := make(chan int64, 1)
		go func() { // 1 MiB each 100 ms: slower than a send's whole, never still for a second
			var n int64
			buf := make([]byte, 64<<10)
			client.SetReadDeadline(time.Now().Add(20 * time.Second)) // a send that failed sends no more
			for n < total {
				var got int64
				for got < 1<<20 && n+got < total {
					k, err := client.Read(buf)
					got += int64(k)
					if err != nil {
						read <- n + got
						return
					}
				}
				n += got
				time.Sleep(100 * time.Millisecond)
			}
			read <- n
		}()
		if n := <-read; n != total {
			t.Fatalf("the client read %d bytes, want %d", n, total)
		}
		if _, err := g.Write([]byte("c")); err != nil {
			t.Errorf("a write after the slow send: %v", err)
		}
	})
}
