// Package limits holds RealSync's rate limits: what a limit is (GCRA: a
// rate and a burst), the named limits and their defaults, the grammar of
// REALSYNC_RATE_LIMITS, and the vocabulary a limiter speaks (Check,
// Decision). It knows nothing of HTTP or Redis: api decides what to check,
// store/ratelimit keeps the counters in Redis.
package limits

import "time"

// Limit is a GCRA limit: Rate requests per Period on average, and up to
// Burst at once from idle (a client that waited Burst×Period/Rate may send
// Burst requests back to back).
type Limit struct {
	Rate   int
	Period time.Duration
	Burst  int
}

// Interval is the time one request costs: Period/Rate.
func (l Limit) Interval() time.Duration { return l.Period / time.Duration(l.Rate) }

// Zero reports an unset limit (no limit).
func (l Limit) Zero() bool { return l.Rate == 0 }

// Scope says whose counter a check counts on.
type Scope string

const (
	User Scope = "user" // one authenticated user, on every instance
	IP   Scope = "ip"   // one client address (IPv6: its /64)
	Room Scope = "room" // one room, all members together
)

// Check is one counter to count a request on.
type Check struct {
	Name    string // the limit's name: a route class, "opens", "guess", "guests", "messages", "patches"
	Scope   Scope
	Subject string // the user id, the client address, or the room id
	Limit   Limit
	// Member, on a Room check, is the user id of the member sending: the
	// member's share of the room's limit (MemberShare) is checked with the
	// room's, all or nothing, so a member's refused requests never use up
	// the room's budget and one member alone cannot use all of it.
	Member string
}

// MemberShare is one member's share of a room limit: half its rate and
// burst (at least 1).
func MemberShare(l Limit) Limit {
	return Limit{Rate: max(1, l.Rate/2), Period: l.Period, Burst: max(1, l.Burst/2)}
}

// Decision is a check's outcome.
type Decision struct {
	Allowed   bool
	Remaining int           // requests still allowed at once after this one
	Retry     time.Duration // when refused: how long until one is allowed
	Reset     time.Duration // how long until the full burst is back
}

// Mode says what a limiter does with a request.
type Mode string

const (
	Take Mode = "take" // count the request where every counter of a check allows it
	Peek Mode = "peek" // only tell whether it would be allowed
	Give Mode = "give" // hand a counted request back (e.g. a guess that was right)
)
