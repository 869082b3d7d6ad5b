package batch

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/store/internal/redisx"
)

// A call does not queue behind a batch that has been out longer than
// stalledBatch (a node that stopped answering): run says errStalled and
// leaves the call to go alone; behind a batch out a moment, it queues.
func TestBatchStalledLaneLetsCallsGoAlone(t *testing.T) {
	b := New(redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}), Config{}, nil)
	l := b.lane(laneScript, "n")
	c, _, ok := newCall([]redis.Cmder{redis.NewCmd(context.Background(), "evalsha", "x", 0)}, callScript)
	if !ok {
		t.Fatal("not a batchable call")
	}
	b.mu.Lock()
	l.sentAt, l.busy = time.Now().Add(-2*stalledBatch), true
	b.mu.Unlock()
	if err := b.run(context.Background(), l, c); err != errStalled {
		t.Fatalf("behind a stalled batch: %v, want errStalled", err)
	}
	if len(l.pending) != 0 || c.state.Load() != callWaiting {
		t.Fatalf("the call was queued (%d pending) or answered (%d)", len(l.pending), c.state.Load())
	}
	b.mu.Lock()
	l.sentAt = time.Now()
	b.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := b.run(ctx, l, c); err == errStalled || len(l.pending) != 1 {
		t.Fatalf("behind a batch just sent: %v with %d pending, want it queued (and given up with ctx)", err, len(l.pending))
	}
}

// A call whose caller gives up while it waits in its lane's queue is
// dropped, and its error says it was never sent (redisx.NeverSent: a
// quota reserved for it is released), besides being the context's.
func TestBatchAbandonedCallSaysNeverSent(t *testing.T) {
	b := New(redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}), Config{}, nil)
	l := b.lane(laneScript, "n")
	c, _, ok := newCall([]redis.Cmder{redis.NewCmd(context.Background(), "evalsha", "x", 0)}, callScript)
	if !ok {
		t.Fatal("not a batchable call")
	}
	b.mu.Lock()
	l.sentAt, l.busy = time.Now(), true // a batch out: the call queues behind it
	b.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	err := b.run(ctx, l, c)
	if !redisx.NeverSent(err) || !errors.Is(err, context.DeadlineExceeded) || !redisx.NeverSent(c.cmds[0].Err()) {
		t.Fatalf("given up in the queue: %v (command: %v), want the context's error, never sent", err, c.cmds[0].Err())
	}
	if c.state.Load() != callAbandoned {
		t.Fatalf("call state %d, want abandoned", c.state.Load())
	}
	if b.send(l, []*call{c}) != nil || c.state.Load() != callAbandoned {
		t.Fatal("an abandoned call was sent")
	}
}
