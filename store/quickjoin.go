package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/lobby"
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
// A room that banned u (its join says so) is skipped for the rest of the
// quick-join, and then creating is not held back by joinable rooms: a
// banned user is never placed in the room, and packing holds for the others.
func (s *Store) QuickJoin(ctx context.Context, u rooms.User, mode string, regions []string, filters []rooms.AttrFilter, create *rooms.NewRoom) (rooms.QuickJoined, error) {
	if err := rooms.PlayersOnly(u); err != nil {
		return rooms.QuickJoined{}, err
	}
	if j, ok, err := s.memberOf(ctx, u, mode, regions, filters); err != nil || ok {
		return rooms.QuickJoined{Joined: j}, err
	}
	banned := map[string]bool{}
	for range maxQuickJoinAttempts {
		id, err := s.bestJoinable(ctx, mode, regions, filters, banned)
		if err != nil {
			return rooms.QuickJoined{}, err
		}
		if id != "" {
			j, err := s.Join(ctx, u, id)
			if errors.Is(err, rooms.ErrBanned) {
				banned[id] = true
				continue
			}
			if taken(err) {
				continue
			}
			return rooms.QuickJoined{Joined: j}, err
		}
		if create == nil {
			return rooms.QuickJoined{}, rooms.ErrNoMatch
		}
		j, err := s.create(ctx, u, *create, len(filters) == 0 && len(banned) == 0)
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

// filteredCandidates is how deep in each fill index a quick-join with
// attribute filters looks for a match.
const filteredCandidates = 64

// bestJoinable returns the first room of the fill order of mode in the
// first region that has one ("" when none): one pipelined read of the top
// of each region's fill index (of every shard's mode index without
// regions). With filters it reads the top 64 of each and the candidates'
// attributes, and takes the first that matches. The rooms in skip are
// passed over (the top of each index is read that much deeper).
func (s *Store) bestJoinable(ctx context.Context, mode string, regions []string, filters []rooms.AttrFilter, skip map[string]bool) (string, error) {
	type index struct {
		shard int
		top   *redis.StringSliceCmd
	}
	var idx []index
	depth := int64(1)
	if len(filters) > 0 {
		depth = filteredCandidates
	}
	depth += int64(len(skip))
	_, err := s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		read := func(shard int, region string) {
			idx = append(idx, index{shard, p.ZRangeArgs(ctx, redis.ZRangeArgs{Key: s.keys.fillIndex(shard, mode, region),
				ByLex: true, Start: "-", Stop: "+", Count: depth})})
		}
		if len(regions) == 0 {
			for shard := range s.shards {
				read(shard, "")
			}
		}
		for _, r := range regions {
			read(homeShard(mode, r, s.shards), r)
		}
		return nil
	})
	if err != nil {
		return "", wrap(err)
	}
	var cands []candidate // in region order, each region in fill order
	for _, ix := range idx {
		for _, m := range ix.top.Val() {
			if !skip[fillID(m)] {
				cands = append(cands, candidate{pos: lobby.Position{ID: fillID(m), Key: m}, shard: ix.shard})
			}
		}
	}
	if len(regions) == 0 {
		sort.Slice(cands, func(i, j int) bool { return cands[i].pos.Key < cands[j].pos.Key })
	}
	if len(filters) == 0 {
		if len(cands) == 0 {
			return "", nil
		}
		return cands[0].pos.ID, nil
	}
	return s.firstMatching(ctx, cands, filters)
}

// firstMatching reads the candidates' attributes in one pipeline and
// returns the first that passes the filters ("" when none).
func (s *Store) firstMatching(ctx context.Context, cands []candidate, filters []rooms.AttrFilter) (string, error) {
	cmds := make([]*redis.StringCmd, len(cands))
	_, err := s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, c := range cands {
			cmds[i] = p.HGet(ctx, s.keys.room(c.shard, c.pos.ID), "at")
		}
		return nil
	})
	if err != nil && err != redis.Nil {
		return "", wrap(err)
	}
	for i, c := range cands {
		var attrs map[string]any
		if decodeJSON(cmds[i].Val(), &attrs) == nil && rooms.MatchAll(filters, attrs) {
			return c.pos.ID, nil
		}
	}
	return "", nil
}

// fillID is the room id of a fill index member "<...>|<...>|<id>".
func fillID(member string) string { return member[strings.LastIndexByte(member, '|')+1:] }

// memberOf finds a room of mode, in one of regions (any without regions),
// not finished, that u is already in, and returns it as a join would.
func (s *Store) memberOf(ctx context.Context, u rooms.User, mode string, regions []string, filters []rooms.AttrFilter) (rooms.Joined, bool, error) {
	var shards []int
	for _, r := range regions {
		if shard := homeShard(mode, r, s.shards); !slices.Contains(shards, shard) {
			shards = append(shards, shard)
		}
	}
	if len(regions) == 0 {
		for shard := range s.shards {
			shards = append(shards, shard)
		}
	}
	ids, err := s.userRooms(ctx, u, shards)
	if err != nil {
		return rooms.Joined{}, false, err
	}
	for _, id := range ids {
		shard, _ := roomShard(id, s.shards)
		h, err := s.client.HMGet(ctx, s.keys.room(shard, id), "m", "r", "st", "at").Result()
		if err != nil {
			return rooms.Joined{}, false, wrap(err)
		}
		var attrs map[string]any
		decodeJSON(fmt.Sprint(h[3]), &attrs)
		if h[0] != mode || (len(regions) > 0 && !slices.Contains(regions, fmt.Sprint(h[1]))) ||
			h[2] == string(rooms.Finished) || !rooms.MatchAll(filters, attrs) {
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
	return rooms.Joined{}, false, nil
}
