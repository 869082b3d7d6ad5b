package store

import (
	"context"
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
// pipelined range of each shard's user index ("<userId>\t<roomId>").
func (s *Store) userRooms(ctx context.Context, u rooms.User, shards []int) ([]string, error) {
	ranges := make([]*redis.StringSliceCmd, len(shards))
	_, err := s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, shard := range shards {
			ranges[i] = p.ZRangeByLex(ctx, s.keys.userIndex(shard),
				&redis.ZRangeBy{Min: "[" + u.ID + "\t", Max: "[" + u.ID + "\t\xff"})
		}
		return nil
	})
	if err != nil {
		return nil, wrap(err)
	}
	var ids []string
	for _, c := range ranges {
		for _, e := range c.Val() {
			ids = append(ids, e[strings.IndexByte(e, '\t')+1:])
		}
	}
	return ids, nil
}
