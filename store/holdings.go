package store

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/rooms"

	"github.com/realsync/realsync/store/internal/layout"
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

// MayHoldRoom implements matchmaking.RoomQuotas: holdings.Check.
func (s *Store) MayHoldRoom(ctx context.Context, uid string, owner bool) error {
	return s.held.Check(ctx, uid, owner)
}

// The room quotas are kept by store/holdings; heldRooms is what it reads
// of the rooms, whose layout the root store owns.
type heldRooms struct{ s *Store }

// RoomsOf implements holdings.Rooms: the user indexes of every shard,
// checked against the rooms.
func (r heldRooms) RoomsOf(ctx context.Context, uid string) ([]string, []bool, error) {
	all := make([]int, r.s.shards)
	for i := range all {
		all[i] = i
	}
	ids, err := r.s.userRooms(ctx, rooms.User{ID: uid}, all)
	if err != nil {
		return nil, nil, err
	}
	member, owner, err := r.Membership(ctx, uid, ids)
	if err != nil {
		return nil, nil, err
	}
	var in []string
	var owned []bool
	for i, id := range ids {
		if member[i] {
			in, owned = append(in, id), append(owned, owner[i])
		}
	}
	return in, owned, nil
}

// Membership implements holdings.Rooms: it reads, in one pipeline, whether uid is in each room and owns
// it.
func (r heldRooms) Membership(ctx context.Context, uid string, ids []string) (member, owner []bool, err error) {
	pids := make([]*redis.StringCmd, len(ids))
	owners := make([]*redis.StringCmd, len(ids))
	_, err = r.s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			shard, _ := layout.RoomShard(id, r.s.shards)
			pids[i] = p.HGet(ctx, r.s.keys.Room(shard, id)+":users", uid)
			owners[i] = p.HGet(ctx, r.s.keys.Room(shard, id), "ow")
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

// InRooms implements holdings.Rooms.
func (r heldRooms) InRooms(ctx context.Context, uids, ids []string) ([]bool, error) {
	cmds := make([]*redis.BoolCmd, len(ids))
	_, err := r.s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			shard, _ := layout.RoomShard(id, r.s.shards)
			cmds[i] = p.HExists(ctx, r.s.keys.Room(shard, id)+":users", uids[i])
		}
		return nil
	})
	if err != nil {
		return nil, redisx.Wrap(err)
	}
	out := make([]bool, len(ids))
	for i, c := range cmds {
		out[i] = c.Val()
	}
	return out, nil
}

// IsRoom implements holdings.Rooms.
func (r heldRooms) IsRoom(id string) bool { _, ok := layout.RoomShard(id, r.s.shards); return ok }

// UnheldKey implements holdings.Rooms.
func (r heldRooms) UnheldKey(shard int) string { return r.s.keys.Unheld(shard) }
