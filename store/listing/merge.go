package listing

import (
	"context"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/lobby"
	"github.com/realsync/realsync/store/internal/layout"
	"github.com/realsync/realsync/store/internal/redisx"
)

// merge reads the indexes of one query (every read shard × status, or
// joinable, or fill index) in sort order, each index entry read from
// Redis at most once per merge: it keeps, per index, the entries read and
// not yet taken and where its next read starts, and reads an index again
// only once all of its entries were taken, since until then the merge
// cannot tell what comes next. The indexes that need a read are read
// together, in one pipeline (a browsing read).
//
// The entries read count against a budget: each read of an index asks
// for at most per entries and, once an entry was taken, for no more than
// the budget left, shared by the indexes read together; when the budget
// cannot cover them the merge stops. Before the first entry is taken
// every index is read at least once, beyond the budget if need be, so
// that a merge always takes one entry or reaches the end: with more than
// budget/2 indexes a merge may read up to two entries per index (one
// more for an index whose first entry read was the cursor's own).
type merge struct {
	s       *Index
	q       lobby.Query
	indexes []*source
	budget  int  // entries that may still be read; < 0 past it
	per     int  // the most entries one read of one index asks for
	taken   bool // an entry was taken
	last    lobby.Position
}

// source is one index of a merge.
type source struct {
	key   string
	shard int
	buf   []candidate     // read and not yet taken, in sort order
	from  *lobby.Position // the last entry read; nil: none yet (the reads start after q.After)
	ended bool            // a read came back short: nothing follows what was read
}

// newMerge prepares the merge of q's indexes with budget entries to read,
// up to most entries per read of one index; it reads nothing yet.
func (s *Index) newMerge(q lobby.Query, budget, most int) *merge {
	m := &merge{s: s, q: q, budget: budget}
	for _, shard := range s.listShards(q) {
		for _, key := range s.listKeys(shard, q) {
			m.indexes = append(m.indexes, &source{key: key, shard: shard})
		}
	}
	m.per = min(max(budget/max(len(m.indexes), 1), 1), most)
	return m
}

// next takes up to n entries in sort order, each after the last taken
// (after q.After at first). It returns fewer only when every index was
// taken to its end (ended) or the budget allows no read the merge needs.
func (m *merge) next(ctx context.Context, n int) ([]candidate, error) {
	var out []candidate
	for len(out) < n {
		if due := m.due(); len(due) > 0 {
			ok, err := m.read(ctx, due)
			if !ok || err != nil {
				return out, err
			}
			continue
		}
		first := -1
		for i, src := range m.indexes {
			if len(src.buf) > 0 && (first < 0 || lobby.Before(m.q.Sort, src.buf[0].pos, m.indexes[first].buf[0].pos)) {
				first = i
			}
		}
		if first < 0 {
			return out, nil
		}
		src := m.indexes[first]
		out = append(out, src.buf[0])
		m.last, m.taken = src.buf[0].pos, true
		src.buf = src.buf[1:]
	}
	return out, nil
}

// ended reports whether every index was taken to its end.
func (m *merge) ended() bool {
	for _, src := range m.indexes {
		if len(src.buf) > 0 || !src.ended {
			return false
		}
	}
	return true
}

// due are the indexes the merge must read before it can take the next
// entry: those whose entries were all taken and that did not end.
func (m *merge) due() []*source {
	var out []*source
	for _, src := range m.indexes {
		if len(src.buf) == 0 && !src.ended {
			out = append(out, src)
		}
	}
	return out
}

// read reads the next entries of the indexes due, in one pipeline, and
// charges the entries that came back to the budget; ok is false, and
// nothing read, when the budget cannot give each at least one.
func (m *merge) read(ctx context.Context, due []*source) (ok bool, err error) {
	each := min(m.per, m.budget/len(due))
	if !m.taken {
		each = max(each, 1)
	}
	if each < 1 {
		return false, nil
	}
	type read struct {
		scored *redis.ZSliceCmd
		lex    *redis.StringSliceCmd // fill indexes: BYLEX takes no WITHSCORES
	}
	reads := make([]read, len(due))
	err = m.s.browse(ctx, func(c redis.UniversalClient) error {
		pipe := c.Pipeline()
		for i, src := range due {
			a := m.args(src, each)
			if m.q.Sort == lobby.Fill {
				reads[i] = read{lex: pipe.ZRangeArgs(ctx, a)}
			} else {
				reads[i] = read{scored: pipe.ZRangeArgsWithScores(ctx, a)}
			}
		}
		_, err := pipe.Exec(ctx)
		return err
	})
	if err != nil && err != redis.Nil {
		return false, redisx.Wrap(err)
	}
	for i, src := range due {
		var got []candidate
		if r := reads[i]; r.lex != nil {
			for _, k := range r.lex.Val() {
				got = append(got, candidate{pos: lobby.Position{ID: layout.FillID(k), Key: k}, shard: src.shard})
			}
		} else {
			for _, z := range r.scored.Val() {
				got = append(got, candidate{pos: lobby.Position{Score: int64(z.Score), ID: z.Member.(string)}, shard: src.shard})
			}
		}
		m.budget -= len(got)
		src.ended = len(got) < each
		if len(got) > 0 {
			src.from = &got[len(got)-1].pos
		}
		for _, c := range got {
			if m.q.After == nil || lobby.Before(m.q.Sort, *m.q.After, c.pos) {
				src.buf = append(src.buf, c)
			}
		}
	}
	return true, nil
}

// args reads up to count entries of src after what it read already, or,
// at first, from q.After on. After src's own last entry the bound is
// exclusive: an index holds one entry per score (scores are unique within
// a shard) and one per fill key. From q.After, a position of any shard, a
// score bound is inclusive, so that an entry of another shard at the
// cursor's score and after it in id order is read; the entries at or
// before the cursor that come back with it (at most one per index) are
// dropped when read, their reading charged.
func (m *merge) args(src *source, count int) redis.ZRangeArgs {
	from, open := src.from, true
	if from == nil {
		from, open = m.q.After, m.q.Sort == lobby.Fill
	}
	if m.q.Sort == lobby.Fill {
		start := "-"
		if from != nil {
			start = "(" + from.Key
		}
		return redis.ZRangeArgs{Key: src.key, ByLex: true, Start: start, Stop: "+", Count: int64(count)}
	}
	lo, hi := "-inf", "+inf"
	if from != nil {
		b := strconv.FormatInt(from.Score, 10)
		if open {
			b = "(" + b
		}
		if m.q.Sort == lobby.Newest {
			hi = b
		} else {
			lo = b
		}
	}
	a := redis.ZRangeArgs{Key: src.key, ByScore: true, Count: int64(count), Start: lo, Stop: hi}
	if m.q.Sort == lobby.Newest {
		a.Rev, a.Start, a.Stop = true, hi, lo
	}
	return a
}
