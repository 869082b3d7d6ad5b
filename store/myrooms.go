package store

import (
	"context"
	"sort"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/rooms"

	"github.com/realsync/realsync/store/internal/layout"
	"github.com/realsync/realsync/store/internal/redisx"
)

// MyRooms implements rooms.Store: one pipelined read of every shard's user
// index, one pipelined read of the creation time of each room found, then
// one pipelined read of the page's rooms.
func (s *Store) MyRooms(ctx context.Context, u rooms.User, after *rooms.RoomPosition, limit int) ([]rooms.Joined, *rooms.RoomPosition, error) {
	all := make([]int, s.shards)
	for i := range all {
		all[i] = i
	}
	ids, err := s.userRooms(ctx, u, all)
	if err != nil {
		return nil, nil, err
	}
	created := make([]*redis.StringCmd, len(ids))
	_, err = s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			shard, _ := layout.RoomShard(id, s.shards)
			created[i] = p.HGet(ctx, s.keys.Room(shard, id), "cr")
		}
		return nil
	})
	if err != nil && err != redis.Nil {
		return nil, nil, redisx.Wrap(err)
	}
	var order []rooms.RoomPosition
	for i, id := range ids {
		cr, err := created[i].Int64()
		if err != nil {
			continue // closed since the index was read
		}
		if p := (rooms.RoomPosition{Created: cr, ID: id}); after == nil || after.Before(p) {
			order = append(order, p)
		}
	}
	sort.Slice(order, func(i, j int) bool { return order[i].Before(order[j]) })
	var next *rooms.RoomPosition
	if len(order) > limit {
		order = order[:limit]
		next = &order[limit-1]
	}
	out, err := s.readMine(ctx, u, order)
	return out, next, err
}

// readMine reads the rooms at positions (in that order) with u's playerId
// in each, leaving out those u left or that closed meanwhile.
func (s *Store) readMine(ctx context.Context, u rooms.User, positions []rooms.RoomPosition) ([]rooms.Joined, error) {
	type read struct {
		id   string
		room *redis.MapStringStringCmd
		pid  *redis.StringCmd
	}
	reads := make([]read, len(positions))
	_, err := s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, pos := range positions {
			shard, _ := layout.RoomShard(pos.ID, s.shards)
			reads[i] = read{pos.ID, p.HGetAll(ctx, s.keys.Room(shard, pos.ID)),
				p.HGet(ctx, s.keys.Room(shard, pos.ID)+":users", u.ID)}
		}
		return nil
	})
	if err != nil && err != redis.Nil {
		return nil, redisx.Wrap(err)
	}
	out := make([]rooms.Joined, 0, len(reads))
	for _, r := range reads {
		pid, _ := r.pid.Int()
		if len(r.room.Val()) == 0 || pid == 0 {
			continue // left or closed between the reads
		}
		room, err := layout.DecodeRoom(r.id, layout.RoomHashFrom(r.room.Val()), nil, nil, nil)
		if err != nil {
			return nil, err
		}
		out = append(out, rooms.Joined{Room: room, PlayerID: pid})
	}
	return out, nil
}

// userRooms returns the ids of the rooms u is in within shards: one
// pipelined read of each shard's user index (userId → "<roomId> ...").
func (s *Store) userRooms(ctx context.Context, u rooms.User, shards []int) ([]string, error) {
	reads := make([]*redis.StringSliceCmd, len(shards))
	_, err := s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, shard := range shards {
			reads[i] = redisx.HMGet(ctx, p, s.keys.UserIndex(shard), u.ID)
		}
		return nil
	})
	if err != nil {
		return nil, redisx.Wrap(err)
	}
	var ids []string
	for _, c := range reads {
		for _, v := range c.Val() { // "": not in the shard
			ids = append(ids, strings.Fields(v)...)
		}
	}
	return ids, nil
}
