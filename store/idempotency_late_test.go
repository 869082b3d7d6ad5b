package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	contract "github.com/realsync/realsync/internal/idempotency"
	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/store/idempotency"
)

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
	eventually(t, "Redis runs the claim left in its socket", func() bool { return scripts() > before })

	c, err := idem.Claim(ctx, "alice", "late", "fp", hold)
	if err != nil || c.Outcome != contract.New {
		t.Fatalf("the request's retry: %+v, %v; want a new claim (before: in use for %s)", c, err, hold)
	}
	if c, err := idem.Claim(ctx, "alice", "in-time", "fp", hold); err != nil || c.Outcome != contract.InUse {
		t.Fatalf("a claim made in time, claimed again: %+v, %v; want in use", c, err)
	}
}
