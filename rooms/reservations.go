package rooms

import (
	"context"
	"strconv"
	"strings"
	"time"
)

// Seat reservations hold seats of a waiting room for named users: a
// reserved seat counts toward MaxPlayers for everyone else (joins, the
// lobby, quick-join), only its user may take it (by id, even in a private
// room), and it is released when that user joins or when it expires (the
// room gets reservation_expired). A matchmaker reserves the seats of the
// users it matched into the room it creates, and releases those of a
// ticket it sends back to the queue (reservation_expired too).
const (
	// DefaultReservationTTL is how long seats are held when the caller
	// does not say.
	DefaultReservationTTL = 15 * time.Second
)

// ReserveParams is a reservation's request: the users (1..MaxPlayersLimit
// distinct players' user ids, each of the user-id grammar, ValidUserID)
// and how long their seats are held (1..300 s; DefaultReservationTTL when
// nil).
type ReserveParams struct {
	UserIDs    []string `json:"userIds" validate:"seats,unique,dive,userid"`
	TTLSeconds *int     `json:"ttlSeconds" validate:"omitnil,min=1,max=300"`
}

// Reservation is what reserving left: the room's reserved seats in all
// and when the seats just reserved expire.
type Reservation struct {
	ReservedSeats int
	ExpiresAt     time.Time
}

// SeatReserver holds seats for users.
type SeatReserver interface {
	// ReserveSeats holds seats of room id for userIDs (distinct) for ttl,
	// on behalf of its owner u or the server: members already in are
	// skipped, a user who holds a seat gets the new expiry. ErrNotMember
	// (ErrRoomNotFound for a private room), ErrNotOwner, ErrNotJoinable
	// unless waiting, then a *BannedUsersError (ErrUserBanned) when the room
	// banned any of userIDs, then ErrRoomFull when the seats taken and
	// reserved would pass MaxPlayers. On any error no seat is held.
	ReserveSeats(ctx context.Context, u User, id string, userIDs []string, ttl time.Duration) (Reservation, error)
}

// BannedUsersError is a reservation refused because the room banned
// Users (of the users named; a join would refuse them): no seat was held.
// It matches ErrUserBanned.
type BannedUsersError struct {
	Users []string
}

func (e *BannedUsersError) Error() string {
	return "the room banned " + strings.Join(e.Users, ", ") + ", for whom no seat may be held: " + ErrUserBanned.Error()
}

// Is makes errors.Is(err, ErrUserBanned) true.
func (e *BannedUsersError) Is(target error) bool { return target == ErrUserBanned }

// ReserveSeats validates p (a ValidationError naming each bad field,
// userIds.<i> for an id outside the user-id grammar or an API key's; no
// seat is held then) and holds the seats on behalf of the owner u, or of
// the server (ScopeWrite).
func (s *Service) ReserveSeats(ctx context.Context, u User, id string, p ReserveParams) (Reservation, error) {
	if err := RequireScope(u, ScopeWrite); err != nil {
		return Reservation{}, err
	}
	if !ValidRoomID(id) {
		return Reservation{}, ErrRoomNotFound
	}
	errs := structErrors(s.validate, p)
	for i, uid := range p.UserIDs {
		if strings.HasPrefix(uid, ServerUserPrefix) {
			errs.add("userIds."+strconv.Itoa(i), "must be a player's userId, not an API key's")
		}
	}
	if err := errs.err(); err != nil {
		return Reservation{}, err
	}
	ttl := DefaultReservationTTL
	if p.TTLSeconds != nil {
		ttl = time.Duration(*p.TTLSeconds) * time.Second
	}
	return s.store.ReserveSeats(ctx, u, id, p.UserIDs, ttl)
}
