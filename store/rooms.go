package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/matchmaking"
	"github.com/realsync/realsync/rooms"

	"github.com/realsync/realsync/store/internal/layout"
	"github.com/realsync/realsync/store/internal/redisx"
)

// errCodeTaken: a fresh room id or invite code collided; the caller retries
// with new random ones. errIDTaken is errCodeTaken for the id: a room, or
// a closed room's log, holds it.
var (
	errCodeTaken = errors.New("store: room id or invite code taken")
	errIDTaken   = fmt.Errorf("%w: the id", errCodeTaken)
)

// errJoinableExists: a quick-join create found a joinable room meanwhile.
var errJoinableExists = errors.New("store: a joinable room exists")

const maxCollisionRetries = 5

// common is the ARGV every mutation script starts with (lua/prelude.lua).
func (s *Store) common(shard int, id string) []any {
	return []any{id, s.keys.Channel(shard, id), s.pubcmd, layout.EventTag(), s.argv[0], s.argv[1]}
}

// Create implements rooms.Store. The room lives in a stripe of its (mode,
// region) (layout.Placement: the home shard with K = 1), chosen at random among
// the current configuration's, whatever its visibility, so it never moves.
func (s *Store) Create(ctx context.Context, u rooms.User, p rooms.NewRoom) (rooms.Joined, error) {
	return s.create(ctx, u, p, false)
}

// create creates p; with onlyIfNone, only when no joinable room of its mode
// and region exists (errJoinableExists otherwise).
func (s *Store) create(ctx context.Context, u rooms.User, p rooms.NewRoom, onlyIfNone bool) (rooms.Joined, error) {
	if err := rooms.PlayersOnly(u); err != nil {
		return rooms.Joined{}, err
	}
	attrs, err := json.Marshal(p.Attributes)
	if err != nil {
		return rooms.Joined{}, fmt.Errorf("store: attributes: %w", err)
	}
	shard := s.stripes.RandomCreateShard(p.Mode, p.Region)
	_, size := rooms.StateTotals(p.State)
	for range maxCollisionRetries {
		id := layout.NewRoomID(shard)
		code := ""
		if p.Visibility == rooms.Private {
			code = layout.NewCode(shard, s.shards)
		}
		call := createCall{s.indexedScope(shard, id, p.Mode, p.Region), s.newRoom(u, p, attrs, size, code, onlyIfNone)}
		h, err := s.held.Reserve(ctx, u.ID, id, true)
		if err != nil {
			return rooms.Joined{}, err
		}
		j, err := s.joined(s.runThenRead(ctx, call, shard, id, false))
		if notRun(err) {
			s.held.Release(ctx, h)
		}
		if errors.Is(err, errCodeTaken) {
			continue
		}
		return j, err
	}
	return rooms.Joined{}, fmt.Errorf("store: %d id collisions in a row", maxCollisionRetries)
}

// newRoom is room p created by u, with the encoded attributes and the
// state's size, its invite code ("" public), as room_create takes it.
func (s *Store) newRoom(u rooms.User, p rooms.NewRoom, attrs []byte, size int, code string, onlyIfNone bool) newRoom {
	return newRoom{p: p, owner: u, attrs: attrs, code: code, stateSize: size, onlyIfNone: onlyIfNone, firstCheck: s.life.firstCheck()}
}

// Get implements rooms.Store with one consistent read.
func (s *Store) Get(ctx context.Context, id string, withState bool) (rooms.Room, rooms.State, error) {
	shard, ok := layout.RoomShard(id, s.shards)
	if !ok {
		return rooms.Room{}, nil, rooms.ErrRoomNotFound
	}
	return s.readRoom(ctx, shard, id, withState)
}

// Join implements rooms.Store.
func (s *Store) Join(ctx context.Context, u rooms.User, id string) (rooms.Joined, error) {
	shard, ok := layout.RoomShard(id, s.shards)
	if !ok {
		return rooms.Joined{}, rooms.ErrRoomNotFound
	}
	return s.join(ctx, u, shard, id, "")
}

// JoinByCode implements rooms.Store: the code's shard holds the code table
// and the room.
func (s *Store) JoinByCode(ctx context.Context, u rooms.User, code string) (rooms.Joined, error) {
	shard := layout.CodeShard(code, s.shards)
	id, err := s.client.HGet(ctx, s.keys.Codes(shard), code).Result()
	if errors.Is(err, redis.Nil) {
		return rooms.Joined{}, rooms.ErrRoomNotFound
	}
	if err != nil {
		return rooms.Joined{}, redisx.Wrap(err)
	}
	if got, ok := layout.RoomShard(id, s.shards); !ok || got != shard {
		return rooms.Joined{}, fmt.Errorf("store: code %s maps to room %s of another shard", code, id)
	}
	return s.join(ctx, u, shard, id, code)
}

func (s *Store) join(ctx context.Context, u rooms.User, shard int, id, code string) (rooms.Joined, error) {
	if err := rooms.PlayersOnly(u); err != nil {
		return rooms.Joined{}, err
	}
	_, scope, err := s.scopeOf(ctx, id)
	if err != nil {
		return rooms.Joined{}, err
	}
	h, err := s.held.Reserve(ctx, u.ID, id, false)
	if err != nil {
		return rooms.Joined{}, err
	}
	j, err := s.joined(s.runThenRead(ctx, joinCall{scope, u.ID, jsonString(u.Name), code}, shard, id, false))
	if notRun(err) {
		s.held.Release(ctx, h)
	}
	return j, err
}

// joined decodes the reply {"OK", playerId} of a script run by runThenRead
// and the room read after it.
func (s *Store) joined(r ran, err error) (rooms.Joined, error) {
	if err != nil {
		return rooms.Joined{}, err
	}
	rest, err := reply(r.cmd)
	if err != nil {
		return rooms.Joined{}, err
	}
	room, _, err := s.decodeRead(r.id, r.read)
	return rooms.Joined{Room: room, PlayerID: int(layout.ToInt64(rest[0]))}, err
}

// Leave implements rooms.Store.
func (s *Store) Leave(ctx context.Context, u rooms.User, id string) error {
	if u.Server {
		return rooms.PlayersOnly(u)
	}
	return s.remove(ctx, id, u, "", "left", false)
}

// Kick implements rooms.Store.
func (s *Store) Kick(ctx context.Context, u rooms.User, id string, playerID int) error {
	return s.remove(ctx, id, u, strconv.Itoa(playerID), "kicked", false)
}

// Ban implements rooms.Store: one script kicks and bans. The player_left
// event says reason "kicked" as for any kick; the ban is never shown.
func (s *Store) Ban(ctx context.Context, u rooms.User, id string, playerID int) error {
	return s.remove(ctx, id, u, strconv.Itoa(playerID), "kicked", true)
}

func (s *Store) remove(ctx context.Context, id string, u rooms.User, target, reason string, ban bool) error {
	c, err := caller(u)
	if err != nil {
		return err
	}
	shard, scope, err := s.scopeOf(ctx, id)
	if err != nil {
		return err
	}
	// whose holdings entry goes, as read before the script: a reservation
	// made meanwhile (a re-join) re-stamps it and is kept (holdings.Left)
	leaver, before := c, ""
	if target != "" {
		leaver = s.userOfPlayer(ctx, shard, id, target)
	}
	if leaver != "" {
		before = s.held.Value(ctx, leaver, id)
	}
	rest, err := s.result(ctx, removeCall{scope, c, target, reason, ban})
	if err != nil {
		return err
	}
	newOwner, _ := rest[0].(string)
	s.held.Left(ctx, leaver, id, before, newOwner)
	return nil
}

// userOfPlayer is the userId of room id's player pid ("" when none, or
// when the room quotas are off: only the holdings need it), for a kick's
// holdings correction: the kicked user may join elsewhere at once, not
// once the janitor's check of the room's unheld list lets the entry go.
func (s *Store) userOfPlayer(ctx context.Context, shard int, id, pid string) string {
	if !s.held.On() {
		return ""
	}
	users, err := s.client.HGetAll(ctx, s.keys.Room(shard, id)+":users").Result()
	if err != nil {
		return ""
	}
	for uid, p := range users {
		if p == pid {
			return uid
		}
	}
	return ""
}

// caller is the caller's userId as the scripts take it: "" for the server
// (rooms.User.Server), which skips the membership, owner and state-policy
// checks. A player without a userId would pass for the server: refused.
func caller(u rooms.User) (string, error) {
	switch {
	case u.Server:
		return "", nil
	case u.ID == "":
		return "", errors.New("store: a player without a userId")
	}
	return u.ID, nil
}

// Update implements rooms.Store.
func (s *Store) Update(ctx context.Context, u rooms.User, id string, p rooms.UpdateParams) (rooms.Room, error) {
	shard, scope, err := s.scopeOf(ctx, id)
	if err != nil {
		return rooms.Room{}, err
	}
	changes, err := changesOf(p)
	if err != nil {
		return rooms.Room{}, err
	}
	c, err := caller(u)
	if err != nil {
		return rooms.Room{}, err
	}
	for range maxCollisionRetries {
		call := updateCall{scope, c, changes, layout.NewCode(shard, s.shards)}
		j, err := s.joined(s.runThenRead(ctx, call, shard, id, false))
		if errors.Is(err, errCodeTaken) {
			continue
		}
		return j.Room, err
	}
	return rooms.Room{}, fmt.Errorf("store: %d invite code collisions in a row", maxCollisionRetries)
}

// changesOf is p as room_update takes it.
func changesOf(p rooms.UpdateParams) (roomChanges, error) {
	var out roomChanges
	if p.Name != nil {
		out.name, out.nameJSON = *p.Name, jsonString(*p.Name)
	}
	if p.Status != nil {
		out.status = string(*p.Status)
	}
	if p.Locked != nil {
		out.locked = map[bool]string{false: "0", true: "1"}[*p.Locked]
	}
	if p.MaxPlayers != nil {
		out.maxPlayers = strconv.Itoa(*p.MaxPlayers)
	}
	if p.Visibility != nil {
		out.visibility = string(*p.Visibility)
	}
	if p.Attributes != nil {
		b, err := json.Marshal(*p.Attributes)
		if err != nil {
			return roomChanges{}, fmt.Errorf("store: attributes: %w", err)
		}
		out.attributes = string(b)
	}
	return out, nil
}

// Delete implements rooms.Store.
func (s *Store) Delete(ctx context.Context, u rooms.User, id string) error {
	c, err := caller(u)
	if err != nil {
		return err
	}
	_, scope, err := s.scopeOf(ctx, id)
	if err != nil {
		return err
	}
	before := ""
	if c != "" {
		before = s.held.Value(ctx, c, id)
	}
	if _, err = s.result(ctx, deleteCall{scope, c}); err != nil {
		return err
	}
	// the owner's entry at once, as a leave's (the others' with the
	// room's unheld list), so the owner may create again right away
	s.held.Left(ctx, c, id, before, "")
	return nil
}

// PatchState implements rooms.Store.
func (s *Store) PatchState(ctx context.Context, u rooms.User, id string, p rooms.StatePatch) (rooms.Versions, error) {
	c, err := caller(u)
	if err != nil {
		return rooms.Versions{}, err
	}
	shard, ok := layout.RoomShard(id, s.shards)
	if !ok {
		return rooms.Versions{}, rooms.ErrRoomNotFound
	}
	rest, err := s.result(ctx, patchCall{s.scope(shard, id), c, p.IfMatch, p.Set, p.Del})
	if err != nil {
		return rooms.Versions{}, err
	}
	return rooms.Versions{Version: layout.ToInt64(rest[0]), StateVersion: layout.ToInt64(rest[1])}, nil
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func sortedKeys(m rooms.State) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// ReserveSeats implements rooms.SeatReserver with one script.
func (s *Store) ReserveSeats(ctx context.Context, u rooms.User, id string, userIDs []string, ttl time.Duration) (rooms.Reservation, error) {
	return s.reserveSeats(ctx, u, id, userIDs, ttl, 0, "")
}

// reserveSeats is ReserveSeats, the room's players and held seats after it
// at most seatCap too (0: its maxPlayers only; the matcher's backfill
// passes its mode's size); matcher is "" or the matcher's mode of
// seats_reserve.lua (a backfill's "b", "r"; a match room's "m", userIDs
// by ticket, each ticket's ended by ""), whose refused users are
// *matchmaking.SeatsRefusedError, nothing held; else users the room banned
// are *rooms.BannedUsersError, nothing held.
func (s *Store) reserveSeats(ctx context.Context, u rooms.User, id string, userIDs []string, ttl time.Duration, seatCap int, matcher string) (rooms.Reservation, error) {
	c, err := caller(u)
	if err != nil {
		return rooms.Reservation{}, err
	}
	_, scope, err := s.scopeOf(ctx, id)
	if err != nil {
		return rooms.Reservation{}, err
	}
	cmd := s.runner.Run(ctx, reserveSeatsCall{scope, c, ttl.Milliseconds(), seatCap, matcher, userIDs})
	if refused := refusedUsers(cmd); refused != nil && matcher != "" {
		return rooms.Reservation{}, &matchmaking.SeatsRefusedError{Users: refused}
	} else if refused != nil { // the owner's or the server's: banned users only
		return rooms.Reservation{}, &rooms.BannedUsersError{Users: refused}
	}
	rest, err := reply(cmd)
	if err != nil {
		return rooms.Reservation{}, err
	}
	return rooms.Reservation{ReservedSeats: int(layout.ToInt64(rest[0])), ExpiresAt: time.UnixMilli(layout.ToInt64(rest[1])).UTC()}, nil
}
