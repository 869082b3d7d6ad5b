package redisx

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// Bound is a go-redis hook that gives each call (a command, a pipeline, a
// transaction) a deadline of its own: the caller's, or d after the call
// begins when that comes first. On a client with ContextTimeoutEnabled,
// go-redis then ends the call at that deadline wherever it waits: for a
// free pooled connection, a dial, a new connection's HELLO, a reply, a
// try's backoff; a try past it is not made. Without it a Redis that
// accepts connections and answers nothing (a hung or paused process) held
// a call for one reply timeout per new connection's HELLO and per try
// (a pipeline 8 s, a Cluster's 12 s, measured), and a request's store
// call sent just before the request's deadline waited past it.
//
// A call cut so is a transport failure as a lost reply is (go-redis'
// "i/o timeout", or the context's end before anything was sent): a
// script run that may have run is not sent again (sentOnce), and its
// caller gets rooms.ErrUnavailable (Wrap). Install it as the client's
// first hook, so that the calls another hook makes (a batch's pipeline)
// are bounded too.
type Bound time.Duration

var _ redis.Hook = Bound(0)

// DialHook implements redis.Hook: the dial is bounded by the call's
// context (go-redis' dial timeout, within it).
func (Bound) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook implements redis.Hook.
func (b Bound) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		d, ok := b.of(ctx)
		if !ok {
			return next(ctx, cmd)
		}
		ctx, cancel := context.WithTimeout(ctx, d)
		defer cancel()
		return next(ctx, cmd)
	}
}

// patientKey marks a context whose calls have a bound of their own
// (Patient).
type patientKey struct{}

// Patient gives the calls made with ctx the bound d instead of their
// client's Bound (0: none): for calls that queue behind many others by
// design, where waiting beats failing, such as a stream's opening in a
// burst of thousands.
func Patient(ctx context.Context, d time.Duration) context.Context {
	return context.WithValue(ctx, patientKey{}, d)
}

// IsPatient says whether the calls made with ctx have a bound of their
// own (Patient): a batch keeps them apart from the others (store/internal/batch).
func IsPatient(ctx context.Context) bool {
	_, ok := ctx.Value(patientKey{}).(time.Duration)
	return ok
}

// OpeningBound is the bound of an event stream's opening (Opening).
// Thousands of openings at once on one instance (clients coming back
// after a restart) queue for Redis for seconds: on 2 cores, 10 000 at
// once, a tenth of them passed 3 s (docs/bench/2026-11-29-all.log), were
// refused as store unavailable and came back 5 s later (the stream's
// retry), more load. 24 s is what the wait for a free pooled connection
// allowed before calls had a bound (12 s, tried twice).
const OpeningBound = 24 * time.Second

// Opening is ctx for the store calls of an event stream's opening: bounded
// by OpeningBound (Patient).
func Opening(ctx context.Context) context.Context { return Patient(ctx, OpeningBound) }

// of is the bound of a call made with ctx, false when it needs none of
// its own: Patient says none, or ctx already ends within it (its
// deadline is the call's, and a context of its own, a timer and a few
// allocations, would add nothing: so a batch's pipeline, whose context
// ends at its callers' latest deadline, each bounded here, gets none).
func (b Bound) of(ctx context.Context) (time.Duration, bool) {
	bound := time.Duration(b)
	if d, ok := ctx.Value(patientKey{}).(time.Duration); ok {
		bound = d
	}
	if bound <= 0 {
		return 0, false
	}
	end, ok := ctx.Deadline()
	return bound, !ok || time.Until(end) > bound
}

// Ends is when a call made now with ctx is cut: by its bound (of), else
// by ctx's deadline; the zero time when neither cuts it. What a call sent
// then did is unknown (the reply is lost), but a call Redis runs later
// runs for a caller that has given up.
func (b Bound) Ends(ctx context.Context) time.Time {
	if d, ok := b.of(ctx); ok {
		return time.Now().Add(d)
	}
	end, _ := ctx.Deadline()
	return end
}

// ProcessPipelineHook implements redis.Hook, for pipelines and
// transactions.
func (b Bound) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		d, ok := b.of(ctx)
		if !ok {
			return next(ctx, cmds)
		}
		ctx, cancel := context.WithTimeout(ctx, d)
		defer cancel()
		return next(ctx, cmds)
	}
}
