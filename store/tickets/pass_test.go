package tickets_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"sort"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/matchmaking"
)

// The pass script groups exactly as matchmaking.Group does, on random
// queues of parties, regions with fallback, equal attributes and windows
// widened by a fixed clock: 2 v 2 with parties of 2; 5 v 5 with parties of
// 1 to 5, where the walk falls short often and the search matters (the
// search must make more of the matches than a budget of one node does);
// one team of 6..8; and 2 v 2 and 5 v 5 on a budget so small that each
// pass is cut after a few tries: the script is cut before the anchor the
// reference is cut at (their steps counted the same), and the passes that
// follow, each from the last one's cursor, group as the reference does
// from that anchor on, until a pass tries every ticket left; and 2 v 2
// whose parties share members, their claims lost (as in a failover, the
// tickets queued by a release before the active-ticket fields), on
// the default budget and on the small one: a pass takes only the first
// ticket of each user in rating order.
func TestPassMatchesReferenceGrouping(t *testing.T) {
	rs := mustRules(t, `
modes:
  squad:
    teams: 2
    teamSize: 2
    window: {start: 40, step: 40, every: 2s, max: 300}
    regionFallback: 4s
    attributes: [{name: platform, equal: true}]
  five:
    teams: 2
    teamSize: 5
    window: {start: 40, step: 40, every: 2s, max: 300}
    regionFallback: 4s
    attributes: [{name: platform, equal: true}]
  ffa:
    minPlayers: 6
    maxPlayers: 8
    window: {start: 40, step: 40, every: 2s, max: 300}
    regionFallback: 4s
    attributes: [{name: platform, equal: true}]
`)
	for _, tc := range []struct {
		name, mode string
		size       func(rng *rand.Rand) int
		budget     matchmaking.PassBudget
		lost       bool // claims lost: party members drawn from 24 users
	}{
		{"2v2", "squad", func(rng *rand.Rand) int { return 2 - min(rng.IntN(3), 1) }, matchmaking.PassBudget{}, false},
		{"5v5", "five", func(rng *rand.Rand) int { return 1 + rng.IntN(5) }, matchmaking.PassBudget{}, false},
		{"ffa", "ffa", func(rng *rand.Rand) int { return 1 + rng.IntN(5) }, matchmaking.PassBudget{}, false},
		{"2v2-cut", "squad", func(rng *rand.Rand) int { return 2 - min(rng.IntN(3), 1) }, matchmaking.PassBudget{Work: 40}, false},
		{"5v5-cut", "five", func(rng *rand.Rand) int { return 1 + rng.IntN(5) }, matchmaking.PassBudget{Try: 8, Work: 120}, false},
		{"2v2-lost-claims", "squad", func(rng *rand.Rand) int { return 2 - min(rng.IntN(3), 1) }, matchmaking.PassBudget{}, true},
		{"2v2-lost-claims-cut", "squad", func(rng *rand.Rand) int { return 2 - min(rng.IntN(3), 1) }, matchmaking.PassBudget{Work: 40}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rs.Of(tc.mode)
			redistest.Each(t, func(t *testing.T, b redistest.Backend) {
				passMatchesReference(t, b, rs, tc.mode, r, tc.size, tc.budget, tc.lost)
			})
		})
	}
}

func passMatchesReference(t *testing.T, b redistest.Backend, rs matchmaking.RuleSet, mode string, r matchmaking.Rules,
	size func(*rand.Rand) int, budget matchmaking.PassBudget, lost bool) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, uint64(len(b.Name))))
	regions := []string{"eu", "us", "asia"}
	params := make([]matchmaking.TicketParams, 160)
	for i := range params {
		p := matchmaking.TicketParams{Mode: mode, Rating: rating(float64(1000 + rng.IntN(400))),
			Attributes: map[string]any{"platform": []string{"pc", "console"}[rng.IntN(2)]}}
		for _, k := range rng.Perm(3)[:1+rng.IntN(3)] {
			p.Regions = append(p.Regions, regions[k])
		}
		for k := 1; k < size(rng); k++ {
			m := fmt.Sprintf("m%d-%d", i, k)
			if lost {
				m = fmt.Sprintf("m%d", rng.IntN(24))
			}
			p.PartyUserIDs = append(p.PartyUserIDs, m)
		}
		params[i] = p
	}
	// the rounds below hold their windows and regions only while the
	// tickets' ages differ by less than 2 s: a slower queue (a loaded
	// machine: 2.4 to 6 s under CI's race detector) has its creation
	// times drawn together, in order, into the 1.5 s before the last
	e := open(t, b, rs)
	entries, first, last := queueAtOnce(t, e, r, params, lost)
	if shared := sharedUsers(entries); lost != (shared > 0) {
		t.Fatalf("%d tickets share a user with another: the test checks little of it", shared)
	}
	spread := last.Sub(first) // how long the creates took
	if spread >= 2*time.Second {
		for _, en := range entries {
			at := last.Add(-time.Duration(float64(last.Sub(en.Created)) * float64(1500*time.Millisecond) / float64(spread)))
			if err := e.tickets.SetCreated(ctx, mode, en.ID, at.UnixMilli()); err != nil {
				t.Fatal(err)
			}
		}
		entries, first, last = readEntries(t, e, r, idsOf(entries))
		t.Logf("the creates took %s: drawn into %s", spread, last.Sub(first))
	}
	rated, users := map[string]float64{}, map[string][]string{}
	for _, en := range entries {
		rated[en.ID], users[en.ID] = en.Rating, en.Users
	}
	searched := 0 // tickets matched beyond a search of one node
	cuts := 0     // passes cut by the budget
	// the rounds, from the last ticket's creation, fall on a window's step
	// (every 2 s) and 2 s before the next step or region fallback (every
	// 4 s): every ticket's window and regions are the round's own while the
	// creates took less than 2 s
	for round, wait := range []time.Duration{0, 2 * time.Second, 8 * time.Second} {
		now := last.Add(wait)
		all, _ := matchmaking.GroupWithin(r, entries, now, matchmaking.PassBudget{Try: budget.Try, Work: 1 << 30})
		if round > 0 && len(all) == 0 {
			t.Fatalf("round %d can make no match (the creates took %s, ages %s apart): the test checks nothing", round, spread, last.Sub(first))
		}
		walked, _ := matchmaking.GroupWithin(r, entries, now, matchmaking.PassBudget{Try: 1, Work: 1 << 30})
		searched += playersIn(all, entries) - playersIn(walked, entries)
		// the round's passes, each from the last one's cursor, until one
		// tries every ticket left
		from, at := "", ""
		for call := 0; ; call++ {
			if call > len(entries) {
				t.Fatalf("round %d: %d passes and still cut", round, call)
			}
			var view []matchmaking.Entry // the tickets from the cut on
			for _, en := range entries {
				if at == "" || en.Rating > rated[at] || en.Rating == rated[at] && en.ID >= at {
					view = append(view, en)
				}
			}
			want, wantCut := matchmaking.GroupWithin(r, view, now, budget)
			p, err := e.tickets.Pass(ctx, mode, r, matchmaking.PassParams{Walk: 1000, Sweep: 1000, Grace: time.Minute, Now: now,
				Budget: budget, From: from})
			if err != nil {
				t.Fatal(err)
			}
			var got []matchmaking.Grouped
			placed := map[string]string{} // user → its match in this pass
			for _, m := range p.Matches {
				g := matchmaking.Grouped{Region: m.Region}
				for _, mt := range m.Tickets {
					g.Tickets, g.Teams = append(g.Tickets, mt.ID), append(g.Teams, mt.Team)
					for _, u := range users[mt.ID] {
						if placed[u] != "" {
							t.Fatalf("round %d pass %d: user %s in %s and %s", round, call, u, placed[u], m.ID)
						}
						placed[u] = m.ID
					}
				}
				got = append(got, g)
			}
			if !reflect.DeepEqual(got, want) || p.Cut != wantCut {
				t.Fatalf("round %d pass %d: the pass grouped\n%v\ncut at %q; the reference\n%v\ncut at %q", round, call, got, p.Cut, want, wantCut)
			}
			// the next pass sees the queue without the matched tickets
			matched := map[string]bool{}
			for _, g := range want {
				for _, id := range g.Tickets {
					matched[id] = true
				}
			}
			var rest []matchmaking.Entry
			for _, en := range entries {
				if !matched[en.ID] {
					rest = append(rest, en)
				}
			}
			entries = rest
			if n, _ := e.tickets.Searching(ctx, mode); n != len(entries) {
				t.Fatalf("round %d pass %d: queue holds %d, want %d", round, call, n, len(entries))
			}
			if p.Cut == "" {
				if p.Next != "" {
					t.Fatalf("round %d pass %d: not cut, next %q", round, call, p.Next)
				}
				break
			}
			cuts++
			from, at = p.Next, p.Cut
		}
	}
	if budget.Work != 0 && cuts < 10 {
		t.Fatalf("the budget %+v cut %d passes: the test checks little of the cut", budget, cuts)
	}
	if budget.Work == 0 && cuts != 0 {
		t.Fatalf("the default budget cut %d passes of 160 tickets", cuts)
	}
	if r.TeamSize == 5 && searched <= 0 {
		t.Fatalf("the search matched %d players more than the walk: the test checks little of it", searched)
	}
	t.Logf("%d players matched by the search beyond the walk, %d passes cut; the creates took %s", searched, cuts, spread)
}

// queueAtOnce queues a ticket of each params (the i-th of user "u<i>"),
// as close in time as the store allows, and returns them as the
// reference reads them (readEntries; Redis stamps each creation). With
// lost, one at a time, each ticket's claims and its users' active-ticket
// fields forgotten once it is queued (tickets.Store.ForgetClaim,
// ForgetActive: a claim lost in a failover, beside a ticket a release
// before the fields queued), so that tickets may share users.
func queueAtOnce(t *testing.T, e env, r matchmaking.Rules, params []matchmaking.TicketParams, lost bool) (entries []matchmaking.Entry, first, last time.Time) {
	t.Helper()
	ctx := context.Background()
	ids := make([]string, len(params))
	var g errgroup.Group
	g.SetLimit(8)
	if lost {
		g.SetLimit(1)
	}
	for i, p := range params {
		g.Go(func() error {
			tk, err := e.svc.Create(ctx, player(fmt.Sprintf("u%d", i)), p)
			ids[i] = tk.ID
			for _, u := range tk.Users() {
				if err == nil && lost {
					err = e.tickets.ForgetClaim(ctx, u)
				}
				if err == nil && lost {
					err = e.tickets.ForgetActive(ctx, p.Mode, u)
				}
			}
			return err
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	return readEntries(t, e, r, ids)
}

// readEntries reads tickets ids as the reference reads them, with the
// first and last creation.
func readEntries(t *testing.T, e env, r matchmaking.Rules, ids []string) (entries []matchmaking.Entry, first, last time.Time) {
	t.Helper()
	ctx := context.Background()
	for _, id := range ids {
		tk, err := e.tickets.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, matchmaking.Entry{ID: id, Rating: tk.Rating, Size: tk.Size(), Created: tk.CreatedAt,
			Regions: tk.Regions, EqKey: matchmaking.EqKey(r, tk.Attributes), Users: tk.Users()})
		if first.IsZero() || tk.CreatedAt.Before(first) {
			first = tk.CreatedAt
		}
		last = later(last, tk.CreatedAt)
	}
	return entries, first, last
}

// sharedUsers is how many of entries share a user with another.
func sharedUsers(entries []matchmaking.Entry) int {
	of := map[string]int{}
	for _, en := range entries {
		for _, u := range en.Users {
			of[u]++
		}
	}
	n := 0
	for _, en := range entries {
		if slices.ContainsFunc(en.Users, func(u string) bool { return of[u] > 1 }) {
			n++
		}
	}
	return n
}

// idsOf is the ids of entries.
func idsOf(entries []matchmaking.Entry) []string {
	out := make([]string, len(entries))
	for i, en := range entries {
		out[i] = en.ID
	}
	return out
}

// later is the later of a and b.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// playersIn is the players of the matches gs, of entries.
func playersIn(gs []matchmaking.Grouped, entries []matchmaking.Entry) int {
	size := map[string]int{}
	for _, e := range entries {
		size[e.ID] = e.Size
	}
	n := 0
	for _, g := range gs {
		for _, id := range g.Tickets {
			n += size[id]
		}
	}
	return n
}

// A queue larger than a pass's walk is walked a page a pass, so tickets
// rated above the first page are matched too (without paging, the five
// lone tickets at the bottom would fill every page: seen failing, 0 of 40).
// So it is with passes cut after a try or two (a budget of 4 steps), each
// going on from the last one's cut, within a page or across into the
// next.
func TestPassWalksTheQueueInPages(t *testing.T) {
	for _, tc := range []struct {
		name   string
		budget matchmaking.PassBudget
		passes int
	}{{"whole-pages", matchmaking.PassBudget{}, 30}, {"cut-passes", matchmaking.PassBudget{Work: 4}, 100}} {
		t.Run(tc.name, func(t *testing.T) { walksInPages(t, tc.budget, tc.passes) })
	}
}

func walksInPages(t *testing.T, budget matchmaking.PassBudget, passes int) {
	r := matchmaking.Default() // ±100
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := context.Background()
		e := open(t, b, matchmaking.RuleSet{})
		add := func(uid string, rating float64) {
			tk := matchmaking.Ticket{ID: e.tickets.NewID("duel", ""), Mode: "duel", Regions: []string{"eu"}, Rating: rating,
				Attributes: map[string]any{}, UserID: uid, PartyUserIDs: []string{}}
			if _, err := e.tickets.Add(ctx, tk, matchmaking.GroupKey{Rating: rating, Size: 1, Regions: tk.Regions, Users: []string{uid}}, time.Minute, 0, 1000); err != nil {
				t.Fatal(err)
			}
		}
		for k := range 5 {
			add(fmt.Sprintf("lone%d", k), float64(-1000*k))
		}
		for k := range 20 {
			add(fmt.Sprintf("a%d", k), float64(1000+1000*k))
			add(fmt.Sprintf("b%d", k), float64(1000+1000*k+50))
		}
		from, matched, cut := "", 0, 0
		for pass := 0; pass < passes && matched < 40; pass++ {
			p, err := e.tickets.Pass(ctx, "duel", r, matchmaking.PassParams{Walk: 3, Sweep: 100, Grace: time.Minute, From: from,
				Budget: budget})
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range p.Matches {
				matched += len(m.Tickets)
			}
			if p.Cut != "" {
				cut++
			}
			from = p.Next
		}
		if n, _ := e.tickets.Searching(ctx, "duel"); matched != 40 || n != 5 {
			t.Fatalf("matched %d of 40 in %d passes of 3, %d left", matched, passes, n)
		}
		if budget.Work != 0 && cut == 0 {
			t.Fatal("no pass was cut: the test checks nothing of the cut")
		}
	})
}

// addParty queues a ticket of mode "squad" in eu: uid's party of size
// players at rating.
func addParty(t *testing.T, e env, uid string, rating float64, size int) string {
	t.Helper()
	party := []string{}
	for k := 1; k < size; k++ {
		party = append(party, fmt.Sprintf("%s-%d", uid, k))
	}
	tk := matchmaking.Ticket{ID: e.tickets.NewID("squad", ""), Mode: "squad", Regions: []string{"eu"}, Rating: rating,
		Attributes: map[string]any{}, UserID: uid, PartyUserIDs: party}
	users := append([]string{uid}, party...)
	if _, err := e.tickets.Add(context.Background(), tk, matchmaking.GroupKey{Rating: rating, Size: size, Regions: tk.Regions, Users: users}, time.Minute, 0, 1000); err != nil {
		t.Fatal(err)
	}
	return tk.ID
}

// A tester's 2 v 2 queue: a party at 1300, a solo at 1330, a party at
// 1400. The solo takes the second team's seat in the first party's walk
// and the second party fits no team; the search skips the solo, so the
// two parties are matched (one party a team) and the solo waits, where it
// had kept both parties searching until it left the queue.
func TestPassPartiesAroundASolo(t *testing.T) {
	r := matchmaking.Rules{Teams: 2, TeamSize: 2, Window: matchmaking.Window{Start: 100}}
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := context.Background()
		e := open(t, b, matchmaking.RuleSet{})
		p, s, q := addParty(t, e, "p1", 1300, 2), addParty(t, e, "solo", 1330, 1), addParty(t, e, "q1", 1400, 2)
		pass, err := e.tickets.Pass(ctx, "squad", r, matchmaking.PassParams{Walk: 100, Sweep: 100, Grace: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if len(pass.Matches) != 1 {
			t.Fatalf("%d matches, want 1: %+v", len(pass.Matches), pass.Matches)
		}
		m := pass.Matches[0]
		if len(m.Tickets) != 2 || m.Tickets[0].ID != p || m.Tickets[1].ID != q || m.Tickets[0].Team == m.Tickets[1].Team {
			t.Fatalf("match %+v, want the parties %s and %s on two teams", m.Tickets, p, q)
		}
		if n, _ := e.tickets.Searching(ctx, "squad"); n != 1 {
			t.Fatalf("%d searching, want the solo %s", n, s)
		}
	})
}

// A tester's 5 v 5 queue, one region, windows ±100: parties (size@rating)
// 2@1500 4@1510 3@1520 3@1530 2@1540. The walk from the first takes the
// party of 4, which only a solo could complete, and the two parties of 3
// then fit no team: all five stayed searching. The search skips the 4 and
// finds {2, 3} v {3, 2}; the 4 waits.
func TestPassPartiesOf5v5(t *testing.T) {
	r := matchmaking.Rules{Teams: 2, TeamSize: 5, Window: matchmaking.Window{Start: 100, Step: 100, Every: matchmaking.Duration(5 * time.Second), Max: 1000}}
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := context.Background()
		e := open(t, b, matchmaking.RuleSet{})
		a, four := addParty(t, e, "a", 1500, 2), addParty(t, e, "four", 1510, 4)
		c, d, f := addParty(t, e, "c", 1520, 3), addParty(t, e, "d", 1530, 3), addParty(t, e, "f", 1540, 2)
		pass, err := e.tickets.Pass(ctx, "squad", r, matchmaking.PassParams{Walk: 100, Sweep: 100, Grace: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if len(pass.Matches) != 1 {
			t.Fatalf("%d matches, want 1: %+v", len(pass.Matches), pass.Matches)
		}
		var got []string
		sizes := make([]int, 2)
		for _, mt := range pass.Matches[0].Tickets {
			got = append(got, mt.ID)
			sizes[mt.Team] += len(mt.Users)
		}
		if want := []string{a, c, d, f}; !reflect.DeepEqual(got, want) || sizes[0] != 5 || sizes[1] != 5 {
			t.Fatalf("match %+v (teams of %v), want %v in two teams of 5", pass.Matches[0].Tickets, sizes, want)
		}
		if n, _ := e.tickets.Searching(ctx, "squad"); n != 1 {
			t.Fatalf("%d searching, want the party of 4 %s", n, four)
		}
	})
}

// The search keeps every window (a reviewer's 3 v 3 case, each ticket
// having waited its own time): t4, t6 (3 players, ±50, new) and t3 make
// two teams of 3, but t3 is 107 above t4, past t6's window; so no match,
// in the pass script as in matchmaking.Group.
func TestPassSearchKeepsEveryWindow(t *testing.T) {
	r := matchmaking.Rules{Teams: 2, TeamSize: 3,
		Window: matchmaking.Window{Start: 50, Step: 50, Every: matchmaking.Duration(time.Second), Max: 300}}
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := context.Background()
		e := open(t, b, matchmaking.RuleSet{})
		now := time.Now()
		var entries []matchmaking.Entry
		for _, tk := range []struct {
			name   string
			rating float64
			size   int
			waited time.Duration
		}{{"t4", 1182, 2, 2 * time.Second}, {"t2", 1208, 2, 4 * time.Second}, {"t6", 1218, 3, 0}, {"t3", 1289, 1, 2 * time.Second}} {
			var party []string
			for k := 1; k < tk.size; k++ {
				party = append(party, fmt.Sprintf("%s-%d", tk.name, k))
			}
			t0 := matchmaking.Ticket{ID: e.tickets.NewID("squad", ""), Mode: "squad", Regions: []string{"eu"}, Rating: tk.rating,
				Attributes: map[string]any{}, UserID: tk.name, PartyUserIDs: party}
			users := append([]string{tk.name}, party...)
			if _, err := e.tickets.Add(ctx, t0, matchmaking.GroupKey{Rating: tk.rating, Size: tk.size, Regions: t0.Regions, Users: users}, time.Minute, 0, 1000); err != nil {
				t.Fatal(err)
			}
			created := now.Add(-tk.waited)
			if err := e.tickets.SetCreated(ctx, "squad", t0.ID, created.UnixMilli()); err != nil {
				t.Fatal(err)
			}
			entries = append(entries, matchmaking.Entry{ID: t0.ID, Rating: tk.rating, Size: tk.size, Created: created, Regions: t0.Regions})
		}
		if want := matchmaking.Group(r, entries, now); len(want) != 0 {
			t.Fatalf("the reference grouped %+v", want)
		}
		p, err := e.tickets.Pass(ctx, "squad", r, matchmaking.PassParams{Walk: 100, Sweep: 100, Grace: time.Minute, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Matches) != 0 {
			t.Fatalf("the pass matched %+v", p.Matches)
		}
	})
}

// Searches are shared fairly over the queue: the lowest tickets (parties
// of 4 and one solo in 5 v 5, ±100: no match, each try's search fruitless)
// spend a pass's whole budget, and the tester's parties above them
// (TestPassPartiesOf5v5: a match only the search finds) are matched all
// the same within a few passes, each pass going on from where the last
// one's budget ran out.
func TestPassSearchBudgetIsSharedFairly(t *testing.T) {
	r := matchmaking.Rules{Teams: 2, TeamSize: 5, Window: matchmaking.Window{Start: 100}}
	budget := matchmaking.PassBudget{Try: 8, Work: 60}
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := context.Background()
		e := open(t, b, matchmaking.RuleSet{})
		for k := range 12 {
			size := 4
			if k == 6 {
				size = 1
			}
			addParty(t, e, fmt.Sprintf("low%d", k), float64(1000+5*k), size)
		}
		addParty(t, e, "a", 1500, 2)
		addParty(t, e, "four", 1510, 4)
		addParty(t, e, "c", 1520, 3)
		addParty(t, e, "d", 1530, 3)
		addParty(t, e, "f", 1540, 2)
		from := ""
		for pass := range 20 {
			p, err := e.tickets.Pass(ctx, "squad", r, matchmaking.PassParams{Walk: 100, Sweep: 100, Grace: time.Minute,
				From: from, Budget: budget})
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Matches) > 0 {
				t.Logf("matched in pass %d", pass)
				return
			}
			from = p.Next
		}
		t.Fatal("the parties above the low tickets were not matched in 20 passes")
	})
}

// A pass cut within a window's width of its page's end goes on from where
// the next page starts (a window's width before the end), not from the
// cut: the tries before the cut there had their windows cut by the page's
// end. 2 v 2, pages of 3, a budget of 4 steps: the first pass tries the
// lone ticket at 0 and the party at 1950, whose walk ends with the page
// (the solo at 2000 is no match), and is cut at the solo; from the cut,
// the next pages would be [solo, party at 2040] and then the lowest
// again, the two parties never on one page; from 1900 they are matched.
func TestPassCutNearAPageEnd(t *testing.T) {
	r := matchmaking.Rules{Teams: 2, TeamSize: 2, Window: matchmaking.Window{Start: 100, Max: 100}} // as normalized
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := context.Background()
		e := open(t, b, matchmaking.RuleSet{})
		addParty(t, e, "lone", 0, 1)
		p1, solo, p2 := addParty(t, e, "p1", 1950, 2), addParty(t, e, "solo", 2000, 1), addParty(t, e, "p2", 2040, 2)
		params := matchmaking.PassParams{Walk: 3, Sweep: 100, Grace: time.Minute, Budget: matchmaking.PassBudget{Work: 4}}
		for pass := range 10 {
			p, err := e.tickets.Pass(ctx, "squad", r, params)
			if err != nil {
				t.Fatal(err)
			}
			if pass == 0 && p.Cut != solo {
				t.Fatalf("the first pass was cut at %q, want the solo %s: the test checks nothing", p.Cut, solo)
			}
			if len(p.Matches) > 0 {
				var got []string
				for _, mt := range p.Matches[0].Tickets {
					got = append(got, mt.ID)
				}
				if want := []string{p1, p2}; len(p.Matches) != 1 || !reflect.DeepEqual(got, want) {
					t.Fatalf("pass %d matched %+v, want the parties %v", pass, p.Matches, want)
				}
				return
			}
			params.From = p.Next
		}
		t.Fatal("the parties at 1950 and 2040 were not matched in 10 passes")
	})
}

// A full page of tickets of one rating (a page narrower than a window)
// goes on from its last ticket, not after its rating: ten lone tickets at
// 1500, each alone in its region, fill the first pages of 3, and the two
// duellists at 1500 whose ids sort after theirs were never walked (the
// next page began after 1500, found nothing and went back to the lowest).
func TestPassPagesThroughEqualRatings(t *testing.T) {
	r := matchmaking.Default() // ±100
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := context.Background()
		e := open(t, b, matchmaking.RuleSet{})
		ids := make([]string, 12)
		for k := range ids {
			ids[k] = e.tickets.NewID("duel", "")
		}
		sort.Strings(ids) // ties of a rating are in id order
		for k, id := range ids {
			reg, uid := fmt.Sprintf("r%d", k), fmt.Sprintf("lone%d", k)
			if k >= 10 {
				reg, uid = "eu", fmt.Sprintf("duel%d", k)
			}
			tk := matchmaking.Ticket{ID: id, Mode: "duel", Regions: []string{reg}, Rating: 1500,
				Attributes: map[string]any{}, UserID: uid, PartyUserIDs: []string{}}
			if _, err := e.tickets.Add(ctx, tk, matchmaking.GroupKey{Rating: 1500, Size: 1, Regions: tk.Regions, Users: []string{uid}}, time.Minute, 0, 1000); err != nil {
				t.Fatal(err)
			}
		}
		from := ""
		for pass := range 20 {
			p, err := e.tickets.Pass(ctx, "duel", r, matchmaking.PassParams{Walk: 3, Sweep: 100, Grace: time.Minute, From: from})
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Matches) > 0 {
				if m := p.Matches[0]; len(p.Matches) != 1 || len(m.Tickets) != 2 || m.Tickets[0].ID != ids[10] || m.Tickets[1].ID != ids[11] {
					t.Fatalf("pass %d matched %+v, want the duellists %s and %s", pass, p.Matches, ids[10], ids[11])
				}
				return
			}
			from = p.Next
		}
		t.Fatal("the duellists at 1500 were not matched in 20 passes")
	})
}
