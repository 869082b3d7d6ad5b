// Package listing is the rooms' listing on Redis: pages of the public
// rooms from the status, joinable and fill indexes the room scripts keep
// (lobby.Index), the lobby stats, and what lobby streams read
// (sse.LobbySource). Browsing reads go to replicas when configured. It
// writes nothing.
package listing

import (
	"context"
	"errors"
	"sort"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/lobby"
	"github.com/realsync/realsync/rooms"

	"github.com/realsync/realsync/store/internal/layout"
	"github.com/realsync/realsync/store/internal/redisx"
)

var _ lobby.Index = (*Index)(nil)

// Index is the rooms' listing: pages of the status, joinable and fill
// indexes (lobby.Index), the lobby stats, and the lobby stream's reads
// (sse.LobbySource). It reads what the room scripts keep (store/internal/roomlua/lua,
// layout.Keys) and writes nothing.
type Index struct {
	client redis.UniversalClient // the masters
	reads  redis.UniversalClient // browsing reads (replicas); nil: the masters
	keys   layout.Keys
	shards int
	place  *layout.Placement
}

// New returns the listing of a deployment: client reads the masters,
// reads (nil: none) the replicas chosen for browsing reads (store's
// ReplicaReads), over shards shards placed by place.
func New(client, reads redis.UniversalClient, keys layout.Keys, shards int, place *layout.Placement) *Index {
	return &Index{client: client, reads: reads, keys: keys, shards: shards, place: place}
}

// browse runs a browsing read f on the reader client and, when that fails
// for any reason but the caller's end (a replica dead, refusing reads while
// its link is down, or loading), once more on the main client: a browsing
// read never fails for a replica's sake. f queues its commands afresh on
// each call. Without a reader client f runs once on the main one.
func (s *Index) browse(ctx context.Context, f func(c redis.UniversalClient) error) error {
	if s.reads == nil {
		return f(s.client)
	}
	err := f(s.reads)
	if err == nil || errors.Is(err, redis.Nil) || ctx.Err() != nil {
		return err
	}
	return f(s.client)
}

type candidate struct {
	pos   lobby.Position
	shard int
}

// List implements lobby.Index: one pipelined range read per (shard,
// status) index, a merge in Go, then one pipelined read of the page's
// rooms, both browsing reads (replicas when configured, see ReplicaReads). With both mode and region only the pair's stripes are read (its home shard
// with K = 1; layout.Placement), merged like shards.
// With attribute filters it scans instead (see scan: each index entry
// read at most once, at most lobby.ScanBudget of them).
func (s *Index) List(ctx context.Context, q lobby.Query) (lobby.Result, error) {
	if len(q.Attrs) > 0 {
		return s.scan(ctx, q)
	}
	cands, more, err := s.sorted(ctx, q)
	if err != nil {
		return lobby.Result{}, err
	}
	res := lobby.Result{More: more}
	if len(cands) > 0 {
		res.Last = cands[len(cands)-1].pos
	}
	rs, err := s.fetchListed(ctx, q, cands)
	res.Rooms = kept(rs)
	return res, err
}

// kept compacts the rooms fetchListed kept (the zero Room stands for one
// it did not) in place: nil when it kept none.
func kept(rs []rooms.Room) []rooms.Room {
	out := rs[:0]
	for i := range rs {
		if rs[i].ID != "" {
			out = append(out, rs[i])
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// sorted reads the next q.Limit entries after q.After in sort order, and
// whether more follow.
func (s *Index) sorted(ctx context.Context, q lobby.Query) ([]candidate, bool, error) {
	cands, err := s.candidates(ctx, q)
	if err != nil {
		return nil, false, err
	}
	sort.Slice(cands, func(i, j int) bool { return lobby.Before(q.Sort, cands[i].pos, cands[j].pos) })
	if len(cands) > q.Limit {
		return cands[:q.Limit], true, nil
	}
	return cands, false, nil
}

// candidates reads up to Limit+1 entries after q.After from each index.
// Scores are unique within a shard, so an inclusive bound lets through at
// most one entry at the cursor's score per index, filtered out here.
func (s *Index) candidates(ctx context.Context, q lobby.Query) ([]candidate, error) {
	type read struct {
		shard  int
		scored *redis.ZSliceCmd
		lex    *redis.StringSliceCmd // fill indexes: BYLEX takes no WITHSCORES
	}
	var reads []read
	err := s.browse(ctx, func(c redis.UniversalClient) error {
		reads = reads[:0]
		pipe := c.Pipeline()
		for _, shard := range s.listShards(q) {
			for _, key := range s.listKeys(shard, q) {
				if q.Sort == lobby.Fill {
					reads = append(reads, read{shard: shard, lex: pipe.ZRangeArgs(ctx, rangeArgs(key, q))})
				} else {
					reads = append(reads, read{shard: shard, scored: pipe.ZRangeArgsWithScores(ctx, rangeArgs(key, q))})
				}
			}
		}
		_, err := pipe.Exec(ctx)
		return err
	})
	if err != nil && err != redis.Nil {
		return nil, redisx.Wrap(err)
	}
	n := 0
	for _, r := range reads {
		if r.lex != nil {
			n += len(r.lex.Val())
		} else {
			n += len(r.scored.Val())
		}
	}
	out := make([]candidate, 0, n)
	keep := func(c candidate) {
		if q.After == nil || lobby.Before(q.Sort, *q.After, c.pos) {
			out = append(out, c)
		}
	}
	for _, r := range reads {
		if r.lex != nil {
			for _, m := range r.lex.Val() {
				keep(candidate{pos: lobby.Position{ID: layout.FillID(m), Key: m}, shard: r.shard})
			}
			continue
		}
		for _, z := range r.scored.Val() {
			keep(candidate{pos: lobby.Position{Score: int64(z.Score), ID: z.Member.(string)}, shard: r.shard})
		}
	}
	return out, nil
}

// listKeys are the indexes a query reads in one shard.
func (s *Index) listKeys(shard int, q lobby.Query) []string {
	switch {
	case q.Sort == lobby.Fill:
		return []string{s.keys.FillIndex(shard, q.Mode, q.Region)}
	case q.Joinable:
		return []string{s.keys.JoinableIndex(shard, q.Mode, q.Region)}
	}
	out := make([]string, len(q.Statuses))
	for i, st := range q.Statuses {
		out[i] = s.keys.StatusIndex(shard, st, q.Mode, q.Region)
	}
	return out
}

func (s *Index) listShards(q lobby.Query) []int {
	if q.Mode != "" && q.Region != "" {
		return s.place.ReadShards(q.Mode, q.Region)
	}
	out := make([]int, s.shards)
	for i := range out {
		out[i] = i
	}
	return out
}

func rangeArgs(key string, q lobby.Query) redis.ZRangeArgs {
	if q.Sort == lobby.Fill {
		start := "-"
		if q.After != nil {
			start = "(" + q.After.Key
		}
		return redis.ZRangeArgs{Key: key, ByLex: true, Start: start, Stop: "+", Count: int64(q.Limit + 1)}
	}
	lo, hi := "-inf", "+inf"
	if q.After != nil {
		b := strconv.FormatInt(q.After.Score, 10)
		if q.Sort == lobby.Newest {
			hi = b
		} else {
			lo = b
		}
	}
	// The bound is inclusive (scores are unique per shard, not per index
	// read), so the cursor's own entry may come back: read one more.
	count := int64(q.Limit + 1)
	if q.After != nil {
		count++
	}
	a := redis.ZRangeArgs{Key: key, ByScore: true, Count: count, Start: lo, Stop: hi}
	if q.Sort == lobby.Newest {
		a.Rev, a.Start, a.Stop = true, hi, lo
	}
	return a
}

// fetchListed reads the candidates' rooms in one pipeline, one room per
// candidate: the zero Room (ID "") for those that closed or no longer
// match since the index was read.
func (s *Index) fetchListed(ctx context.Context, q lobby.Query, cands []candidate) ([]rooms.Room, error) {
	cmds := make([]*redis.StringSliceCmd, len(cands))
	if len(cands) > 0 {
		err := s.browse(ctx, func(cl redis.UniversalClient) error {
			pipe := cl.Pipeline()
			for i, c := range cands {
				cmds[i] = redisx.HMGet(ctx, pipe, s.keys.Room(c.shard, c.pos.ID), layout.RoomHashFields()...)
			}
			_, err := pipe.Exec(ctx)
			return err
		})
		if err != nil && err != redis.Nil {
			return nil, redisx.Wrap(err)
		}
	}
	out := make([]rooms.Room, len(cands))
	for i, c := range cands {
		h := layout.RoomHashOf(cmds[i])
		if h == nil {
			continue
		}
		r, err := layout.DecodeRoom(c.pos.ID, h, nil, nil, nil)
		if err != nil {
			return nil, err
		}
		if r.Visibility == rooms.Public && hasStatus(q.Statuses, r.Status) && (!q.Joinable || r.Joinable()) {
			out[i] = r
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
