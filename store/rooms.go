package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/internal/jsonout"
	"github.com/realsync/realsync/matchmaking"
	"github.com/realsync/realsync/rooms"

	"github.com/realsync/realsync/store/internal/layout"
	"github.com/realsync/realsync/store/internal/redisx"
	"github.com/realsync/realsync/store/internal/roomlua"
)

var _ rooms.Matchmaker = (*Store)(nil)

// QuickJoin implements rooms.Matchmaker: store/quickjoin.
func (s *Store) QuickJoin(ctx context.Context, u rooms.User, mode string, regions []string, filters []rooms.AttrFilter, create *rooms.NewRoom) (rooms.QuickJoined, error) {
	return s.quick.QuickJoin(ctx, u, mode, regions, filters, create)
}

// Create implements rooms.Store. The room lives in a stripe of its (mode,
// region) (layout.Placement: the home shard with K = 1), chosen at random among
// the current configuration's (a keyed create's: the one its key picks),
// whatever its visibility, so it never moves.
func (s *Store) Create(ctx context.Context, u rooms.User, p rooms.NewRoom) (rooms.Joined, error) {
	return s.create(ctx, u, p, false)
}

// create creates p; with onlyIfNone, only when no joinable room of its mode
// and region exists (roomlua.ErrJoinableExists otherwise). A keyed create
// (p.Key, never with onlyIfNone) goes to the stripe its digest picks
// (keyedDigest), where the room its first run made is answered while u is
// in it (room_create.lua's "k").
func (s *Store) create(ctx context.Context, u rooms.User, p rooms.NewRoom, onlyIfNone bool) (rooms.Joined, error) {
	if err := rooms.PlayersOnly(u); err != nil {
		return rooms.Joined{}, err
	}
	attrs, err := jsonout.Marshal(p.Attributes)
	if err != nil {
		return rooms.Joined{}, fmt.Errorf("store: attributes: %w", err)
	}
	var digest [sha256.Size]byte
	shard := 0
	if p.Key != "" && !onlyIfNone {
		if digest, err = keyedDigest(u, p); err != nil {
			return rooms.Joined{}, err
		}
		shard = s.stripes.SeededCreateShard(p.Mode, p.Region, digest)
	} else {
		shard = s.stripes.RandomCreateShard(p.Mode, p.Region)
	}
	_, size := rooms.StateTotals(p.State)
	for range roomlua.CollisionRetries {
		id := layout.NewRoomID(shard)
		code := ""
		if p.Visibility == rooms.Private {
			code = layout.NewCode(shard, s.shards)
		}
		nr := s.newRoom(u, p, attrs, size, code, onlyIfNone)
		if p.Key != "" && !onlyIfNone {
			nr.Digest = hex.EncodeToString(digest[:16])
		}
		call := roomlua.CreateCall{Scope: s.env.Indexed(shard, id, p.Mode, p.Region), Room: nr}
		h, err := s.held.Reserve(ctx, u.ID, id, true)
		if nr.Digest != "" && (errors.Is(err, rooms.ErrOwnedRoomsLimit) || errors.Is(err, rooms.ErrJoinedRoomsLimit)) {
			// the first run's room may be what fills the quota
			if prev, ok, ferr := s.keyedRoom(ctx, shard, nr.Digest, u); ferr != nil {
				return rooms.Joined{}, ferr
			} else if ok {
				return s.foundAgain(ctx, u, prev)
			}
		}
		if err != nil {
			return rooms.Joined{}, err
		}
		r, err := s.runThenRead(ctx, call, shard, id, false)
		if err == nil {
			if rest, _ := roomlua.Reply(r.cmd); len(rest) > 2 && rest[1] == "found" {
				// the first run's room; this id was never made
				s.held.Release(ctx, h)
				prev, _ := rest[2].(string)
				return s.foundAgain(ctx, u, prev)
			}
		}
		j, err := s.joined(r, err)
		if roomlua.NotRun(err) {
			s.held.Release(ctx, h)
		}
		if errors.Is(err, roomlua.ErrCodeTaken) {
			continue
		}
		return j, err
	}
	return rooms.Joined{}, fmt.Errorf("store: %d id collisions in a row", roomlua.CollisionRetries)
}

// keyedDigest is the SHA-256 of a keyed create's caller, key and room that
// its stripe and its entry in the shard's create keys derive from
// (rooms.NewRoom.Key).
func keyedDigest(u rooms.User, p rooms.NewRoom) ([sha256.Size]byte, error) {
	body, err := json.Marshal(p) // Key left out; map keys sorted
	if err != nil {
		return [sha256.Size]byte{}, fmt.Errorf("store: keyed create: %w", err)
	}
	return sha256.Sum256([]byte(u.ID + "\x00" + p.Key + "\x00" + string(body))), nil
}

// keyedRoom is the room shard's create keys name for digest, when u is in
// it (room_create.lua's look, for a create the quotas refuse before its
// script runs).
func (s *Store) keyedRoom(ctx context.Context, shard int, digest string, u rooms.User) (string, bool, error) {
	id, err := s.client.HGet(ctx, s.keys.CreateKeys(shard), digest).Result()
	if errors.Is(err, redis.Nil) {
		return "", false, nil
	} else if err != nil {
		return "", false, redisx.Wrap(err)
	}
	if sh, ok := layout.RoomShard(id, s.shards); !ok || sh != shard {
		return "", false, nil
	}
	in, err := s.client.HExists(ctx, s.keys.Room(shard, id)+":users", u.ID).Result()
	return id, in, redisx.Wrap(err)
}

// foundAgain answers a keyed create run again with room id, which its
// first run made with u in it (the script saw u there a moment ago).
func (s *Store) foundAgain(ctx context.Context, u rooms.User, id string) (rooms.Joined, error) {
	room, _, err := s.Get(ctx, id, false)
	if err != nil {
		return rooms.Joined{}, err
	}
	for _, pl := range room.Players {
		if pl.UserID == u.ID {
			return rooms.Joined{Room: room, PlayerID: pl.PlayerID}, nil
		}
	}
	return rooms.Joined{}, fmt.Errorf("store: keyed create's room %s: %s left it as it was found: %w", id, u.ID, rooms.ErrUnavailable)
}

// newRoom is room p created by u, with the encoded attributes and the
// state's size, its invite code ("" public), as room_create takes it.
func (s *Store) newRoom(u rooms.User, p rooms.NewRoom, attrs []byte, size int, code string, onlyIfNone bool) roomlua.NewRoom {
	return roomlua.NewRoom{P: p, Owner: u, Attrs: attrs, Code: code, StateSize: size, OnlyIfNone: onlyIfNone, FirstCheck: s.life.firstCheck()}
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
	return s.join(ctx, u, shard, id, "", false)
}

// joinPicked is Join into a room the server picked for u (a quick-join): a
// room that kicked u refuses them as one that banned them
// (rooms.ErrBanned), so that u is not put back where they were kicked.
func (s *Store) joinPicked(ctx context.Context, u rooms.User, id string) (rooms.Joined, error) {
	shard, ok := layout.RoomShard(id, s.shards)
	if !ok {
		return rooms.Joined{}, rooms.ErrRoomNotFound
	}
	return s.join(ctx, u, shard, id, "", true)
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
	return s.join(ctx, u, shard, id, code, false)
}

func (s *Store) join(ctx context.Context, u rooms.User, shard int, id, code string, picked bool) (rooms.Joined, error) {
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
	r, err := s.runThenRead(ctx, roomlua.JoinCall{Scope: scope, User: u.ID, NameJSON: roomlua.JSONString(u.Name), Code: code, Picked: picked}, shard, id, false)
	added := false
	if err == nil {
		rest, _ := roomlua.Reply(r.cmd)
		added = len(rest) > 2 && rest[2] == "added"
	}
	j, err := s.joined(r, err)
	switch {
	case roomlua.NotRun(err):
		s.held.Release(ctx, h)
	case err == nil && !added:
		// the user was in the room already (a retry, a second tab):
		// nothing changed, as if the join had not come, so that a leave
		// or kick racing it still drops the entry
		s.held.Undo(ctx, h)
	case h.HeldBefore(): // added, or err: the outcome unknown
		// the user joined (or may have) a room held already (a retry
		// racing a leave of it): a leave or kick that read the entry this
		// reservation stamped, and whose script ran before this join's,
		// drops that entry though the join put the user back in; stamped
		// anew (added back when dropped), the correction finds another
		// stamp. Best effort, as Release.
		s.held.Record(context.WithoutCancel(ctx), u.ID, id, false)
	}
	return j, err
}

// joined decodes the reply {"OK", playerId} of a script run by runThenRead
// and the room read after it.
func (s *Store) joined(r ran, err error) (rooms.Joined, error) {
	if err != nil {
		return rooms.Joined{}, err
	}
	rest, err := roomlua.Reply(r.cmd)
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
	rest, err := s.result(ctx, roomlua.RemoveCall{Scope: scope, Caller: c, Target: target, Reason: reason, Ban: ban})
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
	for range roomlua.CollisionRetries {
		call := roomlua.UpdateCall{Scope: scope, Caller: c, Changes: changes, NewCode: layout.NewCode(shard, s.shards)}
		j, err := s.joined(s.runThenRead(ctx, call, shard, id, false))
		if errors.Is(err, roomlua.ErrCodeTaken) {
			continue
		}
		return j.Room, err
	}
	return rooms.Room{}, fmt.Errorf("store: %d invite code collisions in a row", roomlua.CollisionRetries)
}

// changesOf is p as room_update takes it.
func changesOf(p rooms.UpdateParams) (roomlua.RoomChanges, error) {
	var out roomlua.RoomChanges
	if p.Name != nil {
		out.Name, out.NameJSON = *p.Name, roomlua.JSONString(*p.Name)
	}
	if p.Status != nil {
		out.Status = string(*p.Status)
	}
	if p.Locked != nil {
		out.Locked = map[bool]string{false: "0", true: "1"}[*p.Locked]
	}
	if p.MaxPlayers != nil {
		out.MaxPlayers = strconv.Itoa(*p.MaxPlayers)
	}
	if p.Visibility != nil {
		out.Visibility = string(*p.Visibility)
	}
	if p.Attributes != nil {
		b, err := jsonout.Marshal(*p.Attributes)
		if err != nil {
			return roomlua.RoomChanges{}, fmt.Errorf("store: attributes: %w", err)
		}
		out.Attributes = string(b)
	}
	return out, nil
}

// Delete implements rooms.Store.
func (s *Store) Delete(ctx context.Context, u rooms.User, id string) ([]string, error) {
	c, err := caller(u)
	if err != nil {
		return nil, err
	}
	_, scope, err := s.scopeOf(ctx, id)
	if err != nil {
		return nil, err
	}
	before := ""
	if c != "" {
		before = s.held.Value(ctx, c, id)
	}
	rest, err := s.result(ctx, roomlua.DeleteCall{Scope: scope, Caller: c})
	if err != nil {
		return nil, err
	}
	// the owner's entry at once, as a leave's (the others' with the
	// room's unheld list), so the owner may create again right away
	s.held.Left(ctx, c, id, before, "")
	return roomlua.Strings(rest), nil
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
	rest, err := s.result(ctx, roomlua.PatchCall{Scope: s.env.Scope(shard, id), Caller: c, IfMatch: p.IfMatch, Set: p.Set, Del: p.Del})
	if err != nil {
		return rooms.Versions{}, err
	}
	return rooms.Versions{Version: layout.ToInt64(rest[0]), StateVersion: layout.ToInt64(rest[1])}, nil
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
	cmd := s.runner.Run(ctx, roomlua.ReserveSeatsCall{Scope: scope, Caller: c, TTLMs: ttl.Milliseconds(), SeatCap: seatCap, Matcher: matcher, Users: userIDs})
	if refused := roomlua.RefusedUsers(cmd); refused != nil && matcher != "" {
		return rooms.Reservation{}, &matchmaking.SeatsRefusedError{Users: refused}
	} else if refused != nil { // the owner's or the server's: banned users only
		return rooms.Reservation{}, &rooms.BannedUsersError{Users: refused}
	}
	rest, err := roomlua.Reply(cmd)
	if err != nil {
		return rooms.Reservation{}, err
	}
	return rooms.Reservation{ReservedSeats: int(layout.ToInt64(rest[0])), ExpiresAt: time.UnixMilli(layout.ToInt64(rest[1])).UTC()}, nil
}
