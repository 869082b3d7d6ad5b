package store_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	contract "github.com/realsync/realsync/internal/idempotency"
	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/internal/wait"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/store/idempotency"
)

// An instance whose clock is behind Redis' by more than the claims' margin
// (1 s) makes its claims all the same: the first refused LATE while its
// call waited learns Redis' lead and is sent again, and the next ones are
// made at once. Before, every keyed write of such an instance was 503
// (an abuse tester's Redis 5 s ahead: creates, messages, quick-joins),
// while unkeyed writes and /readyz were fine. A claim left in Redis'
// socket past its call's end is still not made.
func TestIdempotencyClaimsOfAnInstanceBehindRedis(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		s := openStore(t, b)
		idem := idempotency.New(s.Base()).WithClockBehind(5 * time.Second)
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second) // the embedded store's calls have no bound of their own: a standalone call's
		defer cancel()
		var calls atomic.Int64 // the commands with an argument in the claims' keys
		s.Client().AddHook(redistest.Around(func(_ context.Context, cmds []redis.Cmder, send func() error) error {
			for _, c := range cmds {
				for _, a := range c.Args() {
					if a, _ := a.(string); strings.Contains(a, ":idem:") {
						calls.Add(1)
						break
					}
				}
			}
			return send()
		}))
		if _, err := idempotency.New(s.Base()).Claim(ctx, "alice", "warm", "fp", time.Minute); err != nil { // the script loaded on alice's node
			t.Fatal(err)
		}
		scripts := calls.Load
		before := scripts()
		for i, want := range []int64{2, 1, 1} { // the first learns the lead
			c, err := idem.Claim(ctx, "alice", fmt.Sprint("k", i), "fp", time.Minute)
			if err != nil || c.Outcome != contract.New {
				t.Fatalf("claim %d of an instance 5 s behind Redis: %+v, %v", i, c, err)
			}
			if n := scripts(); n-before != want {
				t.Fatalf("claim %d took %d script calls, want %d", i, n-before, want)
			}
			before = scripts()
		}
		if c, err := idem.Claim(ctx, "alice", "k0", "fp", time.Minute); err != nil || c.Outcome != contract.InUse {
			t.Fatalf("a claim made, claimed again: %+v, %v; want in use", c, err)
		}
	})
}

// An Idempotency-Key's claim whose call was cut while Redis hung with it
// in its socket (the request answered 503) is not made when Redis goes on
// after the call gave up: a retry of the request claims the key at once.
// Before, Redis made the claim when it went on, and it held the key for
// its whole hold (twice the request timeout), every retry meanwhile 409
// IDEMPOTENCY_KEY_IN_USE. A claim made in time still holds the key.
func TestIdempotencyClaimMadeAfterItsCallGaveUpIsNot(t *testing.T) {
	srv := ownServer(t)
	s := openStore(t, redistest.Backend{Name: "fresh", URL: "redis://" + srv.Addr})
	idem := idempotency.New(s.Base())
	ctx := context.Background()
	const hold = time.Minute
	held, err := idem.Claim(ctx, "alice", "in-time", "fp", hold)
	if err != nil || held.Outcome != contract.New {
		t.Fatalf("first claim: %+v, %v", held, err)
	}
	scripts := func() int64 { return srv.CallsOf(t, "evalsha", "eval", "fcall") }
	before := scripts()

	srv.Pause()
	t.Cleanup(srv.Resume) // before the server's stop, even on a failure
	// a request's deadline, well within the call's bound (3 s)
	cut, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	_, err = idem.Claim(cut, "alice", "late", "fp", hold)
	cancel()
	if !errors.Is(err, rooms.ErrUnavailable) {
		t.Fatalf("claim against a paused Redis: %v, want rooms.ErrUnavailable", err)
	}
	time.Sleep(300*time.Millisecond + 2*time.Second) // past the deadline and the clocks' margin (1 s)
	srv.Resume()
	wait.Until(t, "Redis runs the claim left in its socket", func() bool { return scripts() > before })

	c, err := idem.Claim(ctx, "alice", "late", "fp", hold)
	if err != nil || c.Outcome != contract.New {
		t.Fatalf("the request's retry: %+v, %v; want a new claim (before: in use for %s)", c, err, hold)
	}
	if c, err := idem.Claim(ctx, "alice", "in-time", "fp", hold); err != nil || c.Outcome != contract.InUse {
		t.Fatalf("a claim made in time, claimed again: %+v, %v; want in use", c, err)
	}
}
