package store

import (
	"context"
	"sort"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/lobby"
	"github.com/realsync/realsync/rooms"
)

var _ lobby.Index = (*Store)(nil)

type candidate struct {
	pos   lobby.Position
	shard int
}

// List implements lobby.Index: one pipelined range read per (shard,
// status) index, a merge in Go, then one pipelined read of the page's
// rooms. With both mode and region only their home shard is read.
func (s *Store) List(ctx context.Context, q lobby.Query) (lobby.Result, error) {
	cands, err := s.candidates(ctx, q)
	if err != nil {
		return lobby.Result{}, err
	}
	sort.Slice(cands, func(i, j int) bool { return lobby.Before(q.Sort, cands[i].pos, cands[j].pos) })
	res := lobby.Result{More: len(cands) > q.Limit}
	if res.More {
		cands = cands[:q.Limit]
	}
	if len(cands) > 0 {
		res.Last = cands[len(cands)-1].pos
	}
	res.Rooms, err = s.fetchListed(ctx, q, cands)
	return res, err
}

// candidates reads up to Limit+1 entries after q.After from each index.
// Scores are unique within a shard, so an inclusive bound lets through at
// most one entry at the cursor's score per index, filtered out here.
func (s *Store) candidates(ctx context.Context, q lobby.Query) ([]candidate, error) {
	type read struct {
		shard int
		cmd   *redis.ZSliceCmd
	}
	var reads []read
	pipe := s.client.Pipeline()
	for _, shard := range s.listShards(q) {
		for _, st := range q.Statuses {
			key := s.keys.statusIndex(shard, st, q.Mode, q.Region)
			reads = append(reads, read{shard, pipe.ZRangeArgsWithScores(ctx, rangeArgs(key, q))})
		}
	}
	if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
		return nil, wrap(err)
	}
	var out []candidate
	for _, r := range reads {
		for _, z := range r.cmd.Val() {
			c := candidate{pos: lobby.Position{Score: int64(z.Score), ID: z.Member.(string)}, shard: r.shard}
			if q.After == nil || lobby.Before(q.Sort, *q.After, c.pos) {
				out = append(out, c)
			}
		}
	}
	return out, nil
}

func (s *Store) listShards(q lobby.Query) []int {
	if q.Mode != "" && q.Region != "" {
		return []int{homeShard(q.Mode, q.Region, s.shards)}
	}
	out := make([]int, s.shards)
	for i := range out {
		out[i] = i
	}
	return out
}

func rangeArgs(key string, q lobby.Query) redis.ZRangeArgs {
	lo, hi := "-inf", "+inf"
	if q.After != nil {
		b := strconv.FormatInt(q.After.Score, 10)
		if q.Sort == lobby.Newest {
			hi = b
		} else {
			lo = b
		}
	}
	a := redis.ZRangeArgs{Key: key, ByScore: true, Count: int64(q.Limit + 1), Start: lo, Stop: hi}
	if q.Sort == lobby.Newest {
		a.Rev, a.Start, a.Stop = true, hi, lo
	}
	return a
}

// fetchListed reads the page's rooms in one pipeline, dropping those that
// closed or no longer match since the index was read.
func (s *Store) fetchListed(ctx context.Context, q lobby.Query, cands []candidate) ([]rooms.Room, error) {
	pipe := s.client.Pipeline()
	cmds := make([]*redis.MapStringStringCmd, len(cands))
	for i, c := range cands {
		cmds[i] = pipe.HGetAll(ctx, s.keys.room(c.shard, c.pos.ID))
	}
	if len(cands) > 0 {
		if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
			return nil, wrap(err)
		}
	}
	out := make([]rooms.Room, 0, len(cands))
	for i, c := range cands {
		h := cmds[i].Val()
		if len(h) == 0 {
			continue
		}
		r, err := decodeRoom(c.pos.ID, h, nil, nil, nil)
		if err != nil {
			return nil, err
		}
		if r.Visibility == rooms.Public && hasStatus(q.Statuses, r.Status) {
			out = append(out, r)
		}
	}
	return out, nil
}

func hasStatus(list []rooms.Status, st rooms.Status) bool {
	for _, s := range list {
		if s == st {
			return true
		}
	}
	return false
}
