package batch

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/internal/growstack"
	"github.com/realsync/realsync/internal/stacktest"
)

// A lane's batches are sent from a goroutine started for them (flush),
// whose stack is grown once at its top (growstack.Grow): the send, deep
// in go-redis' pipeline and hooks, does not grow it again. A hook under
// the Batcher's, which sees the batch's pipeline on that goroutine,
// reports whether calls using half of growstack.Size from there grow it.
func TestBatchesAreSentOnAGrownStack(t *testing.T) {
	client := batchedClient(t)
	seen := &stackHook{}
	client.AddHook(seen)
	for range 3 {
		if err := client.Eval(context.Background(), "return 1", nil).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if seen.batches != 3 {
		t.Fatalf("%d batches of the 3 script runs went through the hook", seen.batches)
	}
	if seen.moved > 0 {
		t.Fatalf("the stack of %d of %d batches' goroutines grew under the hook", seen.moved, seen.batches)
	}
}

// stackHook counts the batches of script runs it sees and those whose
// goroutine's stack stacktest.Moves(growstack.Size/2) grew; the calls
// are one at a time.
type stackHook struct{ batches, moved int }

func (*stackHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (*stackHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (h *stackHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if cmds[0].Name() != "eval" {
			// go-redis' set-up of a new connection, a pipeline of its
			// own run under the batch's, deeper than a batch
			return next(ctx, cmds)
		}
		h.batches++
		if stacktest.Moves(growstack.Size / 2) {
			h.moved++
		}
		return next(ctx, cmds)
	}
}
