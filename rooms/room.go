// Package rooms is the RealSync room domain: the types, the rules that need
// no stored data, and the service the HTTP layer calls. It knows nothing of
// HTTP or Redis: the rules that need current data run atomically in the
// Store implementation (package store), which reports them with this
// package's sentinel errors.
package rooms

import (
	"encoding/json"
	"time"
)

// Status is a room's lifecycle stage.
type Status string

// Room statuses. Waiting rooms may be joined; finished is terminal.
const (
	Waiting  Status = "waiting"
	Playing  Status = "playing"
	Finished Status = "finished"
)

// Statuses lists every status in index order.
var Statuses = []Status{Waiting, Playing, Finished}

// Visibility decides who may see and join a room.
type Visibility string

// Public rooms are listed and joinable by id; private rooms only by invite
// code, and are invisible (not found) to non-members.
const (
	Public  Visibility = "public"
	Private Visibility = "private"
)

// StatePolicy decides who may write which state keys.
type StatePolicy string

// PolicyOwner lets the owner write any key and other members only keys
// prefixed "player_<playerId>_"; PolicyOpen lets any member write any key.
const (
	PolicyOwner StatePolicy = "owner"
	PolicyOpen  StatePolicy = "open"
)

// User is the authenticated caller. ID is never shown to other players.
// A player's user has Server false; the server (an API key) has Server
// true, an ID that no player can have ("key:<key id>", for rate limits and
// logs), and its Scopes. The server is never a member of a room: in events
// it is player 0, which is never a player.
type User struct {
	ID     string // ServerUserPrefix + the key's id for the server
	Name   string
	Server bool
	Scopes Scope
}

// ServerUserPrefix starts the user id of every API key ("key:<id>"): no
// player's userId has it (tokens with such a subject are refused).
const ServerUserPrefix = "key:"

// GuestPrefix starts the user id of every guest (POST /v1/auth/guest): a
// guest's data is kept as long as its identity, a day unless renewed.
const GuestPrefix = "g_"

// Player is a member of a room. PlayerIDs are unique within a room and
// never reused; UserID is private to the player.
type Player struct {
	PlayerID  int
	UserID    string
	Name      string
	JoinedAt  time.Time
	Connected bool
}

// Room is a room as stored. Players is in join (playerId) order and empty in
// list results. InviteCode is set for private rooms; View decides who sees it.
type Room struct {
	ID          string
	Name        string
	Mode        string
	Region      string
	Visibility  Visibility
	Status      Status
	Locked      bool
	MaxPlayers  int
	PlayerCount int
	// ReservedSeats are seats held for named users (Store.ReserveSeats)
	// until they join or the reservation expires; they count toward
	// MaxPlayers for everyone else.
	ReservedSeats int
	OwnerPlayerID int
	Attributes    map[string]any
	StatePolicy   StatePolicy
	CreatedAt     time.Time
	UpdatedAt     time.Time
	Version       int64
	StateVersion  int64
	InviteCode    string
	Players       []Player
}

// Joinable reports whether anyone may join r without an invite code: it
// is public, waiting, unlocked and has a seat neither taken nor reserved.
// The one rule of what the lobby shows, quick-join picks and the joinable
// and fill indexes hold (store/internal/roomlua/lua/prelude.lua places rooms by the same
// fields).
func (r *Room) Joinable() bool {
	return r.Visibility == Public && r.Status == Waiting && !r.Locked && r.PlayerCount+r.ReservedSeats < r.MaxPlayers
}

// Refusal is the one rule of what a caller who is not in r may learn of
// it: nothing of a private room (ErrRoomNotFound, the answer for a room
// that does not exist, so ids and codes cannot be probed), and that they
// are not a member of a public one (ErrNotMember); nil for members and the
// server. The scripts' deny() (store/internal/roomlua/lua/prelude.lua) answers the same.
func (r *Room) Refusal(u User) error {
	if _, ok := r.Member(u.ID); ok || u.Server {
		return nil
	}
	if r.Visibility == Private {
		return ErrRoomNotFound
	}
	return ErrNotMember
}

// Member returns the caller's player in the room, if the caller is a member.
func (r *Room) Member(userID string) (Player, bool) {
	for _, p := range r.Players {
		if p.UserID == userID {
			return p, true
		}
	}
	return Player{}, false
}

// Joined is the answer to create and join: the room and the caller's player.
type Joined struct {
	Room     Room
	PlayerID int
}

// State is a room's shared state: top-level key → JSON value.
type State map[string]json.RawMessage

// StateView is the state with the versions it was read at.
type StateView struct {
	Version      int64
	StateVersion int64
	State        State
}

// Versions are a room's event version and state version after a write.
type Versions struct {
	Version      int64
	StateVersion int64
}
