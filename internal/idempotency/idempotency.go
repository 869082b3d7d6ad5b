// Package idempotency is the contract between the HTTP layer, which
// honours the Idempotency-Key header (api/idempotency.go), and the store
// that keeps the answers (store/idempotency): a request sent again with
// the same key and the same body gets the first one's answer instead of
// running again.
package idempotency

import (
	"context"
	"time"
)

// TTL is how long an answer is kept: the same key and body get the same
// answer for 24 hours.
const TTL = 24 * time.Hour

// Budget is how many bytes of answers one user's records may hold at once
// (each kept TTL): a new key of a user whose records hold it already is
// refused (OverBudget) until the oldest expires. An API key's (a game
// server's) are not bounded. Without it one account's keyed quick-joins
// kept 40 KB each, 6.5 GB a day (an abuse tester's find).
const Budget = 4 << 20

// Outcome is what claiming a key found.
type Outcome int

const (
	// New: the key was free (or its answer's write was lost: see
	// Answer.Receipt); the caller runs the request and then records its
	// answer or releases the key.
	New Outcome = iota
	// Replay: the key holds the answer of the same request, in Answer,
	// and its Receipt's write is still where it was made (or cannot be
	// told otherwise: trimmed, or its room closed).
	Replay
	// InUse: the same request holds the key and is still running.
	InUse
	// Mismatch: the key was used with another request (another body or
	// route).
	Mismatch
	// OverBudget: the key is new, and the caller's records hold its
	// Budget already; RetryAfter says when the oldest expires.
	OverBudget
)

// Answer is a recorded response.
type Answer struct {
	Status      int
	ContentType string
	Location    string
	Body        []byte
	// Receipt names the write the request made in another key's history
	// (a store's, opaque; "": none), kept with the answer and not sent:
	// before a replay the Store checks that history still holds it. A
	// failover of Redis that lost the write (a room's message, a direct
	// message) but not the answer, in the caller's slot on another master,
	// had the message answered "sent" for good and never delivered; the
	// Store claims such a key anew (Claim's New) instead of replaying.
	Receipt string
}

// Claim is the result of Store.Claim; a New one is the caller's to record
// or release.
type Claim struct {
	Outcome Outcome
	// Answer: the recorded answer of a Replay.
	Answer Answer
	// Key and Token identify a New claim to Record and Release, Scope its
	// caller.
	Key, Token, Scope string
	// RetryAfter: of an OverBudget claim, how long until the caller's
	// oldest record expires.
	RetryAfter time.Duration
}

// Store keeps claims and answers per caller (scope: the user's or API
// key's id) and key. Every record expires: a running claim after its hold,
// an answer after TTL.
type Store interface {
	// Claim claims key of scope for the request whose fingerprint is given
	// (its method, route and body hashed), held for hold while it runs.
	Claim(ctx context.Context, scope, key, fingerprint string, hold time.Duration) (Claim, error)
	// Record stores the answer of a New claim for TTL; false when the
	// claim was lost meanwhile (its hold passed).
	Record(ctx context.Context, c Claim, a Answer) (bool, error)
	// Release frees a New claim whose request failed (it changed nothing),
	// so the key may be used again.
	Release(ctx context.Context, c Claim) error
}
