package api

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http/httputil"
	"testing"
	"time"
)

// tcpPair is a connection over loopback TCP: its server's end and its
// client's, closed at the test's end.
func tcpPair(tb testing.TB) (server, client net.Conn) {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { client.Close() })
	server, err = ln.Accept()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { server.Close() })
	return server, client
}

// linePair is a taken-over stream's connection over loopback TCP with small
// socket buffers (so that a client that does not read soon blocks the
// server's writes) and its client's end.
func linePair(t *testing.T) (*eventLine, net.Conn) {
	t.Helper()
	server, client := tcpPair(t)
	server.(*net.TCPConn).SetWriteBuffer(4096)
	client.(*net.TCPConn).SetReadBuffer(4096)
	return &eventLine{conn: server}, client
}

// readBody reads the chunked body the client receives, to its end, in the
// background.
func readBody(client net.Conn) <-chan []byte {
	got := make(chan []byte, 1)
	go func() {
		client.SetReadDeadline(time.Now().Add(20 * time.Second))
		b, _ := io.ReadAll(httputil.NewChunkedReader(client))
		got <- b
	}()
	return got
}

func testFrame(i int) []byte {
	return fmt.Appendf(nil, "id: %d-t\nevent: state\ndata: {\"n\":%d,\"pad\":%q}\n\n", i, i, bytes.Repeat([]byte("x"), 900))
}

// TrySend never waits: once the client stops reading it reports that not
// all went out, keeps the rest (and every later frame) and Send finishes
// it; the client gets every frame once, in order, as a well-formed chunked
// body, whatever part of a chunk the connection took.
func TestEventLineTrySendKeepsWhatItCannotWrite(t *testing.T) {
	l, client := linePair(t)
	var want []byte
	blocked := false
	for i := 0; i < 20000 && !blocked; i++ {
		f := testFrame(i)
		want = append(want, f...)
		all, err := l.TrySend(f)
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		blocked = !all
	}
	if !blocked {
		t.Fatal("20 000 frames to a client that does not read all went out at once")
	}
	// with a rest kept, a frame is kept after it, not written
	if all, err := l.TrySend(testFrame(-1)); all || err != nil {
		t.Fatalf("TrySend with a rest kept: %v %v", all, err)
	}
	want = append(want, testFrame(-1)...)
	got := readBody(client)
	if err := l.Send(nil); err != nil {
		t.Fatal(err)
	}
	if len(l.rest) != 0 {
		t.Fatalf("Send(nil) left %d bytes", len(l.rest))
	}
	last := testFrame(-2)
	want = append(want, last...)
	if err := l.Send(last); err != nil {
		t.Fatal(err)
	}
	l.End(nil)
	if b := <-got; !bytes.Equal(b, want) {
		t.Fatalf("the client got %d bytes, want the %d sent, in order", len(b), len(want))
	}
}

// A write deadline that passed since the last Send (an idle stream's) does
// not fail TrySend: it clears it.
func TestEventLineTrySendAfterDeadlinePassed(t *testing.T) {
	l, client := linePair(t)
	if err := l.Send(testFrame(1)); err != nil {
		t.Fatal(err)
	}
	past := time.Now().Add(-time.Second)
	l.deadline = past
	l.conn.SetWriteDeadline(past)
	got := readBody(client)
	if all, err := l.TrySend(testFrame(2)); !all || err != nil {
		t.Fatalf("TrySend past the deadline: %v %v", all, err)
	}
	l.End(testFrame(3))
	want := append(append(testFrame(1), testFrame(2)...), testFrame(3)...)
	if b := <-got; !bytes.Equal(b, want) {
		t.Fatalf("the client got %q, want %q", b, want)
	}
}

// deadlineCounter is a TCP connection that counts its write deadline's
// changes.
type deadlineCounter struct {
	*net.TCPConn
	set int
}

func (c *deadlineCounter) SetWriteDeadline(t time.Time) error {
	c.set++
	return c.TCPConn.SetWriteDeadline(t)
}

// TrySend changes no write deadline but to clear one a Send set that is
// about to pass, and allocates nothing: the room's worker writes most
// streams' events with it, each costing one system call and nothing more;
// a stream that also needs Send (a slow client) costs a deadline change a
// second at most. The client gets every frame in order.
func TestEventLineTrySendNeedsNoDeadline(t *testing.T) {
	server, client := tcpPair(t) // socket buffers that take every write
	c := &deadlineCounter{TCPConn: server.(*net.TCPConn)}
	l := &eventLine{conn: c}
	got := readBody(client)
	var want []byte
	send := func(f []byte, try bool) {
		t.Helper()
		want = append(want, f...)
		if try {
			if all, err := l.TrySend(f); !all || err != nil {
				t.Fatalf("TrySend: %v %v", all, err)
			}
		} else if err := l.Send(f); err != nil {
			t.Fatal(err)
		}
	}
	steps := []struct {
		try  bool
		end  time.Duration // the deadline before the step: this far ahead of now, 0: as it is
		sets int           // deadline changes after the step
	}{
		{try: true, sets: 0}, {try: true, sets: 0}, // a fresh line has none and needs none
		{try: false, sets: 1}, {try: true, sets: 1}, {try: true, sets: 1}, // Send's, left to run
		{try: true, end: 500 * time.Millisecond, sets: 2}, // about to pass: cleared
		{try: true, sets: 2},
		{try: false, sets: 3}, {try: true, end: -time.Second, sets: 4}, // passed: cleared
	}
	for i, s := range steps {
		if s.end != 0 {
			l.deadline = time.Now().Add(s.end)
			c.TCPConn.SetWriteDeadline(l.deadline) // uncounted
		}
		send([]byte(fmt.Sprintf("data: %d\n\n", i)), s.try)
		if c.set != s.sets {
			t.Fatalf("step %d (TrySend %v): %d deadline changes, want %d", i, s.try, c.set, s.sets)
		}
	}
	f := []byte("data: x\n\n")
	if a := testing.AllocsPerRun(100, func() {
		if all, err := l.TrySend(f); !all || err != nil {
			t.Fatalf("TrySend: %v %v", all, err)
		}
	}); a != 0 {
		t.Errorf("TrySend allocates %v times a write", a)
	}
	for range 101 { // AllocsPerRun's runs and its warm-up
		want = append(want, f...)
	}
	l.End(nil)
	if b := <-got; !bytes.Equal(b, want) {
		t.Fatalf("the client got %q, want %q", b, want)
	}
}

// BenchmarkEventLineTrySend: one idle stream's write of an event, as the
// room's worker does it (tryDrain), to a client that reads everything:
// its time and allocations besides the system call.
func BenchmarkEventLineTrySend(b *testing.B) {
	server, client := tcpPair(b)
	go io.Copy(io.Discard, client)
	l := &eventLine{conn: server}
	f := []byte("id: 42-0\nevent: state\ndata: {\"version\":42,\"state\":{\"n\":1}}\n\n")
	b.ReportAllocs()
	for b.Loop() {
		if all, err := l.TrySend(f); !all || err != nil {
			// the reader fell behind: let it catch up
			if err != nil {
				b.Fatal(err)
			}
			if err := l.Send(nil); err != nil {
				b.Fatal(err)
			}
		}
	}
}
