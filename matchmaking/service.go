package matchmaking

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/realsync/realsync/rooms"
)

// Defaults of a Service's Config.
const (
	// DefaultGrace is how long a final ticket stays readable.
	DefaultGrace = 5 * time.Minute
	// DefaultMaxQueue is the most tickets one mode's queue holds.
	DefaultMaxQueue = 100_000
	// MaxRegions is the most regions a ticket lists.
	MaxRegions = 8
	// MaxRating bounds a rating's magnitude.
	MaxRating = 1e9
	// MaxTicketAttributes is the most attributes a ticket has.
	MaxTicketAttributes = 16
	// InFlight is how long a claim on a ticket not (yet) queued holds: a
	// create between its claims and its queueing, or one that died there.
	InFlight = 15 * time.Second
	// ClockTolerance is how far an instance's clock may run ahead of
	// Redis' before it takes a searching ticket for expired: a ticket's
	// ExpiresAt is Redis' time, and the pass (Redis' clock) matches it
	// until then, so an instance ahead that let its users queue again at
	// its own ExpiresAt would give them two searching tickets, matched
	// twice or against themselves. The pass marks a ticket expired on
	// Redis' clock; only a ticket no pass has marked waits this more.
	ClockTolerance = 5 * time.Second
)

// Service is the tickets' rules: it validates a ticket against its mode's
// rules, claims every party member's one active ticket, and queues it.
// Safe for concurrent use.
type Service struct {
	cfg Config
}

// Config is what a Service (and a Matcher) needs; cmd/realsyncd wires it.
type Config struct {
	Queue Queue
	// Observer counts what the service and the matcher do; nil: none.
	Observer Observer
	Rules    RuleSet
	// Names restrict the modes and regions (rooms.Names); empty: any.
	Names rooms.Names
	// Grace: DefaultGrace when 0. MaxQueue: DefaultMaxQueue when 0.
	Grace    time.Duration
	MaxQueue int
	// Now is the clock for the window and wait shown (time.Now when nil).
	Now func() time.Time
	// Quotas checks the room quotas of a new ticket's users; nil: none.
	Quotas RoomQuotas
	// Consent, when set, says whether a party member consents to be named
	// in a leader's ticket. nil: any user may be named.
	Consent Consent
	// Inboxes, when set, refuses a ticket naming a party member whose log
	// holds its strangers' share (rooms.ErrInboxFull). nil: not checked.
	Inboxes Inboxes
}

// Inboxes tells whether a user's log would refuse an event of a sender
// past the strangers' share (store/userlog): a party member's match_found
// from a leader the member does not follow counts there (never refused:
// the match stands), so a ticket naming a member whose share is full is
// refused instead, or a user who follows someone could be named in
// tickets matched one after the other until the matches pushed the events
// of the users they follow out of their log.
type Inboxes interface {
	// StrangersFull reports whether uid's log would refuse an event of
	// from (errors: rooms.ErrUnavailable).
	StrangersFull(ctx context.Context, uid, from string) (bool, error)
}

// Consent says whether a party member consents to be named in a leader's
// tickets (REALSYNC_PARTY_CONSENT: players.Parties, the member joined the
// leader's party; players.FollowConsent, the member follows the leader).
type Consent interface {
	// Consents reports whether member consents to leader's tickets
	// naming them (errors: rooms.ErrUnavailable).
	Consents(ctx context.Context, member, leader string) (bool, error)
	// Refusal says what a member who does not consent has not done, for
	// the error ("has not joined your party: ...").
	Refusal() string
}

// RoomQuotas checks, at a ticket's create, that a match's room would be
// within its users' room quotas: the room of a match counts for its owner
// even past them (the matcher, not the user, makes it), so without the
// check a user could hold rooms past the quotas by queueing again and
// again.
type RoomQuotas interface {
	// MayHoldRoom reports whether user uid may be in one more room (as
	// its owner when owner): nil, or rooms.ErrOwnedRoomsLimit or
	// rooms.ErrJoinedRoomsLimit.
	MayHoldRoom(ctx context.Context, uid string, owner bool) error
}

// withDefaults is c with its defaults filled in and its rules normalized
// (RuleSet.Normalize: the error names a bad field).
func (c Config) withDefaults() (Config, error) {
	rules, err := c.Rules.Normalize()
	if err != nil {
		return c, fmt.Errorf("matchmaking rules: %w", err)
	}
	c.Rules = rules
	if c.Grace == 0 {
		c.Grace = DefaultGrace
	}
	if c.MaxQueue == 0 {
		c.MaxQueue = DefaultMaxQueue
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c, nil
}

// NewService returns a Service as cfg says. Its rules are normalized
// (RuleSet.Normalize: unset fields take Default()'s values), and rules
// that do not pass are an error naming the field, so a rule set built in
// code fails here rather than on its tickets.
func NewService(cfg Config) (*Service, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Service{cfg: cfg}, nil
}

// Rules is the rule set the service applies.
func (s *Service) Rules() RuleSet { return s.cfg.Rules }

// TicketParams is a ticket's request.
type TicketParams struct {
	Mode         string         `json:"mode"`
	Regions      []string       `json:"regions"`
	Rating       *float64       `json:"rating"`
	Attributes   map[string]any `json:"attributes"`
	PartyUserIDs []string       `json:"partyUserIds"`
	// Key is the create's Idempotency-Key, if any (not of the body: the
	// API sets it). The ticket's id derives from it, the caller and the
	// rest of the params, so the same create run again under the key after
	// its first run's answer was lost (its instance died, the key's claim
	// lapsed) answers the first run's ticket, in whatever status, while it
	// is readable (its grace after it ended), instead of queueing a second
	// one (its users matched twice); another body under the key is another
	// ticket. Two runs at once (the key's claim lapsed while the first
	// still ran) share the ticket and its claims: a run that fails once
	// the other queued it answers that ticket and releases nothing; one
	// that failed and released them just before, or as, the other queued
	// it claims them back, as does the run that queued it (reclaim).
	Key string `json:"-"`
}

// Create is Prepare then Enqueue: it validates p against its mode's
// rules (a ValidationError naming every bad field), answers a keyed
// create's ticket when its first run queued it (Ticket.Again), checks
// that each party member consents (Config.Consent; ErrPartyConsent),
// makes the ticket u's and its party's one
// active ticket (ErrTicketActive when u or a member has another active:
// searching, or matched while its room is not known yet,
// ErrMemberQueuedInParty when u is covered by another leader's), checks
// that a match's room is within the room quotas of u (who may own it: the
// first ticket's leader does) and of its party (rooms.ErrOwnedRoomsLimit,
// rooms.ErrJoinedRoomsLimit, the claims released: a user holds at most one
// room past a quota, its one active ticket's), and queues it
// (ErrQueueFull). On rooms.ErrUnavailable the ticket may be queued: its
// users' claims stay (a next create is ErrTicketActive until the ticket
// ends, or for InFlight when it was not queued).
func (s *Service) Create(ctx context.Context, u rooms.User, p TicketParams) (Ticket, error) {
	c, err := s.Prepare(ctx, u, p, false)
	if err != nil || c.Found {
		return c.First, err
	}
	return s.Enqueue(ctx, c)
}

// Prepared is a ticket create that Prepare checked: the ticket a keyed
// create's earlier run queued (Found), or a ticket for Enqueue.
type Prepared struct {
	// First is the ticket of the key's earlier run, as it is now, with
	// Again set, when Found.
	First   Ticket
	Found   bool
	checked bool // by Prepare, Found false
	u       rooms.User
	p       TicketParams
	r       Rules
	seed    string
}

// Prepare is Create's part before anything is claimed, for a caller that
// counts the create on limits of its own between it and Enqueue. A
// player's create only (rooms.PlayersOnly). p is checked against its
// mode's rules (a ValidationError naming every bad field); then a keyed
// create's first run's ticket, when it queued one, is the answer (Found:
// whatever its members' consent says now, asked then); else its party's
// consent is asked (ErrPartyConsent), then whether each member's log takes
// the leader's match_found (Config.Inboxes; rooms.ErrInboxFull). sentAgain says that the key's
// create was answered before (the caller kept its answer): then p is
// not checked again (the rules may have changed since), the first run's
// ticket is the answer, and once it is gone (its grace after it ended
// passed) ErrTicketNotFound, not another ticket (its users could be
// matched twice). One read of the queue for a keyed create, none for an
// unkeyed one.
func (s *Service) Prepare(ctx context.Context, u rooms.User, p TicketParams, sentAgain bool) (Prepared, error) {
	if err := rooms.PlayersOnly(u); err != nil {
		return Prepared{}, err
	}
	c := Prepared{u: u, p: p, r: s.cfg.Rules.Of(p.Mode)}
	againKeyed := sentAgain && p.Key != ""
	if !againKeyed {
		if err := s.validate(u, p, c.r); err != nil {
			return Prepared{}, err
		}
	}
	var err error
	if c.seed, err = seedOf(u, p); err != nil {
		return Prepared{}, err
	}
	if c.First, c.Found, err = s.firstRun(ctx, p.Mode, c.seed); err != nil {
		return Prepared{}, err
	}
	if c.Found {
		c.First.Again = true
		c.First = s.view(c.First, c.r)
		return c, nil
	}
	if againKeyed {
		return Prepared{}, fmt.Errorf("the ticket this Idempotency-Key queued has ended and is gone (its grace passed): send a new key to queue again: %w", ErrTicketNotFound)
	}
	if err := s.consent(ctx, u, p.PartyUserIDs); err != nil {
		return Prepared{}, err
	}
	if err := s.inboxes(ctx, u, p.PartyUserIDs); err != nil {
		return Prepared{}, err
	}
	c.checked = true
	return c, nil
}

// Enqueue is Create's part from its claims on, for a create c that
// Prepare checked and did not find (Found false; else, or for a
// Prepared that Prepare did not answer, an error). The party's consent
// is the one Prepare read: a member who stops following the leader
// between the two is queued still, as one who stops once the ticket
// is queued; so are the members' inboxes.
func (s *Service) Enqueue(ctx context.Context, c Prepared) (Ticket, error) {
	u, p, r, seed := c.u, c.p, c.r, c.seed
	if !c.checked {
		return Ticket{}, errors.New("matchmaking: Enqueue of a create that Prepare did not answer, or found")
	}
	rating := *r.DefaultRating
	if p.Rating != nil {
		rating = *p.Rating
	}
	attrs := p.Attributes
	if attrs == nil {
		attrs = map[string]any{}
	}
	t := Ticket{ID: s.cfg.Queue.NewID(p.Mode, seed), Mode: p.Mode, Regions: p.Regions, Rating: rating, Attributes: attrs,
		UserID: u.ID, Name: u.Name, PartyUserIDs: p.PartyUserIDs}
	if t.PartyUserIDs == nil {
		t.PartyUserIDs = []string{}
	}
	ttl := time.Duration(r.TicketTTL)
	claimed, err := s.claimAll(ctx, t, ttl+s.cfg.Grace)
	if err == nil {
		// once the users' claims are this ticket's: each user's previous
		// ticket is final then, its match's room made (and counted)
		err = s.roomQuotas(ctx, t)
	}
	queuing := err == nil
	if queuing {
		g := GroupKey{Rating: t.Rating, Size: t.Size(), Regions: t.Regions, EqKey: EqKey(r, attrs), Users: t.Users()}
		var queued Ticket
		if queued, err = s.cfg.Queue.Add(ctx, t, g, ttl, s.cfg.Grace, s.cfg.MaxQueue); err == nil {
			if seed != "" {
				// the key's other run, failing, may have released the
				// claims (the same ticket's) before this queueing
				s.reclaim(ctx, claimed, t.ID, ttl+s.cfg.Grace)
			}
			return s.view(queued, r), nil
		}
	}
	if seed != "" {
		// the key's other run queued the ticket meanwhile (ErrTicketExists;
		// or two runs at once, the key's claim lapsed while one still ran,
		// and this one failed): that ticket is the answer, and the claims,
		// the same ticket's, stay
		if first, ok, gerr := s.queuedMeanwhile(ctx, t.ID, r); ok {
			return first, nil
		} else if errors.Is(err, ErrTicketExists) {
			return Ticket{}, gerr
		}
	}
	// rooms.ErrUnavailable from Add: the ticket may be queued (a reply
	// lost, or cut by ctx's deadline after the queueing was sent); its
	// claims stay its users', or they could queue a second searching
	// ticket next to it. Claims of a ticket that was not queued free
	// themselves after InFlight (claimAll).
	if !queuing || !errors.Is(err, rooms.ErrUnavailable) {
		s.releaseAll(claimed, t.ID)
		if seed != "" {
			// the key's other run may have queued the ticket between the
			// look above and the release: its claims are its users' again
			if first, ok, _ := s.queuedMeanwhile(ctx, t.ID, r); ok {
				s.reclaim(ctx, claimed, t.ID, ttl+s.cfg.Grace)
				return first, nil
			}
		}
	}
	return Ticket{}, err
}

// queuedMeanwhile is keyed ticket id as the key's other run queued it
// (Ticket.Again), ok false when it is not queued (or cannot be read: err).
func (s *Service) queuedMeanwhile(ctx context.Context, id string, r Rules) (Ticket, bool, error) {
	first, err := s.cfg.Queue.Get(ctx, id)
	if err != nil {
		return Ticket{}, false, err
	}
	first.Again = true
	return s.view(first, r), true, nil
}

// reclaim makes ticket id, queued, the active ticket of uids again, for
// ttl: the two runs of one keyed create share the ticket's claims, and
// one that failed releases them (Enqueue), maybe just before or after
// the other queued it; whichever of the two looks last claims them back.
// A user who claimed another ticket in between keeps it: the one case
// left where a user holds two active tickets, which needs a stall past
// the key's claim and a create of theirs within it.
func (s *Service) reclaim(ctx context.Context, uids []string, id string, ttl time.Duration) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	for _, uid := range uids {
		_, _ = s.cfg.Queue.Claim(ctx, uid, id, "", ttl)
	}
}

// firstRun is the ticket of mode that a keyed create's first run queued
// (seed: seedOf's), if any: ok false for an unkeyed create ("").
func (s *Service) firstRun(ctx context.Context, mode, seed string) (t Ticket, ok bool, err error) {
	if seed == "" {
		return Ticket{}, false, nil
	}
	t, err = s.cfg.Queue.Get(ctx, s.cfg.Queue.NewID(mode, seed))
	if errors.Is(err, ErrTicketNotFound) {
		return Ticket{}, false, nil
	}
	return t, err == nil, err
}

// seedOf is the seed of the id of u's ticket of p (Queue.NewID): of its
// caller, Idempotency-Key and body when keyed, "" when not.
func seedOf(u rooms.User, p TicketParams) (string, error) {
	if p.Key == "" {
		return "", nil
	}
	params, err := json.Marshal(p) // Key left out; map keys sorted
	if err != nil {
		return "", err
	}
	return u.ID + "\x00" + p.Key + "\x00" + string(params), nil
}

// inboxes checks that the log of each of party takes u's match_found
// (Config.Inboxes; nil: nothing checked).
func (s *Service) inboxes(ctx context.Context, u rooms.User, party []string) error {
	if s.cfg.Inboxes == nil {
		return nil
	}
	i, err := refusedBy(party, func(member string) (bool, error) { return s.cfg.Inboxes.StrangersFull(ctx, member, u.ID) })
	if err != nil || i < 0 {
		return err
	}
	return fmt.Errorf("the party member partyUserIds.%d's inbox holds as many unread messages, invites and matches from others as it takes; queue again once they have read some: %w", i, rooms.ErrInboxFull)
}

// consent checks that each of party consents to u, its leader, naming
// them (Config.Consent; nil: nothing checked).
func (s *Service) consent(ctx context.Context, u rooms.User, party []string) error {
	if s.cfg.Consent == nil {
		return nil
	}
	i, err := refusedBy(party, func(member string) (bool, error) {
		ok, err := s.cfg.Consent.Consents(ctx, member, u.ID)
		return !ok, err
	})
	if err != nil || i < 0 {
		return err
	}
	return fmt.Errorf("the party member partyUserIds.%d %s: %w", i, s.cfg.Consent.Refusal(), ErrPartyConsent)
}

// refusedBy asks refuses of every member of party at once (a round trip
// to each member's slot): the first member in the party's order that
// refuses (-1: none), or the first error in that order.
func refusedBy(party []string, refuses func(member string) (bool, error)) (int, error) {
	type answer struct {
		refused bool
		err     error
	}
	answers := make([]answer, len(party))
	members := make([]int, len(party))
	for i := range members {
		members[i] = i
	}
	concurrently(members, completeConcurrency, func(i int) error {
		refused, err := refuses(party[i])
		answers[i] = answer{refused, err}
		return nil
	})
	for i, a := range answers {
		if a.err != nil {
			return -1, a.err
		}
		if a.refused {
			return i, nil
		}
	}
	return -1, nil
}

// roomQuotas checks that each of t's users may be in the room of a match,
// its leader as the owner.
func (s *Service) roomQuotas(ctx context.Context, t Ticket) error {
	if s.cfg.Quotas == nil {
		return nil
	}
	for i, uid := range t.Users() {
		if err := s.cfg.Quotas.MayHoldRoom(ctx, uid, i == 0); err != nil {
			if i == 0 {
				return fmt.Errorf("a match's room would be past your room quotas (leave a room first): %w", err)
			}
			return fmt.Errorf("a match's room would be past the room quotas of the party member partyUserIds.%d: %w", i-1, err)
		}
	}
	return nil
}

// claimAll claims each of t's users' one active ticket, and returns the
// users claimed (to release on failure). A user's claim on a ticket that
// is no longer searching is replaced.
func (s *Service) claimAll(ctx context.Context, t Ticket, ttl time.Duration) ([]string, error) {
	var claimed []string
	for i, uid := range t.Users() {
		replace := ""
		for range 3 {
			held, err := s.cfg.Queue.Claim(ctx, uid, t.ID, replace, ttl)
			if err != nil {
				return claimed, err
			}
			if held.ID == "" {
				claimed = append(claimed, uid)
				break
			}
			other, err := s.cfg.Queue.Get(ctx, held.ID)
			if errors.Is(err, ErrTicketNotFound) && s.cfg.Now().Sub(held.At) < InFlight {
				// claimed by a create still on its way to the queue (or
				// one that died on it: free once InFlight passed)
				return claimed, fmt.Errorf("%s a ticket being created: %w", whose(i), ErrTicketActive)
			}
			if errors.Is(err, ErrTicketNotFound) || err == nil && s.final(other) {
				replace = held.ID
				continue
			}
			if err != nil {
				return claimed, err
			}
			return claimed, activeError(i, uid, other)
		}
		if len(claimed) <= i {
			return claimed, fmt.Errorf("user %d's claim kept changing: %w", i, ErrTicketActive)
		}
	}
	return claimed, nil
}

// activeError says why user i (0: the leader) of a new ticket may not
// queue: other is their active ticket (final says which are).
func activeError(i int, uid string, other Ticket) error {
	who := whose(i)
	if other.UserID != uid {
		if i == 0 {
			return fmt.Errorf("you are in the party of ticket %s, whose leader queued for you: %w", other.ID, ErrMemberQueuedInParty)
		}
		return fmt.Errorf("%s an active ticket (in another party): %w", who, ErrTicketActive)
	}
	if i == 0 {
		return fmt.Errorf("%s an active ticket, %s (%s): %w", who, other.ID, other.Status, ErrTicketActive)
	}
	return fmt.Errorf("%s an active ticket of their own: %w", who, ErrTicketActive)
}

// whose names user i of a new ticket (0: the leader) in an error.
func whose(i int) string {
	if i > 0 {
		return fmt.Sprintf("the party member partyUserIds.%d has", i-1)
	}
	return "you have"
}

func (s *Service) releaseAll(uids []string, id string) {
	// a fresh context: the request's may be what failed
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	for _, uid := range uids {
		_ = s.cfg.Queue.Release(ctx, uid, id)
	}
}

// final reports whether t no longer searches (its TTL passed, and
// ClockTolerance after, counts).
//
// A ticket matched without a room yet is not final: its match may still
// go back to the queue (a backfill whose room refused it, a match whose
// room closed before it was made, or whose room a repair found banned
// one of its users since), and its users would then hold two searching
// tickets.
func (s *Service) final(t Ticket) bool {
	inFlight := t.Status == Searching || t.Status == Matched && t.RoomID == ""
	return !inFlight || s.lapsed(t)
}

// lapsed reports whether t's TTL passed by every clock within
// ClockTolerance of this instance's.
func (s *Service) lapsed(t Ticket) bool {
	return !s.cfg.Now().Before(t.ExpiresAt.Add(ClockTolerance))
}

// Get returns ticket id as u may see it: one of its users (leader or
// party), or the server with the read scope; ErrTicketNotFound else. A
// searching ticket shows its window now and the time it waited.
func (s *Service) Get(ctx context.Context, u rooms.User, id string) (Ticket, error) {
	t, err := s.cfg.Queue.Get(ctx, id)
	if err != nil {
		return Ticket{}, err
	}
	if !s.visible(u, t) {
		return Ticket{}, ErrTicketNotFound
	}
	return s.view(t, s.cfg.Rules.Of(t.Mode)), nil
}

func (s *Service) visible(u rooms.User, t Ticket) bool {
	if u.Server {
		return u.Can(rooms.ScopeRead)
	}
	return slices.Contains(t.Users(), u.ID)
}

// view fills what a read shows: a searching ticket past its TTL (and
// ClockTolerance: lapsed) is expired (the next pass makes it so); a
// searching one its window and wait now.
func (s *Service) view(t Ticket, r Rules) Ticket {
	now := s.cfg.Now()
	if t.Status == Searching && s.lapsed(t) {
		t.Status = Expired
	}
	if t.Status == Searching {
		t.Waited = max(now.Sub(t.CreatedAt), 0)
		t.Window = r.WindowAt(t.Waited)
	}
	return t
}

// Cancel ends searching ticket id on behalf of one of its users (or the
// server with the write scope): ErrTicketNotFound, ErrTicketMatched. A
// ticket already cancelled or expired is left as it is (nil).
func (s *Service) Cancel(ctx context.Context, u rooms.User, id string) error {
	if u.Server && !u.Can(rooms.ScopeWrite) {
		return rooms.ScopeRequired(rooms.ScopeWrite)
	}
	t, err := s.cfg.Queue.Get(ctx, id)
	if err != nil {
		return err
	}
	if !u.Server && !slices.Contains(t.Users(), u.ID) {
		return ErrTicketNotFound
	}
	st, cancelled, err := s.cfg.Queue.Cancel(ctx, t, s.cfg.Grace)
	if err != nil {
		return err
	}
	if st == Matched {
		return fmt.Errorf("ticket %s was matched: %w", id, ErrTicketMatched)
	}
	s.releaseAll(t.Users(), t.ID)
	if cancelled && s.cfg.Observer != nil { // not a repeated cancel, nor one at the same time
		s.cfg.Observer.Ended(t.Mode, "cancelled", 1)
	}
	return nil
}

// EqKey encodes the values of r's equal attributes in attrs, each in its
// canonical form (rooms.AttrValueKey; absent ones as null), as a JSON
// array: tickets match only with the same key, so equal values match
// whatever their spelling (1, 1.0 and 1e0 alike; "1" is not 1). "" when r
// has no equal attribute.
func EqKey(r Rules, attrs map[string]any) string {
	var vals []string
	for _, a := range r.Attributes {
		if a.Equal {
			vals = append(vals, rooms.AttrValueKey(attrs[a.Name]))
		}
	}
	if len(vals) == 0 {
		return ""
	}
	return "[" + strings.Join(vals, ",") + "]"
}

// validate checks p for its mode's rules r.
func (s *Service) validate(u rooms.User, p TicketParams, r Rules) error {
	var errs []rooms.FieldError
	bad := func(field, format string, a ...any) {
		errs = append(errs, rooms.FieldError{Field: field, Message: fmt.Sprintf(format, a...)})
	}
	if !rooms.ValidName(p.Mode) {
		bad("mode", "must be 1..32 of a-z 0-9 _ -, starting with a letter or digit")
	}
	errs = append(errs, s.cfg.Names.CheckMode("mode", p.Mode)...)
	if len(p.Regions) < 1 || len(p.Regions) > MaxRegions {
		bad("regions", "must list 1..%d regions", MaxRegions)
	}
	for i, reg := range p.Regions {
		f := fmt.Sprintf("regions.%d", i)
		if !rooms.ValidName(reg) {
			bad(f, "must be 1..32 of a-z 0-9 _ -, starting with a letter or digit")
		}
		if slices.Index(p.Regions, reg) < i {
			bad(f, "appears twice")
		}
		errs = append(errs, s.cfg.Names.CheckRegion(f, reg)...)
	}
	if p.Rating != nil && (math.IsNaN(*p.Rating) || math.Abs(*p.Rating) > MaxRating) {
		bad("rating", "must be a number within ±%g", MaxRating)
	}
	if len(p.Attributes) > MaxTicketAttributes {
		bad("attributes", "at most %d attributes", MaxTicketAttributes)
	}
	for k, v := range p.Attributes {
		if !attrRe.MatchString(k) {
			bad("attributes."+k, "is no attribute name: 1..32 letters, digits or _, a letter first")
		} else if !validAttrValue(v) {
			bad("attributes."+k, "must be a string (≤ 128 characters), a finite number (≤ 64 characters) or a boolean")
		}
	}
	for i, a := range r.Attributes {
		if a.Equal {
			continue
		}
		v, ok := number(p.Attributes[a.Name])
		if !ok {
			bad("attributes."+a.Name, "mode %s requires a number (attributes[%d] of its rules)", p.Mode, i)
			continue
		}
		if a.Min != nil && v < *a.Min || a.Max != nil && v > *a.Max {
			bad("attributes."+a.Name, "must be within %s", rangeText(a))
		}
	}
	if len(p.PartyUserIDs) > r.teamCap()-1 {
		bad("partyUserIds", "mode %s takes parties of at most %d players (a team), leader included", p.Mode, r.teamCap())
	}
	for i, uid := range p.PartyUserIDs {
		f := fmt.Sprintf("partyUserIds.%d", i)
		switch {
		case !rooms.ValidUserID(uid):
			bad(f, "%s", rooms.UserIDRule)
		case strings.HasPrefix(uid, rooms.ServerUserPrefix):
			bad(f, "must be a player's userId, not an API key's")
		case uid == u.ID:
			bad(f, "is you: the leader is in the party already")
		case slices.Index(p.PartyUserIDs, uid) < i:
			bad(f, "appears twice")
		}
	}
	if len(errs) > 0 {
		return &rooms.ValidationError{Fields: errs}
	}
	return nil
}

func rangeText(a Attribute) string {
	lo, hi := "-∞", "+∞"
	if a.Min != nil {
		lo = fmt.Sprint(*a.Min)
	}
	if a.Max != nil {
		hi = fmt.Sprint(*a.Max)
	}
	return "[" + lo + ", " + hi + "]"
}

// validAttrValue reports whether v may be a ticket attribute's value (its
// name is of the rules' attribute-name form, attrRe): a boolean or what a
// room attribute may hold (rooms.ValidAttrValue: a string of at most 128
// characters, a finite number of at most 64 characters).
func validAttrValue(v any) bool {
	_, isBool := v.(bool)
	return isBool || rooms.ValidAttrValue(v)
}

// number is v as a finite number (a decoder's float64 or json.Number).
func number(v any) (float64, bool) {
	var f float64
	switch x := v.(type) {
	case float64:
		f = x
	case json.Number:
		var err error
		if f, err = x.Float64(); err != nil {
			return 0, false
		}
	default:
		return 0, false
	}
	return f, !math.IsInf(f, 0) && !math.IsNaN(f)
}
