package redisx

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/rooms"
)

// reply is an error reply of Redis, as go-redis gives it.
type reply string

func (r reply) Error() string { return string(r) }
func (reply) RedisError()     {}

var _ redis.Error = reply("")

func TestNotSent(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"Nil", nil, false},
		{"PoolTimeout", redis.ErrPoolTimeout, true},
		{"DialRefused", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}, true},
		{"WrappedDial", fmt.Errorf("batch: %w", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}), true},
		{"TryAgain", reply("TRYAGAIN Multiple keys request during rehashing of slot"), true},
		{"Loading", reply("LOADING Redis is loading the dataset in memory"), true},
		{"ClusterDown", reply("CLUSTERDOWN The cluster is down"), true},
		{"MasterDown", reply("MASTERDOWN Link with MASTER is down"), true},
		{"ExecAbort", reply("EXECABORT Transaction discarded because of previous errors."), true},
		// it may have run
		{"ReadReset", &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}, false},
		{"ReadTimeout", &net.OpError{Op: "read", Net: "tcp", Err: context.DeadlineExceeded}, false},
		{"WriteBrokenPipe", &net.OpError{Op: "write", Net: "tcp", Err: syscall.EPIPE}, false},
		{"EOF", io.EOF, false},
		{"Deadline", context.DeadlineExceeded, false},
		// it ran, or failed as a script
		{"ScriptError", reply("ERR user_script:1: boom"), false},
		{"OOM", reply("OOM command not allowed when used memory > 'maxmemory'."), false},
		{"Other", errors.New("something"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := NotSent(tc.err); got != tc.want {
				t.Fatalf("NotSent(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}

// replyError is the error go-redis gives a command that Redis answered
// with the error line reply: a fake server on loopback answers every
// command with it, so the value is the one go-redis builds from the wire
// (a typed error of its proto package for MOVED, CLUSTERDOWN and the
// like, not a value of this test's making).
func replyError(tb testing.TB, reply string) error {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		r := bufio.NewReader(c)
		for {
			// a request is "*<n>" then n times "$<len>" and the bytes
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			n, _ := strconv.Atoi(strings.TrimSpace(line[1:]))
			for range 2 * n {
				if _, err := r.ReadString('\n'); err != nil {
					return
				}
			}
			if _, err := c.Write([]byte(reply + "\r\n")); err != nil {
				return
			}
		}
	}()
	cl := redis.NewClient(&redis.Options{Addr: ln.Addr().String(), Protocol: 2, DisableIdentity: true, MaxRetries: -1})
	err = cl.Get(context.Background(), "k").Err()
	cl.Close()
	ln.Close()
	<-done
	return err
}

// Wrap makes every "not now" reply of Redis rooms.ErrUnavailable (503),
// NotSent those that say the command did not run; error replies that mean
// a bug pass through (500). MOVED and ASK reach the store when go-redis'
// redirects ran out, as during a failover (an operator's find: "MOVED 4750
// 127.0.0.1:47106" answered 500).
func TestWrapReplies(t *testing.T) {
	for _, tc := range []struct {
		reply       string
		unavailable bool // Wrap: rooms.ErrUnavailable; Unavailable
		notSent     bool // NotSent: sending it again cannot run it twice
	}{
		{"-MOVED 4750 127.0.0.1:47106", true, true},
		{"-ASK 4750 127.0.0.1:47106", true, true},
		{"-CLUSTERDOWN The cluster is down", true, true},
		{"-CLUSTERDOWN Hash slot not served", true, true},
		{"-TRYAGAIN Multiple keys request during rehashing of slot", true, true},
		{"-LOADING Redis is loading the dataset in memory", true, true},
		{"-MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.", true, true},
		{"-EXECABORT Transaction discarded because of previous errors.", true, true},
		{"-READONLY You can't write against a read only replica.", true, false},
		{"-OOM command not allowed when used memory > 'maxmemory'.", true, false},
		// a bug: 500
		{"-ERR user_script:1: boom", false, false},
		{"-WRONGTYPE Operation against a key holding the wrong kind of value", false, false},
		{"-ERR MOVED is not a command", false, false},
	} {
		t.Run(strings.Fields(tc.reply[1:])[0], func(t *testing.T) {
			err := replyError(t, tc.reply)
			var rerr redis.Error
			if !errors.As(err, &rerr) || err.Error() != tc.reply[1:] {
				t.Fatalf("go-redis gave %T %v, want the error reply %q", err, err, tc.reply[1:])
			}
			if got := errors.Is(Wrap(err), rooms.ErrUnavailable); got != tc.unavailable {
				t.Errorf("Wrap(%q) unavailable = %v, want %v", err, got, tc.unavailable)
			}
			if got := Unavailable(err); got != tc.unavailable {
				t.Errorf("Unavailable(%q) = %v, want %v", err, got, tc.unavailable)
			}
			if got := NotSent(err); got != tc.notSent {
				t.Errorf("NotSent(%q) = %v, want %v", err, got, tc.notSent)
			}
		})
	}
}

// A call given up before it was sent stays so through Wrap, whose other
// words (context.Canceled as it is, a deadline as rooms.ErrUnavailable)
// it keeps; no other error says so.
func TestNeverSent(t *testing.T) {
	canceled := Wrap(GaveUp(context.Canceled))
	if !NeverSent(canceled) || !errors.Is(canceled, context.Canceled) {
		t.Fatalf("canceled: %v", canceled)
	}
	late := Wrap(GaveUp(context.DeadlineExceeded))
	if !NeverSent(late) || !errors.Is(late, rooms.ErrUnavailable) {
		t.Fatalf("deadline: %v", late)
	}
	lost := &net.OpError{Op: "read", Net: "tcp", Err: context.DeadlineExceeded}
	for _, err := range []error{nil, context.Canceled, context.DeadlineExceeded, lost, Wrap(lost), redis.ErrPoolTimeout} {
		if NeverSent(err) {
			t.Errorf("%v says never sent", err)
		}
	}
}
