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
// the stream cleanly when end fires (usually some seconds before
// expiresAt): the last frame is a token_expiring event
// {"type":"token_expiring","expiresAt":"<RFC 3339>"} without an id. A
// stream that would otherwise outlive its token thus never serves a user
// whose credentials expired, and the client knows to refresh rather than
// to treat the end as an outage. A stream whose end is a channel keeps its
// handler's goroutine (it is never taken over: see Detacher); one whose
// end is a time (WithTokenDeadline) need not.
func WithTokenExpiry(ctx context.Context, end <-chan time.Time, expiresAt time.Time) context.Context {
	return context.WithValue(ctx, expiryKey{}, expiry{fire: end, at: expiresAt})
}

// WithTokenDeadline is WithTokenExpiry with the stream's end at a known
// time: a stream the hub took over ends at the hub's first tick from end
// (within a second), without a timer of its own.
func WithTokenDeadline(ctx context.Context, end, expiresAt time.Time) context.Context {
	return context.WithValue(ctx, expiryKey{}, expiry{end: end, at: expiresAt})
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
