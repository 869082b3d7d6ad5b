package rooms

import "context"

// Store keeps rooms. Every mutation is atomic: it checks the rules that need
// current data, writes the room and every index it appears in, bumps the
// room version and appends and publishes the resulting events, all at once.
// Implementations report broken rules with this package's sentinel errors
// and an unreachable backend with ErrUnavailable. A User with Server set is
// the server: it is no member, and the owner, membership and state-policy
// rules do not apply to it (the service checks its scopes first).
type Store interface {
	// Create stores a new room with u as its owner, player 1.
	Create(ctx context.Context, u User, p NewRoom) (Joined, error)
	// Get returns the room with its players, and its state when withState.
	// ErrRoomNotFound if it does not exist. It applies no visibility rule.
	Get(ctx context.Context, id string, withState bool) (Room, State, error)
	// Join adds u to the room; a member gets its existing playerId back.
	// Non-members: ErrRoomNotFound (also private rooms), then ErrNotJoinable,
	// then ErrRoomFull.
	Join(ctx context.Context, u User, id string) (Joined, error)
	// JoinByCode is Join for the room holding invite code; ErrRoomNotFound
	// for an unknown code. code is already normalized.
	JoinByCode(ctx context.Context, u User, code string) (Joined, error)
	// Leave removes u (ErrNotMember, or ErrRoomNotFound for a private room).
	Leave(ctx context.Context, u User, id string) error
	// Kick removes playerID on behalf of the owner u: ErrNotMember,
	// ErrNotOwner, ErrPlayerNotFound; kicking oneself is a validation error.
	Kick(ctx context.Context, u User, id string, playerID int) error
	// Ban is Kick that also bans the player's user from the room: a later
	// join of the room by that user is ErrBanned. The room holds at most
	// MaxBans bans (then a validation error on "ban"); they go with it.
	Ban(ctx context.Context, u User, id string, playerID int) error
	// Update applies the owner's changes: ErrNotMember, ErrNotOwner,
	// ErrInvalidTransition, or a validation error on maxPlayers.
	Update(ctx context.Context, u User, id string, p UpdateParams) (Room, error)
	// Delete closes the room on behalf of its owner (or the server), and
	// returns the user ids of its members as it closed, u's among them:
	// read in the close itself, so that a join answered before it is
	// there and a leave answered before it is not.
	Delete(ctx context.Context, u User, id string) (members []string, err error)
	// PatchState merge-patches the state on behalf of member u; a nil value
	// deletes its key. ErrVersionMismatch when ifMatch >= 0 differs from the
	// stateVersion, ErrStateKeyForbidden, ErrTooLarge past the totals.
	PatchState(ctx context.Context, u User, id string, patch StatePatch) (Versions, error)

	// MyRooms returns up to limit of the rooms u is in after position
	// after (nil: from the newest), newest first, without players, and
	// the position of the page's last room when more follow (nil on the
	// last page). It reads the creation time of each of u's rooms, and
	// only the page's rooms whole.
	MyRooms(ctx context.Context, u User, after *RoomPosition, limit int) ([]Joined, *RoomPosition, error)

	MessageStore
	Matchmaker
	SeatReserver
}
