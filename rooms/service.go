package rooms

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/go-playground/validator/v10"
)

// Service applies the room rules that need no stored data, then delegates
// to the Store, which applies the rest atomically. Safe for concurrent use.
type Service struct {
	store    Store
	validate *validator.Validate
	names    Names
	notices  Notifier
}

// Config is what a Service needs; cmd/realsyncd wires it.
type Config struct {
	Store Store
	// Names restrict the modes and regions of rooms and quick-joins
	// (a validation error naming the field); empty: any of their form.
	Names Names
	// Notices, when set, tells kicked and banned players, and the members
	// of a room its owner or the server closed, on their personal streams.
	Notices Notifier
}

// New returns a Service as cfg says.
func New(cfg Config) *Service {
	return &Service{store: cfg.Store, validate: newValidator(), names: cfg.Names, notices: cfg.Notices}
}

// NewService returns a Service over store accepting any mode and region.
func NewService(store Store) *Service { return New(Config{Store: store}) }

// Create validates p (mode and region also against the allowed Names;
// the name once folded, foldName), applies the defaults (maxPlayers 8,
// public, owner policy) and creates the room so named with u as owner,
// player 1. Returns a
// ValidationError naming every bad field, or ErrTooLarge when the initial
// state is over its totals.
func (s *Service) Create(ctx context.Context, u User, p CreateParams) (Joined, error) {
	if err := PlayersOnly(u); err != nil {
		return Joined{}, err
	}
	p.Name = foldName(p.Name)
	errs := structErrors(s.validate, p)
	errs = append(errs, s.names.CheckMode("mode", p.Mode)...)
	errs = append(errs, s.names.CheckRegion("region", p.Region)...)
	state, err := compact(p.State) // checked as it is stored
	if err != nil {
		errs.add("state", "must be valid JSON")
	} else {
		errs = append(errs, validateState("state", state, false)...)
	}
	if err := errs.err(); err != nil {
		return Joined{}, err
	}
	if keys, size := StateTotals(state); keys > MaxStateKeys || size > MaxStateBytes {
		return Joined{}, fmt.Errorf("state has %d keys and %d bytes, limits %d and %d: %w", keys, size, MaxStateKeys, MaxStateBytes, ErrTooLarge)
	}
	return s.store.Create(ctx, u, newRoom(p, state))
}

func newRoom(p CreateParams, state State) NewRoom {
	r := NewRoom{Name: p.Name, Mode: p.Mode, Region: p.Region, MaxPlayers: DefaultMaxPlayers,
		Visibility: Public, Attributes: p.Attributes, State: state, StatePolicy: PolicyOwner, Key: p.Key}
	if p.MaxPlayers != nil {
		r.MaxPlayers = *p.MaxPlayers
	}
	if p.Visibility != nil {
		r.Visibility = *p.Visibility
	}
	if p.StatePolicy != nil {
		r.StatePolicy = *p.StatePolicy
	}
	if r.Attributes == nil {
		r.Attributes = map[string]any{}
	}
	return r
}

// Get returns the room as u may see it: ErrRoomNotFound for a private room
// u is not in; the invite code only for members. The server (ScopeRead)
// sees every room whole.
func (s *Service) Get(ctx context.Context, u User, id string) (Room, error) {
	if err := RequireScope(u, ScopeRead); err != nil {
		return Room{}, err
	}
	if !ValidRoomID(id) {
		return Room{}, ErrRoomNotFound
	}
	r, _, err := s.store.Get(ctx, id, false)
	if err != nil {
		return Room{}, err
	}
	if err := r.Refusal(u); errors.Is(err, ErrRoomNotFound) { // a public room shows to anyone
		return Room{}, err
	}
	return ViewFor(r, u), nil
}

// ViewFor returns r as u may see it: the invite code only for members and
// the server.
func ViewFor(r Room, u User) Room {
	if _, ok := r.Member(u.ID); !ok && !u.Server {
		r.InviteCode = ""
	}
	return r
}

// Join adds u to a public room by id (see Store.Join for the error order).
func (s *Service) Join(ctx context.Context, u User, id string) (Joined, error) {
	if err := PlayersOnly(u); err != nil {
		return Joined{}, err
	}
	if !ValidRoomID(id) {
		return Joined{}, ErrRoomNotFound
	}
	return s.store.Join(ctx, u, id)
}

// JoinByCode joins the room of an invite code. Codes are case-insensitive
// and accept Crockford look-alikes; a malformed or unknown code is
// ErrRoomNotFound, an empty one a validation error.
func (s *Service) JoinByCode(ctx context.Context, u User, code string) (Joined, error) {
	if err := PlayersOnly(u); err != nil {
		return Joined{}, err
	}
	if strings.TrimSpace(code) == "" {
		return Joined{}, Invalid("inviteCode", "is required")
	}
	norm, ok := NormalizeCode(code)
	if !ok {
		return Joined{}, ErrRoomNotFound
	}
	return s.store.JoinByCode(ctx, u, norm)
}

// Leave removes u from the room.
func (s *Service) Leave(ctx context.Context, u User, id string) error {
	if err := PlayersOnly(u); err != nil {
		return err
	}
	if !ValidRoomID(id) {
		return ErrRoomNotFound
	}
	return s.store.Leave(ctx, u, id)
}

// Kick removes the player playerID (a decimal string from the path) on
// behalf of the owner u, or of the server (ScopeAdmin); with ban, that
// player's user may not join the room again (ErrBanned) for as long as it
// lives. A playerID that is not a positive integer in canonical form
// (ParseCanonical: "02" and "+2" are not player 2) is ErrPlayerNotFound.
func (s *Service) Kick(ctx context.Context, u User, id, playerID string, ban bool) error {
	if err := RequireScope(u, ScopeAdmin); err != nil {
		return err
	}
	if !ValidRoomID(id) {
		return ErrRoomNotFound
	}
	pid, ok := ParseCanonical(playerID)
	if !ok || pid < 1 {
		return ErrPlayerNotFound
	}
	var uid string
	if s.notices != nil {
		uid = s.userOf(ctx, id, int(pid)) // playerIds are never reused
	}
	var err error
	if ban {
		err = s.store.Ban(ctx, u, id, int(pid))
	} else {
		err = s.store.Kick(ctx, u, id, int(pid))
	}
	if err == nil && uid != "" {
		// the room's stream told it already: a notice lost to a store
		// failure here is not worth failing the kick for
		nctx, cancel := noticeContext(ctx)
		defer cancel()
		_ = s.notices.Kicked(nctx, uid, id, ban)
	}
	return err
}

// Update validates p (its name once folded, foldName) and applies it on
// behalf of the owner u, or of the server (ScopeWrite).
func (s *Service) Update(ctx context.Context, u User, id string, p UpdateParams) (Room, error) {
	if err := RequireScope(u, ScopeWrite); err != nil {
		return Room{}, err
	}
	if !ValidRoomID(id) {
		return Room{}, ErrRoomNotFound
	}
	if p.Name != nil {
		name := foldName(*p.Name)
		p.Name = &name
	}
	if err := structErrors(s.validate, p).err(); err != nil {
		return Room{}, err
	}
	r, err := s.store.Update(ctx, u, id, p)
	return ViewFor(r, u), err
}

// Delete closes the room on behalf of its owner u, or of the server
// (ScopeAdmin), and tells its members of it (room_closed on their
// personal streams): those in it as it closed, as the close read them, u
// too (its other platforms learn of it as the others do).
func (s *Service) Delete(ctx context.Context, u User, id string) error {
	if err := RequireScope(u, ScopeAdmin); err != nil {
		return err
	}
	if !ValidRoomID(id) {
		return ErrRoomNotFound
	}
	uids, err := s.store.Delete(ctx, u, id)
	if err == nil && s.notices != nil && len(uids) > 0 {
		// as for Kicked: the room's stream told its connected members
		nctx, cancel := noticeContext(ctx)
		defer cancel()
		_ = s.notices.Closed(nctx, uids, id, ClosedByOwner)
	}
	return err
}

// State returns the room state to a member, or to the server
// (ScopeRead): ErrRoomNotFound for a private room u is not in, ErrNotMember
// for a public one.
func (s *Service) State(ctx context.Context, u User, id string) (StateView, error) {
	if err := RequireScope(u, ScopeRead); err != nil {
		return StateView{}, err
	}
	if !ValidRoomID(id) {
		return StateView{}, ErrRoomNotFound
	}
	r, st, err := s.store.Get(ctx, id, true)
	if err != nil {
		return StateView{}, err
	}
	if err := r.Refusal(u); err != nil {
		return StateView{}, err
	}
	return StateView{Version: r.Version, StateVersion: r.StateVersion, State: st}, nil
}

// PatchState validates a JSON merge patch (null deletes a key) and applies
// it on behalf of member u, or of the server (ScopeWrite: any key, the
// event says by 0). ifMatch is the raw If-Match header ("" for none), read
// by ParseIfMatch: a malformed one is a ValidationError naming If-Match.
func (s *Service) PatchState(ctx context.Context, u User, id string, patch State, ifMatch string) (Versions, error) {
	if err := RequireScope(u, ScopeWrite); err != nil {
		return Versions{}, err
	}
	if !ValidRoomID(id) {
		return Versions{}, ErrRoomNotFound
	}
	p, err := statePatch(patch, ifMatch)
	if err != nil {
		return Versions{}, err
	}
	return s.store.PatchState(ctx, u, id, p)
}

// statePatch checks a merge patch as it is stored, its values compacted
// (validateState: a value's size is that of its compact form, as the
// state's totals count it, whatever white space it was sent with), then
// If-Match, and splits it into the compacted values to set and the keys
// to delete. Errors: a ValidationError.
func statePatch(patch State, ifMatch string) (StatePatch, error) {
	patch, err := compact(patch)
	if err != nil {
		return StatePatch{}, Invalid("state", "must be valid JSON")
	}
	if err := validateState("", patch, true).err(); err != nil {
		return StatePatch{}, err
	}
	m, err := ParseIfMatch(ifMatch)
	if err != nil {
		return StatePatch{}, err
	}
	p := StatePatch{Set: State{}, IfMatch: m}
	for k, v := range patch {
		if isNull(v) {
			p.Del = append(p.Del, k)
		} else {
			p.Set[k] = v
		}
	}
	return p, nil
}

// NoIfMatch is StatePatch.IfMatch when any stateVersion is accepted;
// NeverMatches when the header cannot match any.
const (
	NoIfMatch    int64 = -1
	NeverMatches int64 = -2
)

// ParseIfMatch reads an If-Match header (RFC 9110 13.1.1): "*", or a
// comma-separated list of entity tags, each double-quoted and perhaps
// weak (W/"3"). It returns NoIfMatch for "" (no header) and "*"; the
// stateVersion a strong tag names as ETag writes it ("3"); NeverMatches
// when no tag can match (If-Match compares strongly, so a weak tag never
// matches; nor does "03" or "abc"). Errors (a ValidationError naming
// If-Match): a header of another form (an unquoted 3, "*" in a list), or
// one naming two different stateVersions, which a patch cannot check at
// once.
func ParseIfMatch(h string) (int64, error) {
	h = strings.TrimSpace(h)
	if h == "" || h == "*" {
		return NoIfMatch, nil
	}
	m, tags := NeverMatches, 0
	for _, el := range strings.Split(h, ",") {
		el = strings.Trim(el, " \t")
		if el == "" {
			continue // a list may have empty elements (RFC 9110 5.6.1.2)
		}
		weak := strings.HasPrefix(el, "W/")
		tag := strings.TrimPrefix(el, "W/")
		if len(tag) < 2 || tag[0] != '"' || tag[len(tag)-1] != '"' || !validETagChars(tag[1:len(tag)-1]) {
			return 0, errIfMatchForm
		}
		tags++
		n, err := strconv.ParseInt(tag[1:len(tag)-1], 10, 64)
		if weak || err != nil || n < 0 || ETag(n) != tag {
			continue
		}
		if m != NeverMatches && m != n {
			return 0, Invalid("If-Match", `must name one stateVersion, not several: If-Match: "3"`)
		}
		m = n
	}
	if tags == 0 {
		return 0, errIfMatchForm
	}
	return m, nil
}

// errIfMatchForm: an If-Match header that is neither "*" nor entity tags.
var errIfMatchForm = Invalid("If-Match", `must be the stateVersion in double quotes (If-Match: "3"), a list of such entity tags, or *`)

// validETagChars: s is an entity tag's opaque value, between its quotes
// (etagc: visible ASCII but '"', and obs-text).
func validETagChars(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x21 || c == '"' || c == 0x7f {
			return false
		}
	}
	return true
}

// ETag is the entity tag of a stateVersion.
func ETag(stateVersion int64) string { return `"` + strconv.FormatInt(stateVersion, 10) + `"` }

// CheckMember returns u's playerId in the room: ErrRoomNotFound for a
// private room u is not in (as Get), ErrNotMember for a public one.
func (s *Service) CheckMember(ctx context.Context, u User, id string) (int, error) {
	if !ValidRoomID(id) {
		return 0, ErrRoomNotFound
	}
	r, _, err := s.store.Get(ctx, id, false)
	if err != nil {
		return 0, err
	}
	if err := r.Refusal(u); err != nil {
		return 0, err
	}
	p, _ := r.Member(u.ID)
	return p.PlayerID, nil
}
