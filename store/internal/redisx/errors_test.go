package redisx

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"

	"github.com/redis/go-redis/v9"
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
