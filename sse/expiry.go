package sse

import (
	"context"
	"time"

	"github.com/realsync/realsync/internal/jsonout"
	"github.com/realsync/realsync/rooms"
)

// EndTokenExpiry is why a stream ended just before its identity token
// expires: its last event is TokenExpiringEvent, after which the client
// renews its token and resumes with Last-Event-ID.
const EndTokenExpiry = "token_expiry"

// EndLifetime is why a stream ended at its maximum lifetime (an instance's
// REALSYNC_SSE_MAX_LIFETIME: WithTokenDeadline without a token expiry):
// its last frame is a short retry (0.5–2 s, jittered, as a shutdown's),
// after which the client resumes with Last-Event-ID, likely on another
// instance. Streams so end at random times, so that after a scale-out
// the new instances get their share of the clients, and no stream
// outlives its instance's lifetime however long its token lasts.
const EndLifetime = "lifetime"

// TokenExpiringEvent is the type of the last event of a stream whose
// identity token is about to expire. It carries no id, so the client's
// Last-Event-ID stays that of the last room event.
const TokenExpiringEvent = rooms.EventTokenExpiring

// expiry is when a stream must end because its credentials run out.
type expiry struct {
	fire <-chan time.Time // fires when the stream must end; or
	end  time.Time        // when it must end
	at   time.Time        // when the identity token expires (for the event)
}

type expiryKey struct{}

// WithTokenExpiry returns a context under which Serve and ServeLobby end
// the stream cleanly when end fires, with when the credential ended (an
// API key found revoked): the last frame is a token_expiring event
// {"type":"token_expiring","expiresAt":"<RFC 3339>"} without an id,
// expiresAt the time end gave. A
// stream that would otherwise outlive its token thus never serves a user
// whose credentials expired, and the client knows to refresh rather than
// to treat the end as an outage. A stream whose end is a channel keeps its
// handler's goroutine (it is never taken over: see Detacher); one whose
// end is a time (WithTokenDeadline) need not.
func WithTokenExpiry(ctx context.Context, end <-chan time.Time) context.Context {
	return context.WithValue(ctx, expiryKey{}, expiry{fire: end})
}

// WithTokenDeadline is WithTokenExpiry with the stream's end at a known
// time: a stream the hub took over ends at the hub's first tick from end
// (within a second), without a timer of its own. (With expiresAt zero,
// its end is its lifetime: WithLifetime.)
func WithTokenDeadline(ctx context.Context, end, expiresAt time.Time) context.Context {
	return context.WithValue(ctx, expiryKey{}, expiry{end: end, at: expiresAt})
}

// WithLifetime is WithTokenDeadline for a stream whose end is its
// maximum lifetime, not its token's expiry: it ends at end with a short
// retry (EndLifetime).
func WithLifetime(ctx context.Context, end time.Time) context.Context {
	return WithTokenDeadline(ctx, end, time.Time{})
}

// expiryOf returns the stream's expiry: a channel that fires when it must
// end (nil, which never fires, when its end is a time or there is none),
// or the time it must end (zero: never); and when its token expires, for
// the frame to send then (expiringFrame; zero: none).
func expiryOf(ctx context.Context) (fire <-chan time.Time, end, at time.Time) {
	e, ok := ctx.Value(expiryKey{}).(expiry)
	if !ok {
		return nil, time.Time{}, time.Time{}
	}
	return e.fire, e.end, e.at
}

// deadlineOf returns when the stream must end (zero: never) and when its
// token expires (expiryOf); ok is false when its end is a channel, not a
// time.
func deadlineOf(ctx context.Context) (end, at time.Time, ok bool) {
	e, set := ctx.Value(expiryKey{}).(expiry)
	switch {
	case !set:
		return time.Time{}, time.Time{}, true
	case e.fire != nil:
		return time.Time{}, time.Time{}, false
	}
	return e.end, e.at, true
}

// deadlineEnd is why a stream whose end is a time ends at it: its token's
// expiry (EndTokenExpiry) when it has one (at), else its lifetime
// (EndLifetime).
func deadlineEnd(at time.Time) string {
	if at.IsZero() {
		return EndLifetime
	}
	return EndTokenExpiry
}

// endFrame is the last frame of a stream that ends for why: the
// token_expiring event of a token expiring at, or a short retry for a
// shutdown or the end of its lifetime; nil for any other end.
func endFrame(why string, at time.Time) []byte {
	switch why {
	case EndTokenExpiry:
		return expiringFrame(at)
	case EndShutdown, EndLifetime:
		return retryFrame(shutdownRetry())
	}
	return nil
}

// expiringFrame is the token_expiring event for a token expiring at; nil
// for none (at zero). It is built when the stream ends, not kept with
// the stream while it idles (96 bytes a stream: an idle stream's memory
// is issue 15 item 6's).
func expiringFrame(at time.Time) []byte {
	if at.IsZero() {
		return nil
	}
	data, _ := jsonout.Marshal(rooms.TokenExpiringEvent{Type: TokenExpiringEvent, ExpiresAt: stamp(at)})
	return appendFrame(nil, "", TokenExpiringEvent, data)
}
