// Package deadletter is the contract between the HTTP layer, which serves
// the webhook admin routes (GET /v1/admin/webhooks/dead-letters and POST
// …/{deadLetterId}/replay, api/webhooks_admin.go), and the store that keeps
// the dead letters (store/webhooks): the webhook deliveries that failed
// every try. It imports neither, nor net/http, so both may import it.
package deadletter

import (
	"context"
	"errors"
	"time"
)

// Letter is one delivery that failed every try (the dispatcher's
// MaxAttempts) and waits in its shard's dead-letter stream until it is
// replayed or trimmed.
type Letter struct {
	// ID names it for Replay and as a list cursor: "<shard>.<stream entry
	// id>".
	ID string
	// MessageID is the event's webhook-id, the same on every try and
	// endpoint.
	MessageID string
	Endpoint  string
	Type      string
	// Event is the event's JSON (the data of the webhook's body).
	Event []byte
	// Attempts is the number of tries made.
	Attempts int
	// FailedAt is when the last try failed.
	FailedAt time.Time
	// LastError is the last try's failure, at most 512 bytes.
	LastError string
}

// ErrNotFound: no dead letter has that id (replayed already, trimmed, never
// was, or not an id at all).
var ErrNotFound = errors.New("dead letter not found")

// ErrBacklogFull: the dead letter was not replayed, and stays in the dead
// letters untouched, because its endpoint's backlog in its shard is at the
// bound its new events are refused at (REALSYNC_WEBHOOK_MAX_BACKLOG), or
// its shard's deliveries stream is at its own: a replay would take it
// past. The error wrapping it says which, and the counts.
var ErrBacklogFull = errors.New("the dead letter's endpoint's backlog is full")

// ErrEndpointRemoved: the dead letter was not replayed, and stays in the
// dead letters untouched, because its endpoint is no longer in the
// endpoints file: every try of it would fail ("no longer configured") and
// bring it back with its last error lost. The error wrapping it names the
// endpoint.
var ErrEndpointRemoved = errors.New("the dead letter's endpoint is no longer configured")

// ErrBadCursor: a list cursor that is not a dead letter id of this
// deployment.
var ErrBadCursor = errors.New("not a cursor of the dead-letter list")

// Queue is the dead-letter queue of every shard.
type Queue interface {
	// DeadLetters lists up to limit dead letters after cursor ("" from the
	// start; else a Letter.ID, replayed or not), shard by shard, oldest
	// first in a shard; next is the cursor of the following page, ""
	// when this page holds the last letter (never a cursor to an empty
	// page). A cursor that is no dead letter id: ErrBadCursor.
	DeadLetters(ctx context.Context, cursor string, limit int) (list []Letter, next string, err error)
	// ReplayDeadLetter moves dead letter id back into the deliveries with
	// its retry count reset, atomically: a second replay of the same id
	// is ErrNotFound. When its endpoint's backlog (or its shard's
	// deliveries) is at its bound it is ErrBacklogFull, and when its
	// endpoint is no longer in the endpoints file ErrEndpointRemoved; the
	// letter stays, untouched, checked atomically with the move.
	ReplayDeadLetter(ctx context.Context, id string) error
}
