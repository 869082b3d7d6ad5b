package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/rooms"
)

// maxQuickJoinAttempts bounds the retries of a quick-join whose pick was
// taken (filled, locked, closed) before it could join.
const maxQuickJoinAttempts = 32

var _ rooms.Matchmaker = (*Store)(nil)

// QuickJoin implements rooms.Matchmaker. Every joinable room of a (mode,
// region) is in that pair's fill index in its home shard, so picking the
// best room and creating one only when none is joinable are decided on one
// node: the join script re-checks its pick, and the create script refuses
// while the fill index holds a room. Concurrent callers of one bucket
// therefore pack rooms: N callers, rooms of M seats → ceil(N/M) rooms.
func (s *Store) QuickJoin(ctx context.Context, u rooms.User, mode string, regions []string, create *rooms.NewRoom) (rooms.QuickJoined, error) {
	if j, ok, err := s.memberOf(ctx, u, mode, regions); err != nil || ok {
		return rooms.QuickJoined{Joined: j}, err
	}
	for range maxQuickJoinAttempts {
		id, err := s.bestJoinable(ctx, mode, regions)
		if err != nil {
			return rooms.QuickJoined{}, err
		}
		if id != "" {
			j, err := s.Join(ctx, u, id)
			if taken(err) {
				continue
			}
			return rooms.QuickJoined{Joined: j}, err
		}
		if create == nil {
			return rooms.QuickJoined{}, rooms.ErrNoMatch
		}
		j, err := s.create(ctx, u, *create, true)
		if errors.Is(err, errJoinableExists) {
			continue
		}
		return rooms.QuickJoined{Joined: j, Created: err == nil}, err
	}
	return rooms.QuickJoined{}, fmt.Errorf("%w: quick-join lost %d races in a row", rooms.ErrUnavailable, maxQuickJoinAttempts)
}

// taken: the picked room stopped being joinable before the join.
func taken(err error) bool {
	return errors.Is(err, rooms.ErrRoomFull) || errors.Is(err, rooms.ErrNotJoinable) || errors.Is(err, rooms.ErrRoomNotFound)
}

// bestJoinable returns the first room of the fill order of mode in the
// first region that has one ("" when none): one pipelined read of the top
// of each region's fill index (of every shard's mode index without
// regions).
func (s *Store) bestJoinable(ctx context.Context, mode string, regions []string) (string, error) {
	var keys []string
	if len(regions) == 0 {
		for shard := range s.shards {
			keys = append(keys, s.keys.fillIndex(shard, mode, ""))
		}
	}
	for _, r := range regions {
		keys = append(keys, s.keys.fillIndex(homeShard(mode, r, s.shards), mode, r))
	}
	cmds := make([]*redis.StringSliceCmd, len(keys))
	_, err := s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, k := range keys {
			cmds[i] = p.ZRangeArgs(ctx, redis.ZRangeArgs{Key: k, ByLex: true, Start: "-", Stop: "+", Count: 1})
		}
		return nil
	})
	if err != nil {
		return "", wrap(err)
	}
	var tops []string
	for _, c := range cmds {
		if v := c.Val(); len(v) > 0 {
			if len(regions) > 0 {
				return fillID(v[0]), nil
			}
			tops = append(tops, v[0])
		}
	}
	if len(tops) == 0 {
		return "", nil
	}
	return fillID(slices.Min(tops)), nil
}

func fillID(member string) string { return member[strings.LastIndexByte(member, '|')+1:] }

// memberOf finds a room of mode, in one of regions (any without regions),
// not finished, that u is already in, and returns it as a join would.
func (s *Store) memberOf(ctx context.Context, u rooms.User, mode string, regions []string) (rooms.Joined, bool, error) {
	shards := map[int]bool{}
	for _, r := range regions {
		shards[homeShard(mode, r, s.shards)] = true
	}
	if len(regions) == 0 {
		for shard := range s.shards {
			shards[shard] = true
		}
	}
	type found struct {
		shard int
		ids   *redis.StringSliceCmd
	}
	var fs []found
	_, err := s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for shard := range shards {
			fs = append(fs, found{shard, p.ZRangeByLex(ctx, s.keys.userIndex(shard),
				&redis.ZRangeBy{Min: "[" + u.ID + "\t", Max: "[" + u.ID + "\t\xff"})})
		}
		return nil
	})
	if err != nil {
		return rooms.Joined{}, false, wrap(err)
	}
	for _, f := range fs {
		for _, e := range f.ids.Val() {
			id := e[strings.IndexByte(e, '\t')+1:]
			h, err := s.client.HMGet(ctx, s.keys.room(f.shard, id), "m", "r", "st").Result()
			if err != nil {
				return rooms.Joined{}, false, wrap(err)
			}
			if h[0] != mode || (len(regions) > 0 && !slices.Contains(regions, fmt.Sprint(h[1]))) || h[2] == string(rooms.Finished) {
				continue
			}
			j, err := s.Join(ctx, u, id) // a member gets its playerId back, nothing changes
			if err == nil {
				return j, true, nil
			}
			if !taken(err) {
				return rooms.Joined{}, false, err
			}
		}
	}
	return rooms.Joined{}, false, nil
}
