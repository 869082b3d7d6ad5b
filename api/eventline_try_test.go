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

// linePair is a taken-over stream's connection over loopback TCP with small
// socket buffers (so that a client that does not read soon blocks the
// server's writes) and its client's end.
func linePair(t *testing.T) (*eventLine, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	server, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { server.Close() })
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
// not fail TrySend: it moves the deadline as Send does.
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
