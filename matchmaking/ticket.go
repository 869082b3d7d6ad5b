package matchmaking

import (
	"slices"
	"time"
)

// Status is where a ticket is in its life: searching until it is matched,
// expires (TicketTTL) or is cancelled; the three others are final.
type Status string

const (
	Searching Status = "searching"
	Matched   Status = "matched"
	Expired   Status = "expired"
	Cancelled Status = "cancelled"
)

// Ticket is a queued request to be matched: by its leader UserID, for
// the leader and the PartyUserIDs (a party is never split; the leader's
// ticket covers it, and no member may queue apart).
type Ticket struct {
	ID         string
	Mode       string
	Regions    []string // preference order
	Rating     float64
	Attributes map[string]any
	UserID     string
	// Name is the leader's name (their token's): the match room's owner
	// is named so when the leader's ticket is the match's first.
	Name         string
	PartyUserIDs []string
	Status       Status
	CreatedAt    time.Time
	ExpiresAt    time.Time
	// Set once matched: the match, its room (once created) and until when
	// its seats are held there (MatchFound.SeatHeldUntil; zero for a
	// ticket matched by a release before it), the region and the
	// ticket's team (0-based).
	MatchID       string
	RoomID        string
	SeatHeldUntil time.Time
	Region        string
	Team          int
	MatchedAt     time.Time
	// Set when read: the window now and the time waited (searching).
	Window float64
	Waited time.Duration
	// Again: Create answered a keyed create's ticket, queued by an
	// earlier run of the same create (its Idempotency-Key, caller and
	// body), not by this call.
	Again bool
}

// Users is the ticket's users, leader first.
func (t Ticket) Users() []string {
	return append([]string{t.UserID}, t.PartyUserIDs...)
}

// Size is the players the ticket brings.
func (t Ticket) Size() int { return 1 + len(t.PartyUserIDs) }

// Match is a group of tickets the matcher made: its id, the region, the
// tickets with their teams, and when. RoomID is set for a backfill: the
// open room the tickets go to, instead of a new one.
type Match struct {
	ID      string
	Mode    string
	Region  string
	Tickets []MatchedTicket
	At      time.Time
	RoomID  string
	// Rating is the players' mean rating, EqKey the tickets' equal
	// attributes (what a backfill of the room matches against).
	Rating float64
	EqKey  string
	// OwnerName names the room's owner, the first ticket's leader (the
	// matcher reads it from that ticket; "" when it could not).
	OwnerName string
	// Told is the room a completion committed the match to (Queue.Commit)
	// before telling its users: the match stands; "" before.
	Told string
}

// BackfillRoom is an open match room of a backfill mode: its region, the
// rating and equal attributes of its match, and its free seats.
type BackfillRoom struct {
	ID     string  `json:"-"`
	Region string  `json:"region"`
	Rating float64 `json:"rating"`
	EqKey  string  `json:"eq"`
	Free   int     `json:"free"`
}

// MatchedTicket is one ticket of a Match: its users (leader first) and
// team, and when it was created (for the time to match).
type MatchedTicket struct {
	ID        string
	Users     []string
	Team      int
	CreatedAt time.Time
}

// ticketsOf is the ids of m's tickets that hold any of users.
func (m Match) ticketsOf(users []string) []string {
	var out []string
	for _, t := range m.Tickets {
		if slices.ContainsFunc(t.Users, func(u string) bool { return slices.Contains(users, u) }) {
			out = append(out, t.ID)
		}
	}
	return out
}

// Users is every user of m, in ticket order.
func (m Match) Users() []string {
	var out []string
	for _, t := range m.Tickets {
		out = append(out, t.Users...)
	}
	return out
}
