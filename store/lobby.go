package store

import (
	"context"
	"sort"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/lobby"
	"github.com/realsync/realsync/rooms"

	"github.com/realsync/realsync/store/internal/redisx"
)

var _ lobby.Index = (*Store)(nil)

type candidate struct {
	pos   lobby.Position
	shard int
}

// List implements lobby.Index: one pipelined range read per (shard,
// status) index, a merge in Go, then one pipelined read of the page's
// rooms, both browsing reads (replicas when configured, see ReplicaReads). With both mode and region only the pair's stripes are read (its home shard
// with K = 1; stripes.go), merged like shards.
// With attribute filters it scans instead (see scan).
func (s *Store) List(ctx context.Context, q lobby.Query) (lobby.Result, error) {
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
	for _, r := range rs {
		if r != nil {
			res.Rooms = append(res.Rooms, *r)
		}
	}
	return res, err
}

// Attribute filters are applied to rooms read in index order, at most
// lobby.ScanBudget index entries per request: a page may come back short,
// even empty, with a cursor to continue.
const scanBatch = 100

// scan pages through the index in batches, keeping the rooms whose
// attributes match, until the page is full, the index ends, or the scan
// budget is spent.
func (s *Store) scan(ctx context.Context, q lobby.Query) (lobby.Result, error) {
	var res lobby.Result
	batch := q
	batch.Limit = scanBatch
	for scanned := 0; ; {
		cands, more, err := s.sorted(ctx, batch)
		if err != nil {
			return lobby.Result{}, err
		}
		rs, err := s.fetchListed(ctx, q, cands)
		if err != nil {
			return lobby.Result{}, err
		}
		for i, r := range rs {
			if r == nil || !rooms.MatchAll(q.Attrs, r.Attributes) {
				continue
			}
			if len(res.Rooms) == q.Limit {
				res.More = true
				return res, nil
			}
			res.Rooms = append(res.Rooms, *r)
			res.Last = cands[i].pos
		}
		scanned += len(cands)
		if !more {
			return res, nil
		}
		batch.After = &cands[len(cands)-1].pos
		if scanned >= lobby.ScanBudget {
			res.More, res.Last = true, *batch.After
			return res, nil
		}
	}
}

// sorted reads the next q.Limit entries after q.After in sort order, and
// whether more follow.
func (s *Store) sorted(ctx context.Context, q lobby.Query) ([]candidate, bool, error) {
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
func (s *Store) candidates(ctx context.Context, q lobby.Query) ([]candidate, error) {
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
	var out []candidate
	for _, r := range reads {
		var zs []redis.Z
		if r.lex != nil {
			for _, m := range r.lex.Val() {
				zs = append(zs, redis.Z{Member: m})
			}
		} else {
			zs = r.scored.Val()
		}
		for _, z := range zs {
			c := candidate{pos: position(q, z), shard: r.shard}
			if q.After == nil || lobby.Before(q.Sort, *q.After, c.pos) {
				out = append(out, c)
			}
		}
	}
	return out, nil
}

// listKeys are the indexes a query reads in one shard.
func (s *Store) listKeys(shard int, q lobby.Query) []string {
	switch {
	case q.Sort == lobby.Fill:
		return []string{s.keys.fillIndex(shard, q.Mode, q.Region)}
	case q.Joinable:
		return []string{s.keys.joinableIndex(shard, q.Mode, q.Region)}
	}
	out := make([]string, len(q.Statuses))
	for i, st := range q.Statuses {
		out[i] = s.keys.statusIndex(shard, st, q.Mode, q.Region)
	}
	return out
}

// position reads an index entry: a fill entry "<...>|<...>|<id>" is its
// own key.
func position(q lobby.Query, z redis.Z) lobby.Position {
	m := z.Member.(string)
	if q.Sort == lobby.Fill {
		return lobby.Position{ID: fillID(m), Key: m}
	}
	return lobby.Position{Score: int64(z.Score), ID: m}
}

func (s *Store) listShards(q lobby.Query) []int {
	if q.Mode != "" && q.Region != "" {
		return s.stripes.readShards(q.Mode, q.Region)
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

// fetchListed reads the candidates' rooms in one pipeline; nil for those
// that closed or no longer match since the index was read.
func (s *Store) fetchListed(ctx context.Context, q lobby.Query, cands []candidate) ([]*rooms.Room, error) {
	cmds := make([]*redis.StringSliceCmd, len(cands))
	if len(cands) > 0 {
		err := s.browse(ctx, func(cl redis.UniversalClient) error {
			pipe := cl.Pipeline()
			for i, c := range cands {
				cmds[i] = queueRoomHash(ctx, pipe, s.keys.room(c.shard, c.pos.ID))
			}
			_, err := pipe.Exec(ctx)
			return err
		})
		if err != nil && err != redis.Nil {
			return nil, redisx.Wrap(err)
		}
	}
	out := make([]*rooms.Room, len(cands))
	for i, c := range cands {
		h := roomHashOf(cmds[i])
		if h == nil {
			continue
		}
		r, err := decodeRoom(c.pos.ID, h, nil, nil, nil)
		if err != nil {
			return nil, err
		}
		if r.Visibility == rooms.Public && hasStatus(q.Statuses, r.Status) && (!q.Joinable || r.Joinable()) {
			out[i] = &r
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
