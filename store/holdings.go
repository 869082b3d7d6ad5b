package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/rooms"

	"github.com/realsync/realsync/store/internal/redisx"
)

// Quotas bound the rooms one user holds at once, across every shard and
// instance; 0 switches a limit off.
type Quotas struct {
	// RoomsOwned: rooms one user owns at once (create and quick-join's
	// create refuse past it with rooms.ErrOwnedRoomsLimit).
	RoomsOwned int
	// RoomsJoined: rooms one user is in at once, owned ones included
	// (create, join, join-by-code, quick-join refuse past it with
	// rooms.ErrJoinedRoomsLimit).
	RoomsJoined int
	// StreamsPerUser: event streams one user holds open at once, of all
	// rooms and the lobby, on every instance (OpenStream and OpenLobby
	// refuse past it with rooms.ErrStreamLimit; see store/sessions/streams.go).
	StreamsPerUser int
}

// A user's rooms span shards, so no room script sees them all. The room
// quotas are kept in a holdings hash per user, in the user's own slot
// (keys.holdings): every create and join first reserves the room there
// (holdings_reserve.lua, atomic, so N concurrent requests of one user on
// any number of instances never take more than the quota), then runs the
// room script, and drops the reservation when that fails. A leave drops
// the entry after the room script, an owner's leave marks the new owner.
//
// Entries of rooms the user left otherwise (kicked, banned, removed by the
// janitor, the room closed) are listed by the room script in the room's
// shard and dropped by the janitor's next visit (unheld.go). Should that
// list be lost, the holdings over-count, and a user who reaches a limit
// gets the entries older than holdingsInFlight checked against the rooms
// and corrected (dropped, ownership fixed) before being refused. They
// under-count only after a quick-join whose reply or rebind was lost: its
// placeholder entry holds the count but not the room's id; the check that
// finds such a placeholder stale adds every room the user is in and the
// holdings lack (read from the user indexes). So the holdings bound the
// quotas, and nothing reads them as the list of a user's rooms (quick-join's
// memberOf reads the user indexes). A key left with no room keeps its
// marker, "in no room", until it expires; a missing key (new user, or
// expired after holdingsTTL without a reservation) is rebuilt from the
// shard user indexes. Ownership the janitor passed on (a disconnected owner
// removed) is recorded by the same visit.
const (
	// holdingsTTL: a user's holdings key expires this long after the
	// user's last create or join; the next one rebuilds it from the rooms.
	holdingsTTL = time.Hour
	// holdingsInFlight: a reservation younger than this may belong to a
	// room script still running, so a check never drops it.
	holdingsInFlight = 10 * time.Second
)

func (s *Store) holdsRooms() bool { return s.quotas.RoomsOwned > 0 || s.quotas.RoomsJoined > 0 }

// hold is a reservation made by reserve; release undoes it.
type hold struct {
	key, room, value string
	fresh            bool // the room was not held before
}

// reserve records that uid is about to be in room (as its owner when
// owner) and returns the reservation; rooms.ErrOwnedRoomsLimit or
// rooms.ErrJoinedRoomsLimit when that would exceed a quota even after the
// holdings were checked against the rooms. A no-op without quotas.
func (s *Store) reserve(ctx context.Context, uid, room string, owner bool) (hold, error) {
	return s.reserveWithin(ctx, uid, room, owner, s.quotas.RoomsOwned, s.quotas.RoomsJoined)
}

// reserveWithin is reserve with the limits given (0: none).
func (s *Store) reserveWithin(ctx context.Context, uid, room string, owner bool, maxOwned, maxJoined int) (hold, error) {
	if !s.holdsRooms() {
		return hold{}, nil
	}
	key := s.keys.holdings(redisx.UserShard(uid, s.shards), uid)
	role := map[bool]string{true: "o", false: "m"}[owner]
	var seed []any
	checked := false
	for range 3 {
		res, err := s.runner.Run(ctx, reserveCall{key: key, room: room, role: role, owned: maxOwned,
			joined: maxJoined, ttlMs: holdingsTTL.Milliseconds(), seed: seed}).Result()
		if err != nil {
			return hold{}, redisx.Wrap(err)
		}
		arr, _ := res.([]any)
		status, _ := arr[0].(string)
		switch status {
		case "OK":
			v, _ := arr[1].(string)
			return hold{key: key, room: room, value: v, fresh: arr[2] == "1"}, nil
		case "COLD":
			if seed, err = s.userHoldings(ctx, uid); err != nil {
				return hold{}, err
			}
		case "OWNED_ROOMS_LIMIT", "JOINED_ROOMS_LIMIT":
			limit := map[string]error{"OWNED_ROOMS_LIMIT": fmt.Errorf("%w (%d)", rooms.ErrOwnedRoomsLimit, s.quotas.RoomsOwned),
				"JOINED_ROOMS_LIMIT": fmt.Errorf("%w (%d)", rooms.ErrJoinedRoomsLimit, s.quotas.RoomsJoined)}[status]
			if checked {
				return hold{}, limit
			}
			checked = true
			now, _ := arr[1].(string)
			n, err := s.recheck(ctx, uid, key, atoi64(now), arr[2:])
			if err != nil {
				return hold{}, err
			}
			if n == 0 {
				return hold{}, limit
			}
		default:
			return hold{}, fmt.Errorf("store: unexpected holdings reply %v", arr)
		}
	}
	return hold{}, fmt.Errorf("%w: holdings of a user changed three times in a row", rooms.ErrUnavailable)
}

// release drops a fresh reservation whose room script refused. Best effort:
// an entry left behind only over-counts until the next check.
func (s *Store) release(ctx context.Context, h hold) {
	if h.key != "" && h.fresh {
		s.runner.Run(context.WithoutCancel(ctx), releaseCall{h.key, []heldChange{{h.room, h.value, ""}}})
	}
}

// heldValue reads uid's entry for room before a leave ("" without quotas
// or entry), so that dropping it afterwards cannot drop a reservation made
// meanwhile.
func (s *Store) heldValue(ctx context.Context, uid, room string) string {
	if !s.holdsRooms() {
		return ""
	}
	v, _ := s.client.HGet(ctx, s.keys.holdings(redisx.UserShard(uid, s.shards), uid), room).Result()
	return v
}

// left corrects the holdings after uid left room: its entry (as read
// before, by heldValue) dropped, and room marked owned by newOwner when
// ownership passed on. Best effort, as release.
func (s *Store) left(ctx context.Context, uid, room, before, newOwner string) {
	if !s.holdsRooms() {
		return
	}
	ctx = context.WithoutCancel(ctx)
	if before != "" {
		s.runner.Run(ctx, releaseCall{s.keys.holdings(redisx.UserShard(uid, s.shards), uid), []heldChange{{room, before, ""}}})
	}
	if newOwner != "" {
		s.runner.Run(ctx, releaseCall{s.keys.holdings(redisx.UserShard(newOwner, s.shards), newOwner), []heldChange{{room, "*", "o"}}})
	}
}

// userHoldings reads, from the shard user indexes and the rooms, the rooms
// uid is in: roomId, role pairs as holdings_reserve's seed.
func (s *Store) userHoldings(ctx context.Context, uid string) ([]any, error) {
	all := make([]int, s.shards)
	for i := range all {
		all[i] = i
	}
	ids, err := s.userRooms(ctx, rooms.User{ID: uid}, all)
	if err != nil {
		return nil, err
	}
	member, owner, err := s.membership(ctx, uid, ids)
	if err != nil {
		return nil, err
	}
	seed := []any{}
	for i, id := range ids {
		if member[i] {
			seed = append(seed, id, map[bool]string{true: "o", false: "m"}[owner[i]])
		}
	}
	return seed, nil
}

// membership reads, in one pipeline, whether uid is in each room and owns
// it.
func (s *Store) membership(ctx context.Context, uid string, ids []string) (member, owner []bool, err error) {
	pids := make([]*redis.StringCmd, len(ids))
	owners := make([]*redis.StringCmd, len(ids))
	_, err = s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			shard, _ := roomShard(id, s.shards)
			pids[i] = p.HGet(ctx, s.keys.room(shard, id)+":users", uid)
			owners[i] = p.HGet(ctx, s.keys.room(shard, id), "ow")
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, nil, redisx.Wrap(err)
	}
	member, owner = make([]bool, len(ids)), make([]bool, len(ids))
	for i := range ids {
		pid := pids[i].Val()
		member[i] = pid != ""
		owner[i] = member[i] && pid == owners[i].Val()
	}
	return member, owner, nil
}

// recheck checks uid's held entries (roomId, value pairs of a limit reply;
// now in µs of the same node) older than holdingsInFlight against the
// rooms and corrects them; returns how many changed. A stale placeholder
// (a quick-join whose reply or rebind was lost, so it may be in a room the
// holdings lack) is dropped and every room uid is in without an entry is
// added.
func (s *Store) recheck(ctx context.Context, uid, key string, now int64, entries []any) (int, error) {
	var ids, values []string
	var gone []heldChange
	held := map[string]bool{}
	for i := 0; i+1 < len(entries); i += 2 {
		id, _ := entries[i].(string)
		v, _ := entries[i+1].(string)
		held[id] = true
		_, stamp, ok := strings.Cut(v, ":")
		if id == "#" || !ok || atoi64(stamp) > now-holdingsInFlight.Microseconds() {
			continue
		}
		if isPlaceholder(id) { // a quick-join's reservation it never turned into its room's
			gone = append(gone, heldChange{id, v, ""})
			continue
		}
		if _, ok := roomShard(id, s.shards); !ok {
			continue
		}
		ids, values = append(ids, id), append(values, v)
	}
	member, owner, err := s.membership(ctx, uid, ids)
	if err != nil {
		return 0, err
	}
	changes := gone
	if len(gone) > 0 {
		seed, err := s.userHoldings(ctx, uid)
		if err != nil {
			return 0, err
		}
		for i := 0; i+1 < len(seed); i += 2 {
			if id := seed[i].(string); !held[id] {
				changes = append(changes, heldChange{id, "+", seed[i+1].(string)})
			}
		}
	}
	for i, id := range ids {
		role := map[bool]string{true: "o", false: "m"}[owner[i]]
		switch {
		case !member[i]:
			changes = append(changes, heldChange{id, values[i], ""})
		case values[i][:1] != role:
			changes = append(changes, heldChange{id, values[i], role})
		}
	}
	if len(changes) == 0 {
		return 0, nil
	}
	res, err := s.runner.Run(ctx, releaseCall{key, changes}).Result()
	if err != nil {
		return 0, redisx.Wrap(err)
	}
	arr, _ := res.([]any)
	return int(toInt64(arr[1])), nil
}
