package matchmaking

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Errors of tickets; api/errors.go maps each to its problem.
var (
	// ErrTicketNotFound: no such ticket, or not one of the caller's.
	ErrTicketNotFound = errors.New("ticket not found")
	// ErrTicketActive: the user (or a party member: the error says which)
	// already has a searching ticket.
	ErrTicketActive = errors.New("an active ticket exists")
	// ErrPartyConsent: a party member named in a ticket has not consented
	// to be in the leader's party (Config.Consent: has not joined it, or
	// does not follow the leader).
	ErrPartyConsent = errors.New("a party member has not consented")
	// ErrMemberQueuedInParty: the user is a member of a party whose
	// leader's searching ticket covers them; they cannot queue apart.
	ErrMemberQueuedInParty = errors.New("queued in a party's ticket")
	// ErrTicketMatched: a matched ticket cannot be cancelled.
	ErrTicketMatched = errors.New("ticket already matched")
	// ErrQueueFull: the mode's queue holds MaxQueue tickets.
	ErrQueueFull = errors.New("the mode's queue is full")
	// ErrTicketExists: Queue.Add found a ticket of that id queued already
	// (a keyed create run again: Service.Create answers that ticket; never
	// an answer of the API).
	ErrTicketExists = errors.New("a ticket of that id exists")
	// ErrMatchTold: Queue.Requeue found its match committed (Queue.Commit):
	// a completion began telling its users, so it stands, and nothing was
	// put back (never an answer of the API).
	ErrMatchTold = errors.New("the match's users are being told")
	// ErrCommitNotReplicated: Queue.Commit committed the match on the mode's
	// Redis master, but fewer of its replicas than asked acknowledged the
	// commit in time, so a failover could still lose it (and match its
	// tickets again). With ok false the match is held: no user is told
	// yet, and a repair (Pending, after RepairAfter) commits and waits
	// again; with ok true the replicas have been short for long enough
	// that the match is told all the same (never an answer of the API).
	ErrCommitNotReplicated = errors.New("the match's commit is not on the replicas asked for")
	// ErrNoticeNotReplicated: Notifier.MatchFound logged the user's
	// match_found on the Redis master of the user's slot (and published
	// it), but fewer of its replicas than asked acknowledged it in time:
	// the match is held as a commit short of them is (never an answer of
	// the API).
	ErrNoticeNotReplicated = errors.New("the user's match_found is not on the replicas asked for")
	// ErrToldUnreplicated: Notifier.MatchFound told the user, but its
	// write is on the master of the user's slot alone, whose replicas
	// have been short for long enough that it stands all the same (never
	// an answer of the API).
	ErrToldUnreplicated = errors.New("the match was told without its replicas' acknowledgement")
)

// GroupKey is what a pass groups a ticket by, as the store keeps it.
type GroupKey struct {
	Rating  float64  `json:"rating"`
	Size    int      `json:"size"`
	Regions []string `json:"regions"`
	EqKey   string   `json:"eq"`
	Users   []string `json:"users"`
}

// Held is the ticket a user's claim names, and when it was claimed.
type Held struct {
	ID string
	At time.Time
}

// Pass is what a matcher pass did: the tickets it expired and the
// matches it made (their rooms still to make).
type Pass struct {
	Expired int
	Matches []Match
	// Next is where the next pass's walk starts (PassParams.From).
	Next string
	// Cut is the ticket before which the pass's budget (PassBudget.Work)
	// ran out: the first it did not try, where Next starts; "" when the
	// pass tried every ticket of its page.
	Cut string
	// Left is how many tickets (any status) and pending matches the mode
	// has after the pass: none, and the mode may leave the list (Forget).
	Left int
}

// PassParams bound a pass.
type PassParams struct {
	// Walk is the most queued tickets a pass considers, in rating order
	// from From (a page: "" from the lowest; then the last pass's Next,
	// which after a cut names the ticket it starts at), Sweep the most
	// schedule entries it handles.
	Walk, Sweep int
	From        string
	// Grace is how long a final ticket stays readable.
	Grace time.Duration
	// Now fixes the pass's clock (tests); zero: Redis's.
	Now time.Time
	// Budget bounds the pass's work: its tries' searches, and its
	// backfill's offers (at most half), walks and searches together,
	// after which it is cut (zero fields: DefaultBudget's).
	Budget PassBudget
}

// SeatsRefusedError is a backfill's hold that its room refused for Users
// (ReserveMatchSeats): the room banned them, or (a first hold) they are in
// it or hold a seat of it already (queued again). No seat was held for
// anyone of the match. From OpenMatchRoom, with the room's id: a match
// room found again (a repair) banned Users since, and refused their
// tickets, none of whose users is in it; the seats of the match's other
// tickets were held.
type SeatsRefusedError struct {
	Users []string
}

func (e *SeatsRefusedError) Error() string {
	return fmt.Sprintf("the room refuses %d of the match's users", len(e.Users))
}

// Queue keeps tickets, one mode's queue in one Redis slot, and runs the
// matcher's passes there, each atomic (store/tickets).
type Queue interface {
	// Claim makes ticketID the user's active ticket for ttl, unless the
	// user holds another than replace: then it returns that one (held;
	// zero when claimed).
	Claim(ctx context.Context, uid, ticketID, replace string, ttl time.Duration) (Held, error)
	// Release frees the user's claim if it is ticketID's.
	Release(ctx context.Context, uid, ticketID string) error
	// NewID is a ticket id for mode (it names the mode's slot): a new one
	// for seed "", else the same one for the same mode and seed (a keyed
	// create's: its caller and Idempotency-Key).
	NewID(mode, seed string) string
	// Add queues t (searching) for ttl, its mode listed (Modes) at least
	// until t's grace after ttl could end, atomically with t; it returns t
	// with its CreatedAt and ExpiresAt (Redis's clock). ErrQueueFull past
	// maxQueue;
	// ErrTicketExists when a ticket of t's id is kept (in any status: it
	// is left as it is); rooms.ErrUnavailable when it is not known
	// whether t was queued.
	Add(ctx context.Context, t Ticket, g GroupKey, ttl, grace time.Duration, maxQueue int) (Ticket, error)
	// Get reads a ticket: ErrTicketNotFound when it is unknown or gone.
	Get(ctx context.Context, id string) (Ticket, error)
	// Cancel ends searching ticket t as cancelled (expired when past its
	// TTL) and returns its status after: Cancelled, or the final status
	// it had; cancelled reports whether this call cancelled it (false
	// for one cancelled already, by a cancel before or at the same
	// time). ErrTicketNotFound when it is gone.
	Cancel(ctx context.Context, t Ticket, grace time.Duration) (st Status, cancelled bool, err error)
	// Pass runs one pass over mode's queue with its rules r (see Group).
	Pass(ctx context.Context, mode string, r Rules, p PassParams) (Pass, error)
	// Pending is mode's matches whose rooms are not made yet.
	Pending(ctx context.Context, mode string) ([]Match, error)
	// Commit marks m's pending record as committed to roomID, before its
	// users are told of it: from then on the match stands (Requeue
	// refuses it: ErrMatchTold; Pending reports it in Match.Told, and a
	// repair tells the rest and assigns it, whatever the room became).
	// false when the record is gone (another completion assigned it) or
	// no longer holds each of m's tickets (another completion requeued
	// them): this completion must tell no one. So a completion racing
	// another never tells a user of a match whose tickets go back to the
	// queue, however the two interleave. A commit may wait for replicas
	// of the mode's Redis master to have it, and of the room's master to
	// have the room (ErrCommitNotReplicated when they did not in time; ok
	// false: held, tell no one yet): a failover then cannot lose a match
	// whose users were told, and match their tickets again, nor the room
	// they were told of. Committing again to the same room changes nothing (a
	// repair's, and waits again).
	Commit(ctx context.Context, m Match, roomID string) (bool, error)
	// Assign records m's room on its tickets, with the end of its seats'
	// hold (seatsUntil: MatchFound.SeatHeldUntil), and ends m's pending
	// record; ended is false when another completion of m ended it first.
	Assign(ctx context.Context, m Match, roomID string, seatsUntil time.Time) (ended bool, err error)
	// Requeue puts m's tickets back in the queue (searching, or expired
	// past their TTL), takes them off m's pending record (ending it when
	// they were all of its tickets) and leaves m's room among the backfill
	// rooms without a free seat until the next refresh: the room could not
	// take them (m.RoomID: a backfill's, or a match room a repair found
	// again, whose other tickets keep their match); ErrMatchTold, and
	// nothing changed, when m was committed (Commit); back is the ids of
	// m's tickets it took off the match (none of another completion's
	// recorded match). The tickets named in
	// barred (of m) are never offered m's room again: it refused their
	// users (SeatsRefusedError). A ticket it ends (expired, or cancelled:
	// its cancel came while it was matched) stays readable for grace, as
	// Cancel's.
	Requeue(ctx context.Context, m Match, barred []string, grace time.Duration) (back []string, err error)
	// BackfillRooms is mode's open rooms a pass backfills (when its rules
	// allow), full ones included (Free 0: kept so that a seat freed later
	// is found); PutBackfill records room (Free < 0: drops it, the room
	// started or closed).
	BackfillRooms(ctx context.Context, mode string) ([]BackfillRoom, error)
	PutBackfill(ctx context.Context, mode string, room BackfillRoom) error
	// Lease takes or renews mode's matcher lease for holder (false: another
	// holds it); DropLease gives it up.
	Lease(ctx context.Context, mode, holder string, ttl time.Duration) (bool, error)
	// Renew renews mode's lease while holder holds it: false when another
	// holds it or it lapsed (a lease given up, or past its TTL, is not
	// taken again by a renewal that answers late).
	Renew(ctx context.Context, mode, holder string, ttl time.Duration) (bool, error)
	DropLease(ctx context.Context, mode, holder string) error
	// Modes is every mode listed (Add); with an error, the modes of the
	// lists it could read (nil: none): a list unread is a Redis master
	// down or hanging, where its modes' queues and leases are too, and
	// the other modes are passed all the same. Forget drops mode from them
	// when its time passed (a pass found it with no ticket or pending
	// match: Pass.Left), else returns its time (no need to ask again
	// before): a mode stays listed while it has any, however long since
	// its last create (an outage longer than a ticket's TTL and grace must
	// not leave its pending matches and tickets unpassed).
	Modes(ctx context.Context) ([]string, error)
	Forget(ctx context.Context, mode string) (until time.Time, err error)
	// Searching is how many tickets mode's queue holds.
	Searching(ctx context.Context, mode string) (int, error)
}

// Notifier tells a user a match was found (the personal stream).
// MatchFound must tell a user of a match once: a match may be completed
// twice (a repair by another instance racing the first completion of an
// instance paused past its lease, or repeating one that died having told
// some users), so a call for a user and e.MatchID already told sends
// nothing and returns nil (the store's: within rooms.MessageKeyWindow).
// As a commit, a notice may wait for the replicas of its user's Redis
// master (the store's, Durability): short of them it returns
// ErrNoticeNotReplicated (held: the completion records nothing, and a
// repair tells the user again and waits again), or ErrToldUnreplicated
// (told all the same: the replicas short for too long).
type Notifier interface {
	MatchFound(ctx context.Context, uid string, e MatchFound) error
}

// MatchFound is the match_found event for one user.
type MatchFound struct {
	TicketID, MatchID, RoomID, Mode, Region string
	Team                                    int
	// Leader is the ticket's leader: a party member's match_found is the
	// leader's doing (Inboxes)
	Leader string
	// SeatHeldUntil is when the user's seat in the room is held to (the
	// mode's Rules.Hold from before the hold was made: a little sooner
	// than the room's own expiry of it).
	SeatHeldUntil time.Time
}

// RoomOpener makes a match's room.
type RoomOpener interface {
	// OpenMatchRoom creates the room of m (or finds it, when a retry
	// after a crash runs it again: its id derives from m.ID) for
	// maxPlayers, its seats reserved for m's users for hold, and returns
	// its id; rooms.ErrRoomNotFound when the retry finds the room it made
	// closed since (it is not made again). A retry that finds the room
	// banned some of m's users since (started or not) refuses their
	// tickets, holds the seats of the others and returns the id with a
	// *SeatsRefusedError naming the refused tickets' banned users; a
	// ticket one of whose users is in the room is not refused (that user
	// would be matched again while in this match): its banned users get
	// no seat. A refused ticket's seats stay held (ReleaseMatchSeats, once
	// its ticket went back). A committed match (m.Told) refuses no ticket: each keeps
	// the match, its banned users without a seat.
	OpenMatchRoom(ctx context.Context, m Match, maxPlayers int, hold time.Duration) (string, error)
	// ReserveMatchSeats holds seats of room id for users for hold (a
	// backfill), the room's players and held seats never more than size
	// (the mode's match size, whatever the room's maxPlayers says):
	// rooms.ErrRoomFull, ErrNotJoinable (also a locked room),
	// ErrRoomNotFound when the room cannot take them. A user the room
	// banned, and unless repair one in it or holding a seat of it already
	// (queued again), is *SeatsRefusedError and nothing is held, atomically
	// with the room's bans, players and holds. A repair (the first hold may
	// have been made, and taken) skips members and holds again.
	ReserveMatchSeats(ctx context.Context, id string, users []string, size int, hold time.Duration, repair bool) error
	// ReleaseMatchSeats releases the seats users hold in room id (their
	// ticket went back to the queue: a seat taken would put them in two
	// matches), whatever the room's status; a room gone is nil.
	ReleaseMatchSeats(ctx context.Context, id string, users []string) error
	// FreeSeats is the seats of room id neither taken nor held, counting
	// at most size seats (the mode's match size: an owner who raised the
	// room's maxPlayers lets friends in by code, not the matcher), and
	// whether it still takes players (waiting); (0, false) when it is gone.
	FreeSeats(ctx context.Context, id string, size int) (free int, open bool, err error)
}
