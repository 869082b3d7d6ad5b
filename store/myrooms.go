package store

import (
	"context"
	"errors"
	"sort"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/rooms"
)

// MyRooms implements rooms.Store: one pipelined range of every shard's user
// index, then one pipelined read of the rooms found.
func (s *Store) MyRooms(ctx context.Context, u rooms.User) ([]rooms.Joined, error) {
	all := make([]int, s.shards)
	for i := range all {
		all[i] = i
	}
	ids, err := s.userRooms(ctx, u, all)
	if err != nil {
		return nil, err
	}
	type read struct {
		id   string
		room *redis.MapStringStringCmd
		pid  *redis.StringCmd
	}
	var reads []read
	_, err = s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, id := range ids {
			shard, _ := roomShard(id, s.shards)
			reads = append(reads, read{id, p.HGetAll(ctx, s.keys.room(shard, id)),
				p.HGet(ctx, s.keys.room(shard, id)+":users", u.ID)})
		}
		return nil
	})
	if err != nil && err != redis.Nil {
		return nil, wrap(err)
	}
	out := make([]rooms.Joined, 0, len(reads))
	created := map[string]int64{} // µs, finer than Room.CreatedAt
	for _, r := range reads {
		pid, _ := r.pid.Int()
		if len(r.room.Val()) == 0 || pid == 0 {
			continue // left or closed between the two reads
		}
		room, err := decodeRoom(r.id, r.room.Val(), nil, nil, nil)
		if err != nil {
			return nil, err
		}
		created[r.id] = atoi64(r.room.Val()["cr"])
		out = append(out, rooms.Joined{Room: room, PlayerID: pid})
	}
	sort.Slice(out, func(i, j int) bool { return created[out[i].Room.ID] > created[out[j].Room.ID] })
	return out, nil
}

// userRooms returns the ids of the rooms u is in within shards: one
// pipelined read of each shard's user index (userId → "<roomId> ...").
func (s *Store) userRooms(ctx context.Context, u rooms.User, shards []int) ([]string, error) {
	reads := make([]*redis.StringCmd, len(shards))
	_, err := s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, shard := range shards {
			reads[i] = p.HGet(ctx, s.keys.userIndex(shard), u.ID)
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, wrap(err)
	}
	var ids []string
	for _, c := range reads {
		ids = append(ids, strings.Fields(c.Val())...)
	}
	return ids, nil
}
