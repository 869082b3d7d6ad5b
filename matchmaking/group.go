package matchmaking

import (
	"slices"
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
	// Users is the ticket's users, leader first.
	Users []string
}

// Grouped is one match the grouping made: the tickets (anchor first),
// each ticket's team, the region.
type Grouped struct {
	Tickets []string
	Teams   []int
	Region  string
}

// PassBudget bounds the work of a pass (one GroupWithin, one run of the
// pass script). Try is the most nodes a try's search visits (a try whose
// walk falls short searches its candidates; a node is one candidate
// considered at one depth of the search: taken into each team it may
// join, then skipped). Work is the pass's work, counted in steps: a try
// is one step, each ticket its walk looks at one (the one that ends the
// walk too), each node of its search one. Before each anchor the pass
// checks its steps: once Work are spent, it ends there (cut) and the next
// pass starts its walk at that anchor, so a pass holds Redis for a
// bounded time whatever the queue's shape, and every ticket is still
// tried as an anchor, in rating order, within a bounded number of passes
// (each pass tries at least one; an anchor's tries once begun run whole,
// one in each region open to it, so a pass takes at most one anchor's
// steps past Work). In the store's pass, a backfill mode's rooms take
// their steps from Work too (each ticket a room looks at), at most half
// of it. Zero fields take
// DefaultBudget's.
type PassBudget struct {
	Try, Work int
}

// DefaultBudget is the budget of every pass the matcher makes: 500 nodes
// a try, 12 000 steps a pass (BenchmarkPass in store/tickets: a pass
// whose every try walks a whole window of 5 v 5 parties that never fill,
// and searches, holds Redis 10–15 ms on a shared 2-vCPU machine;
// docs/PERFORMANCE-HISTORY.md, "A pass's work bounded").
var DefaultBudget = PassBudget{Try: 500, Work: 12000}

// OrDefault is b with its zero fields DefaultBudget's.
func (b PassBudget) OrDefault() PassBudget {
	if b.Try <= 0 {
		b.Try = DefaultBudget.Try
	}
	if b.Work <= 0 {
		b.Work = DefaultBudget.Work
	}
	return b
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
// Needed()). When that walk falls short, the try searches the anchor's
// candidates for a subset that makes a match (search). The pass is
// bounded by DefaultBudget: the anchors after its cut are not tried
// (GroupWithin says where it was cut). Parties are never split; no ticket
// is in two matches, and no user is in two tickets a pass groups: a user
// has one active ticket (its claim), but should two share a user (a
// claim lost in a failover lets its user queue another), the pass takes
// only the first of them in rating order (ties by id), as though the
// others were not queued.
func Group(r Rules, entries []Entry, now time.Time) []Grouped {
	gs, _ := GroupWithin(r, entries, now, DefaultBudget)
	return gs
}

// GroupWithin is Group within the budget b (OrDefault); cut is the ID of
// the ticket before which b.Work ran out (the first not grouped whose
// tries were not made: where the next pass starts), "" when every ticket
// was tried.
func GroupWithin(r Rules, entries []Entry, now time.Time, b PassBudget) (gs []Grouped, cut string) {
	b = b.OrDefault()
	es := append([]Entry(nil), entries...)
	sort.Slice(es, func(i, j int) bool {
		if es[i].Rating != es[j].Rating {
			return es[i].Rating < es[j].Rating
		}
		return es[i].ID < es[j].ID
	})
	es = firstOfEachUser(es)
	used := make([]bool, len(es))
	work := b.Work
	for i := range es {
		if used[i] {
			continue
		}
		if work <= 0 {
			return gs, es[i].ID
		}
		a := es[i]
		wa := r.WindowAt(now.Sub(a.Created))
		for _, reg := range r.RegionsAt(a.Regions, now.Sub(a.Created)) {
			if g, ok := r.try(es, used, i, wa, reg, now, b.Try, &work); ok {
				gs = append(gs, g)
				break
			}
		}
	}
	return gs, ""
}

// firstOfEachUser is es (in rating order) without every ticket that
// shares a user with one before it.
func firstOfEachUser(es []Entry) []Entry {
	seen := map[string]bool{}
	return slices.DeleteFunc(es, func(e Entry) bool {
		if slices.ContainsFunc(e.Users, func(u string) bool { return seen[u] }) {
			return true
		}
		for _, u := range e.Users {
			seen[u] = true
		}
		return false
	})
}

// try makes a match from anchor i (window wa) in region reg, by the walk,
// or when the walk falls short by the search, which visits at most nodes
// nodes; it takes its steps (PassBudget) from *work, and on success marks
// the tickets used.
func (r Rules) try(es []Entry, used []bool, i int, wa float64, reg string, now time.Time, nodes int, work *int) (Grouped, bool) {
	*work--
	picked, teams, cands := r.walk(es, used, i, wa, reg, now, work)
	if picked == nil {
		picked, teams = r.search(es, i, wa, cands, nodes, work)
	}
	if picked == nil {
		return Grouped{}, false
	}
	g := Grouped{Region: reg}
	for k, j := range picked {
		used[j] = true
		g.Tickets, g.Teams = append(g.Tickets, es[j].ID), append(g.Teams, teams[k])
	}
	return g, true
}

// cand is a ticket a try may take: its index in es, its rating above the
// anchor's, its own window.
type cand struct {
	j         int
	spread, w float64
}

// walk takes the tickets after the anchor i in rating order into the
// try: a ticket joins when it has the anchor's EqKey, is open in reg,
// fits a team (best fit) and every picked ticket's window (the anchor's
// wa included) holds its spread from the anchor; the walk ends at the
// first ticket past a picked ticket's window, or when the match is full.
// It returns the picked tickets (anchor first) and their teams; when the
// try falls short, nil and instead the anchor's candidates: every ticket
// after it within wa that has its EqKey, is open in reg and whose own
// window holds its spread (those the walk passed, then the rest of wa).
// Each ticket it looks at (used ones and the one that ends it too) is a
// step taken from *work.
func (r Rules) walk(es []Entry, used []bool, i int, wa float64, reg string, now time.Time, work *int) (picked, teams []int, cands []cand) {
	free := make([]int, r.Teams)
	for t := range free {
		free[t] = r.teamCap()
	}
	a := es[i]
	t := bestFit(free, a.Size)
	if t < 0 {
		return nil, nil, nil
	}
	free[t] -= a.Size
	picked, teams = []int{i}, []int{t}
	total, minW := a.Size, wa
	j := i + 1
	for ; j < len(es) && total < r.Size(); j++ {
		*work--
		if used[j] {
			continue
		}
		if es[j].Rating-a.Rating > minW {
			break
		}
		c, ok := r.candidate(a, es[j], j, reg, now)
		if !ok {
			continue
		}
		cands = append(cands, c)
		if u := bestFit(free, es[j].Size); u >= 0 {
			free[u] -= es[j].Size
			picked, teams = append(picked, j), append(teams, u)
			total += es[j].Size
			minW = min(minW, c.w)
		}
	}
	if total >= r.Needed() {
		return picked, teams, nil
	}
	for ; j < len(es); j++ {
		*work--
		if used[j] {
			continue
		}
		if es[j].Rating-a.Rating > wa {
			break
		}
		if c, ok := r.candidate(a, es[j], j, reg, now); ok {
			cands = append(cands, c)
		}
	}
	return nil, nil, cands
}

// candidate is e (es[j]) as a candidate of anchor a's try in reg; ok is
// false when e has another EqKey, is not open in reg, or its own window
// does not hold its spread.
func (r Rules) candidate(a, e Entry, j int, reg string, now time.Time) (c cand, ok bool) {
	waited := now.Sub(e.Created)
	c = cand{j: j, spread: e.Rating - a.Rating, w: r.WindowAt(waited)}
	return c, e.EqKey == a.EqKey && c.spread <= c.w && contains(r.RegionsAt(e.Regions, waited), reg)
}

// search looks for a subset of the candidates (rating order) that makes a
// match with the anchor i (in the team the walk put it): a depth-first
// search that at each candidate first takes it, into the best-fit team and
// then into each other team it fits whose free seats differ from every
// team tried (teams with as many free seats are interchangeable), then
// skips it; a candidate past a taken one's window ends the branch (so
// every picked ticket's window holds the spread), and so does a branch
// whose candidates left hold too few players or none that fits a team,
// or (a match of exactly Size() players, every team full) that have no
// parties that add up to some team's free seats.
// The first match found is the walk's whenever the walk makes one (it is
// the search's first branch). It visits at most nodes nodes, each a step
// taken from *work; nil when it found none within them. Its table of
// sums (every team full) is steps too (setupSteps: 32 v 32's tables cost
// more than its walks, uncounted).
func (r Rules) search(es []Entry, i int, wa float64, cands []cand, nodes int, work *int) (picked, teams []int) {
	n, c1 := len(cands), r.teamCap()+1
	s := searcher{r: r, es: es, cands: cands, sum: make([]int, n+1), least: make([]int, n+1),
		free: make([]int, r.Teams), nodes: nodes, work: work}
	s.least[n] = c1
	for k := n - 1; k >= 0; k-- {
		size := es[cands[k].j].Size
		s.sum[k], s.least[k] = s.sum[k+1]+size, min(s.least[k+1], size)
	}
	a := es[i]
	if a.Size+s.sum[0] < r.Needed() {
		return nil, nil // too few players: not a node
	}
	if r.Size() == r.Needed() {
		*work -= r.setupSteps(n)
		s.reach = make([]bool, (n+1)*c1)
		s.reach[n*c1] = true
		for k := n - 1; k >= 0; k-- {
			size := es[cands[k].j].Size
			for f := range c1 {
				s.reach[k*c1+f] = s.reach[(k+1)*c1+f] || f >= size && s.reach[(k+1)*c1+f-size]
			}
		}
	}
	for t := range s.free {
		s.free[t] = r.teamCap()
	}
	t := bestFit(s.free, a.Size)
	if t < 0 {
		return nil, nil
	}
	s.free[t] -= a.Size
	s.picked, s.teams = []int{i}, []int{t}
	if !s.from(0, a.Size, wa) {
		return nil, nil
	}
	return s.picked, s.teams
}

// setupSteps is the steps (PassBudget) of a search's table of sums over n
// candidates, made when every team must be full: a step every 8 of its
// cells (a cell a candidate for each count of free seats a team may
// have, 0 to its size; 8 cost about a step of the walk).
func (r Rules) setupSteps(n int) int {
	return (n*(r.teamCap()+1) + 7) / 8
}

// searcher is one try's search: the candidates with, from each on, the
// players they hold (sum), the smallest party (least) and, when every
// team must be full, whether some of their parties add up to f players
// (reach[k*(teamCap+1)+f]); the teams' free seats and the tickets picked
// so far (a stack); the nodes left, and the pass's steps left.
type searcher struct {
	r          Rules
	es         []Entry
	cands      []cand
	sum, least []int
	reach      []bool
	free       []int
	picked     []int
	teams      []int
	nodes      int
	work       *int
	out        bool // the nodes ran out
}

// from searches on from candidate k with total players picked, minW the
// narrowest picked window; true when the picked tickets make a match.
// Each candidate it considers is a node; taking one searches on from the
// next, skipping one is the loop's next turn.
func (s *searcher) from(k, total int, minW float64) bool {
	if total >= s.r.Size() {
		return true
	}
	for ; ; k++ {
		if s.nodes <= 0 {
			s.out = true
			return false
		}
		s.nodes--
		*s.work--
		if k == len(s.cands) || s.cands[k].spread > minW || total+s.sum[k] < s.r.Needed() || s.least[k] > maxFree(s.free) ||
			!s.fillable(k) {
			return total >= s.r.Needed()
		}
		c := s.cands[k]
		size := s.es[c.j].Size
		u := bestFit(s.free, size)
		for t := -1; u >= 0 && t < len(s.free); t++ {
			team := u
			if t >= 0 {
				if t == u || s.free[t] < size || s.free[t] == s.free[u] || tried(s.free[:t], s.free[t]) {
					continue
				}
				team = t
			}
			s.free[team] -= size
			s.picked, s.teams = append(s.picked, c.j), append(s.teams, team)
			if s.from(k+1, total+size, min(minW, c.w)) {
				return true
			}
			s.free[team] += size
			s.picked, s.teams = s.picked[:len(s.picked)-1], s.teams[:len(s.teams)-1]
			if s.out {
				return false
			}
		}
	}
}

// fillable is false when every team must be full and the candidates
// from k on have no parties that add up to some team's free seats.
func (s *searcher) fillable(k int) bool {
	if s.reach == nil {
		return true
	}
	c1 := s.r.teamCap() + 1
	for _, f := range s.free {
		if !s.reach[k*c1+f] {
			return false
		}
	}
	return true
}

// tried reports whether a team of free has f free seats.
func tried(free []int, f int) bool {
	for _, x := range free {
		if x == f {
			return true
		}
	}
	return false
}

func maxFree(free []int) int {
	m := 0
	for _, f := range free {
		m = max(m, f)
	}
	return m
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
