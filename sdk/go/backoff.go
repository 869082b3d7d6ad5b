package realsync

import (
	"math/rand/v2"
	"time"
)

// Backoff is how an event stream waits before reconnecting: attempt n
// (from 1) waits a random time in [0, min(Max, Base·2^(n-1))) ("full
// jitter", so the clients of a restarted server spread out), at least a
// refusal's Retry-After and at least a retry: the last connection ended
// with, no event after it (0.5–2 s when the server shuts down, 5 s while
// it cannot reach its store; kept for the attempts after it until a
// connection brings a retry: or an event); either counts up to Max
// however long it asks. The count starts over once a connection stayed
// open for Reset.
type Backoff struct {
	Base, Max, Reset time.Duration
}

// DefaultBackoff waits from 500 ms, doubling to 10 s at most, and starts
// over after a connection open for 30 s. 10 s is well below the server's
// disconnect grace (REALSYNC_DISCONNECT_GRACE, 30 s): a stream dropped by
// an outage of up to about 20 s comes back before its player is removed
// (with 30 s, one in seven lost their seat after a 15 s outage). Keep Max
// under a third of the grace.
var DefaultBackoff = Backoff{Base: 500 * time.Millisecond, Max: 10 * time.Second, Reset: 30 * time.Second}

// delay is the wait before attempt n (n ≥ 1).
func (b Backoff) delay(n int) time.Duration {
	ceil := b.Base
	for i := 1; i < n && ceil < b.Max; i++ {
		ceil *= 2
	}
	ceil = min(ceil, b.Max)
	if ceil <= 0 {
		return 0
	}
	return rand.N(ceil)
}
