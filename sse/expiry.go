package sse

import (
	"context"
	"encoding/json"
	"time"
)

// EndTokenExpiry is why a stream ended just before its identity token
// expires: its last event is TokenExpiringEvent, after which the client
// renews its token and resumes with Last-Event-ID.
const EndTokenExpiry = "token_expiry"

// TokenExpiringEvent is the type of the last event of a stream whose
// identity token is about to expire. It carries no id, so the client's
// Last-Event-ID stays that of the last room event.
const TokenExpiringEvent = "token_expiring"

// expiry is when a stream must end because its credentials run out.
type expiry struct {
	fire <-chan time.Time // fires when the stream must end
	at   time.Time        // when the identity token expires (for the event)
}

type expiryKey struct{}

// WithTokenExpiry returns a context under which Serve and ServeLobby end
// the stream cleanly when end fires (usually some seconds before
// expiresAt): the last frame is a token_expiring event
// {"type":"token_expiring","expiresAt":"<RFC 3339>"} without an id. A
// stream that would otherwise outlive its token thus never serves a user
// whose credentials expired, and the client knows to refresh rather than
// to treat the end as an outage.
func WithTokenExpiry(ctx context.Context, end <-chan time.Time, expiresAt time.Time) context.Context {
	return context.WithValue(ctx, expiryKey{}, expiry{fire: end, at: expiresAt})
}

// expiryOf returns the stream's expiry channel (nil, which never fires,
// when there is none) and the frame to send when it fires.
func expiryOf(ctx context.Context) (<-chan time.Time, []byte) {
	e, ok := ctx.Value(expiryKey{}).(expiry)
	if !ok {
		return nil, nil
	}
	data, _ := json.Marshal(map[string]string{"type": TokenExpiringEvent,
		"expiresAt": stamp(e.at)})
	return e.fire, appendFrame(nil, "", TokenExpiringEvent, data)
}
