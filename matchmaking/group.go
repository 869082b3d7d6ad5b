package matchmaking

import (
	"sort"
	"time"
)

// Entry is a searching ticket as the grouping sees it.
type Entry struct {
	ID      string
	Rating  float64
	Size    int
	Created time.Time
	Regions []string
	// EqKey is the values of the rules' equal attributes, encoded: only
	// tickets with the same key match.
	EqKey string
}

// Grouped is one match the grouping made: the tickets (anchor first),
// each ticket's team, the region.
type Grouped struct {
	Tickets []string
	Teams   []int
	Region  string
}

// Group is the reference grouping, which the store's pass script
// implements in Lua the same way (a differential test holds them
// together). Tickets are taken in rating order (ties by id); each ticket
// not yet grouped anchors a try in each of its regions open at now, in
// preference order: the tickets after it, in rating order, join while
// the spread from the anchor is within every picked ticket's window
// (so each ticket's rating window holds every other's rating); a ticket
// with another EqKey, not open in the region, whose own window is too
// narrow, or whose party fits no team (best fit: the team with the least
// room that holds it) is skipped and stays queued. The try is a match
// when it has Size() players (or, one team of min..max, at least
// Needed()). Parties are never split; no ticket is in two matches.
func Group(r Rules, entries []Entry, now time.Time) []Grouped {
	es := append([]Entry(nil), entries...)
	sort.Slice(es, func(i, j int) bool {
		if es[i].Rating != es[j].Rating {
			return es[i].Rating < es[j].Rating
		}
		return es[i].ID < es[j].ID
	})
	used := make([]bool, len(es))
	var out []Grouped
	for i := range es {
		if used[i] {
			continue
		}
		a := es[i]
		wa := r.WindowAt(now.Sub(a.Created))
		for _, reg := range r.RegionsAt(a.Regions, now.Sub(a.Created)) {
			if g, ok := r.try(es, used, i, wa, reg, now); ok {
				out = append(out, g)
				break
			}
		}
	}
	return out
}

// try grows a match from anchor i in region reg; on success it marks the
// tickets used. The tickets after the anchor are taken in rating order;
// when that leaves the match short and a party was skipped for want of a
// team with room (a smaller ticket took the seats it needed: in 2 v 2, a
// party, a solo, a party), the same tickets are tried once more largest
// party first (then in rating order), so two parties that make a match are
// not kept apart by a solo that took the seat one needed. (A solo whose own
// window ends before the second party still keeps them apart until its
// window widens: the walk stops there, and nothing was skipped.)
func (r Rules) try(es []Entry, used []bool, i int, wa float64, reg string, now time.Time) (Grouped, bool) {
	g, picked, misfit := r.grow(es, used, i, wa, reg, now, nil)
	if len(picked) == 0 && misfit != nil {
		g, picked, _ = r.grow(es, used, i, wa, reg, now, misfit)
	}
	if len(picked) == 0 {
		return Grouped{}, false
	}
	for _, j := range picked {
		used[j] = true
	}
	return g, true
}

// grow is one try of try: order nil takes the tickets after the anchor i
// in rating order, and returns, when the try fell short, the candidates
// (tickets of the anchor's window, EqKey and region) if one of them was
// skipped for want of a team with room (nil otherwise); given those, grow
// takes them largest party first. A ticket joins when it fits a team and
// every picked ticket's window holds the spread of all. picked is nil
// when the try fell short.
func (r Rules) grow(es []Entry, used []bool, i int, wa float64, reg string, now time.Time, order []int) (g Grouped, picked []int, misfit []int) {
	free := make([]int, r.Teams)
	for t := range free {
		free[t] = r.teamCap()
	}
	a := es[i]
	t := bestFit(free, a.Size)
	if t < 0 {
		return Grouped{}, nil, nil
	}
	free[t] -= a.Size
	g = Grouped{Tickets: []string{a.ID}, Teams: []int{t}, Region: reg}
	picked = []int{i}
	total, minW, maxSpread := a.Size, wa, 0.0
	var cands []int
	skipped := false
	if order != nil {
		sort.SliceStable(order, func(x, y int) bool { return es[order[x]].Size > es[order[y]].Size })
	}
	for k := 0; total < r.Size(); k++ {
		var j int
		if order == nil {
			j = i + 1 + k
			if j >= len(es) {
				break
			}
		} else {
			if k >= len(order) {
				break
			}
			j = order[k]
		}
		e := es[j]
		if used[j] {
			continue
		}
		spread := e.Rating - a.Rating
		if order == nil && spread > minW {
			break
		}
		waited := now.Sub(e.Created)
		we := r.WindowAt(waited)
		if e.EqKey != a.EqKey || spread > we || !contains(r.RegionsAt(e.Regions, waited), reg) {
			continue
		}
		if order == nil {
			cands = append(cands, j)
		} else if spread > minW || maxSpread > we {
			continue
		}
		u := bestFit(free, e.Size)
		if u < 0 {
			skipped = true
			continue
		}
		free[u] -= e.Size
		g.Tickets, g.Teams = append(g.Tickets, e.ID), append(g.Teams, u)
		picked = append(picked, j)
		total += e.Size
		minW, maxSpread = min(minW, we), max(maxSpread, spread)
	}
	if total < r.Needed() {
		if skipped && order == nil {
			return Grouped{}, nil, cands
		}
		return Grouped{}, nil, nil
	}
	return g, picked, nil
}

// bestFit is the team with the least free seats that still holds n
// (lowest index on a tie), -1 when none does.
func bestFit(free []int, n int) int {
	best := -1
	for t, f := range free {
		if f >= n && (best < 0 || f < free[best]) {
			best = t
		}
	}
	return best
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
