package batch

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
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
