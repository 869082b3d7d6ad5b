package listing

import (
	"context"

	"github.com/realsync/realsync/lobby"
	"github.com/realsync/realsync/rooms"
)

// scanBatch is how many index entries a scan takes, and rooms it reads,
// at a time, and the most it reads of one index at a time.
const scanBatch = 100

// scan applies attribute filters to the rooms read in index order,
// keeping those whose attributes match, until the page is full (and one
// more match says More), the indexes end, or the scan budget is spent. It
// reads each index entry at most once (a merge) and at most
// lobby.ScanBudget of them in all, and only the rooms of entries taken in
// order, so at most as many: past the budget a page may come back short,
// even empty, with More and Last the last entry taken, to continue after.
// Only a listing of more than ScanBudget/2 indexes (shards × statuses,
// e.g. more than 250 shards with two statuses) may read more: at most two
// entries per index (see merge).
func (s *Index) scan(ctx context.Context, q lobby.Query) (lobby.Result, error) {
	m := s.newMerge(q, lobby.ScanBudget, scanBatch)
	var res lobby.Result
	for {
		cands, err := m.next(ctx, scanBatch)
		if err != nil {
			return lobby.Result{}, err
		}
		rs, err := s.fetchListed(ctx, q, cands)
		if err != nil {
			return lobby.Result{}, err
		}
		for i := range rs {
			r := &rs[i]
			if r.ID == "" || !rooms.MatchAll(q.Attrs, r.Attributes) {
				continue
			}
			if len(res.Rooms) == q.Limit {
				res.More = true
				return res, nil
			}
			res.Rooms = append(res.Rooms, *r)
			res.Last = cands[i].pos
		}
		if len(cands) < scanBatch { // the indexes ended, or the budget did
			if !m.ended() {
				res.More, res.Last = true, m.last
			}
			return res, nil
		}
	}
}
