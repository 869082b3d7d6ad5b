package players

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/realsync/realsync/rooms"
)

// PartyTTL is how long a player stays in the party they joined (PUT
// /v1/me/party) after they last joined it: a party consents for a play
// session, not for good; joining again renews it.
const PartyTTL = 24 * time.Hour

// ErrNotInParty: the player is in no party (GET /v1/me/party, 404).
var ErrNotInParty = errors.New("not in a party")

// MaxPartyListed is the most members GET /v1/me/party/members lists: the
// most recently joined.
const MaxPartyListed = 100

// Party is the party a player is in: the leader whose tickets may name
// them (matchmaking's party consent), until ExpiresAt.
type Party struct {
	LeaderUserID string
	ExpiresAt    time.Time
}

// PartyStore is where players' parties are kept: one per user, in the
// user's slot, until its expiry.
type PartyStore interface {
	// SetParty puts user in leader's party for ttl, replacing any other,
	// and returns it. Of joins of one user at once, one party stands, the
	// others each replaced by a later one as soon as written (each join
	// returns the party it asked).
	SetParty(ctx context.Context, user, leader string, ttl time.Duration) (Party, error)
	// Party is user's party; false when none (or expired).
	Party(ctx context.Context, user string) (Party, bool, error)
	// LeaveParty takes user out of their party, if any.
	LeaveParty(ctx context.Context, user string) error
	// PartyMembers is the users in leader's party now, the most recently
	// joined first, at most max.
	PartyMembers(ctx context.Context, leader string, max int) ([]PartyMember, error)
}

// PartyMember is a user in a leader's party, until ExpiresAt (when it
// leaves unless it joins again).
type PartyMember struct {
	UserID    string
	ExpiresAt time.Time
}

// Parties serves the party routes and answers matchmaking's party
// consent: a player joins one leader's party at a time, and only that
// leader's tickets may name them.
type Parties struct{ store PartyStore }

// NewParties returns Parties on store.
func NewParties(store PartyStore) *Parties { return &Parties{store: store} }

// Join puts player u in leader's party for PartyTTL, replacing any other
// party u was in. Errors: a rooms.ValidationError naming leaderUserId (not
// a user id, an API key's, or u's own), rooms.ErrScopeRequired for an API
// key, rooms.ErrUnavailable.
func (p *Parties) Join(ctx context.Context, u rooms.User, leader string) (Party, error) {
	if err := rooms.PlayersOnly(u); err != nil {
		return Party{}, err
	}
	switch {
	case !rooms.ValidUserID(leader):
		return Party{}, rooms.Invalid("leaderUserId", "%s", rooms.UserIDRule)
	case strings.HasPrefix(leader, rooms.ServerUserPrefix):
		return Party{}, rooms.Invalid("leaderUserId", "must be a player's userId, not an API key's")
	case leader == u.ID:
		return Party{}, rooms.Invalid("leaderUserId", "is you: a leader's tickets name their party, not themself")
	}
	return p.store.SetParty(ctx, u.ID, leader, PartyTTL)
}

// Of is player u's party: ErrNotInParty when none.
func (p *Parties) Of(ctx context.Context, u rooms.User) (Party, error) {
	if err := rooms.PlayersOnly(u); err != nil {
		return Party{}, err
	}
	party, ok, err := p.store.Party(ctx, u.ID)
	if err == nil && !ok {
		err = ErrNotInParty
	}
	return party, err
}

// Leave takes player u out of their party (none: nothing to do).
func (p *Parties) Leave(ctx context.Context, u rooms.User) error {
	if err := rooms.PlayersOnly(u); err != nil {
		return err
	}
	return p.store.LeaveParty(ctx, u.ID)
}

// Members is the users in player u's party (who joined it naming u and
// have neither left nor let it expire), the most recently joined first,
// at most MaxPartyListed. Errors: rooms.ErrScopeRequired for an API key,
// rooms.ErrUnavailable.
func (p *Parties) Members(ctx context.Context, u rooms.User) ([]PartyMember, error) {
	if err := rooms.PlayersOnly(u); err != nil {
		return nil, err
	}
	return p.store.PartyMembers(ctx, u.ID, MaxPartyListed)
}

// Consents reports whether member is in leader's party: matchmaking's
// party consent (REALSYNC_PARTY_CONSENT=party).
func (p *Parties) Consents(ctx context.Context, member, leader string) (bool, error) {
	party, ok, err := p.store.Party(ctx, member)
	return ok && party.LeaderUserID == leader, err
}

// Refusal says what a member who does not consent has not done.
func (p *Parties) Refusal() string {
	return "has not joined your party: a user consents to be named in a player's tickets by joining their party (PUT /v1/me/party)"
}
