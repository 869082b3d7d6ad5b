package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The match scenario queues -tickets matchmaking tickets over -modes modes
// and -regions regions (ratings drawn from N(1500, 300), a share of them
// parties of 2: -party percent; a party's member, a guest of its own,
// joins its leader's party, or follows them, before the leader's create
// with -party-consent, or once the server refused the create for want of
// it, REALSYNC_PARTY_CONSENT party or follow), as fast as -clients
// workers create them or at -ticket-rate per second, waits until the
// matchers emptied the queues or the rest stopped moving (the instances'
// realsync_matchmaking_tickets, bounded by -duration), then reads every
// ticket (those still searching again, until a read changes nothing: a
// match made during the read is seen whole) and reports, from the
// server's own timestamps: tickets matched per second, time to match
// p50/p90/p99 by rating band, the rating spread of matches, and whether
// every team came out whole (its size, a party in one team; up to 5
// matches with a team that did not are shown). The server must run with
// REALSYNC_RATE_LIMITS=off and the modes' rules (scripts/bench.sh writes
// them: 2 teams of 2).
//
//	go run ./cmd/rsload -scenario match -tickets 100000 -modes 4 -regions 2 -party 20 -duration 10m

// matchTicket is one ticket of the run.
type matchTicket struct {
	id, token string
	userID    string // the leader's
	rating    float64
	users     int
	mode      string
	// read back
	status, matchID string
	team            int
	created         time.Time
	matched         time.Time
}

// MatchReport is the scenario's result.
type MatchReport struct {
	Tickets, Users, Parties             int
	CreateSeconds                       float64
	CreatedPerSecond                    float64
	Matched, Expired, Searching, Errors int
	// ConsentRefused: creates refused 403 PARTY_CONSENT_REQUIRED, sent
	// again once the member consented
	ConsentRefused   int
	MatchSpanSeconds float64 // first match to last
	MatchedPerSecond float64 // tickets matched / span
	// Bulk99Seconds: first ticket created to the match of the 99th
	// percentile matched ticket; Bulk99PerSecond: 99% of the matched
	// tickets over it. PeakPerSecond: the busiest second's matched tickets.
	Bulk99Seconds, Bulk99PerSecond float64
	PeakPerSecond                  int
	Matches                        int
	// Time to match (s), overall and by rating band (|rating-1500|).
	Wait      Percentiles
	WaitBands map[string]Percentiles
	// Rating spread (max-min) within a match.
	Spread Percentiles
	// TeamsWrongSize counts teams whose users (a party's all in its
	// ticket's team) are not the rules' team size.
	TeamsWrongSize int
	// WrongTeams shows up to 5 matches with such a team: the match id,
	// then each ticket's id, team and users.
	WrongTeams []string
	teamSize   int
	// ErrorCodes counts failed requests by step and answer ("create
	// 503 STORE_UNAVAILABLE").
	ErrorCodes map[string]int
}

// Percentiles are p50/p90/p99/max of a sample, and its size.
type Percentiles struct {
	N                  int
	P50, P90, P99, Max float64
}

func percentiles(xs []float64) Percentiles {
	if len(xs) == 0 {
		return Percentiles{}
	}
	slices.Sort(xs)
	at := func(q float64) float64 { // nearest rank
		return xs[max(0, min(len(xs)-1, int(math.Ceil(q*float64(len(xs))))-1))]
	}
	return Percentiles{N: len(xs), P50: at(0.50), P90: at(0.90), P99: at(0.99), Max: xs[len(xs)-1]}
}

func runMatch(ctx context.Context, c Config) (MatchReport, error) {
	var rep MatchReport
	rng := rand.New(rand.NewPCG(1, 2))
	ts := make([]*matchTicket, c.Tickets)
	for i := range ts {
		r := math.Round(math.Max(0, math.Min(3000, 1500+300*rng.NormFloat64())))
		users := 1
		if rng.IntN(100) < c.Party {
			users = 2
		}
		ts[i] = &matchTicket{rating: r, users: users, mode: fmt.Sprintf("mm%d", i%c.Modes)}
		rep.Users += users
		if users == 2 {
			rep.Parties++
		}
	}
	rep.Tickets = len(ts)
	// tokens first: the creation rate below is the tickets' own
	if err := parallel(ctx, c.Clients, len(ts), func(i int) error {
		base := c.URLs[i%len(c.URLs)]
		g, err := guestAccount(ctx, base, "q"+strconv.Itoa(i))
		ts[i].token, ts[i].userID = g.Token, g.UserID
		return err
	}); err != nil {
		return rep, fmt.Errorf("guest tokens: %w", err)
	}
	var mu sync.Mutex
	codes := map[string]int{}
	fail := func(step string, err error) {
		mu.Lock()
		defer mu.Unlock()
		if e, ok := err.(*httpError); ok {
			codes[fmt.Sprintf("%s %d %s", step, e.status, e.code)]++
		} else {
			codes[step+" "+err.Error()]++
		}
	}
	began := time.Now()
	var failed, refused atomic.Int64
	parallel(ctx, c.Clients, len(ts), func(i int) error {
		if c.TicketRate > 0 { // paced: ticket i leaves at i/rate
			time.Sleep(time.Until(began.Add(time.Duration(i) * time.Second / time.Duration(c.TicketRate))))
		}
		t := ts[i]
		base := c.URLs[i%len(c.URLs)]
		body := map[string]any{"mode": t.mode, "regions": []string{fmt.Sprintf("r%d", (i/c.Modes)%c.Regions)}, "rating": t.rating}
		var member account
		if t.users == 2 {
			var err error
			if member, err = guestAccount(ctx, base, "p"+strconv.Itoa(i)); err != nil {
				failed.Add(1)
				fail("party guest", err)
				return nil
			}
			body["partyUserIds"] = []string{member.UserID}
		}
		consent := func(how string) error {
			if how == "follow" {
				return call(ctx, "PUT", base+"/v1/me/following", member.Token, map[string]any{"userIds": []string{t.userID}}, nil)
			}
			return call(ctx, "PUT", base+"/v1/me/party", member.Token, map[string]any{"leaderUserId": t.userID}, nil)
		}
		if t.users == 2 && c.PartyConsent != "" {
			if err := consent(c.PartyConsent); err != nil {
				failed.Add(1)
				fail("party consent", err)
				return nil
			}
		}
		var out struct{ Ticket struct{ TicketID string } }
		err := call(ctx, "POST", base+"/v1/matchmaking/tickets", t.token, body, &out)
		if e, ok := err.(*httpError); ok && e.code == "PARTY_CONSENT_REQUIRED" {
			// a server that asks a party's consent (REALSYNC_PARTY_CONSENT
			// party or follow) the member did not give: the member joins
			// the leader's party, or follows them when the refusal says
			// so, and the create goes again
			refused.Add(1)
			how := "party"
			if strings.Contains(e.detail, "/v1/me/following") {
				how = "follow"
			}
			if cerr := consent(how); cerr != nil {
				failed.Add(1)
				fail("party consent", cerr)
				return nil
			}
			err = call(ctx, "POST", base+"/v1/matchmaking/tickets", t.token, body, &out)
		}
		if err != nil {
			failed.Add(1)
			fail("create", err)
			return nil
		}
		t.id = out.Ticket.TicketID
		return nil
	})
	rep.CreateSeconds = time.Since(began).Seconds()
	rep.CreatedPerSecond = float64(len(ts)-int(failed.Load())) / rep.CreateSeconds
	rep.Errors = int(failed.Load())
	rep.ConsentRefused = int(refused.Load())

	// wait for the queues to empty, or to settle: the same number searching
	// for 15 s once the windows reached their widest (the rest cannot form
	// a match and waits for its TTL); at most -duration
	deadline, last, since := time.Now().Add(c.Duration), -1.0, time.Now()
	for time.Now().Before(deadline) {
		n, err := searching(ctx, c.URLs)
		if err == nil && n == 0 {
			break
		}
		if n != last {
			last, since = n, time.Now()
		} else if time.Since(began) > 60*time.Second && time.Since(since) > 15*time.Second {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	readBack(ctx, c, ts, fail)
	rep = rep.analyse(ts, c.TeamSize)
	rep.ErrorCodes = codes
	return rep, nil
}

// readBack reads every ticket of ts back, then those still searching
// again until a read of them changes nothing (at most 20 reads): a match
// the matcher made while they were read (a straggler's window widened)
// would otherwise show its tickets read before it as searching and the
// others as matched, a team short. A ticket whose first read failed is
// status "error"; a failed read again keeps the status read before.
func readBack(ctx context.Context, c Config, ts []*matchTicket, fail func(step string, err error)) {
	read := func(i int) error {
		t := ts[i]
		var out struct {
			Ticket struct {
				Status, MatchID string
				Team            int
				CreatedAt       time.Time
				MatchedAt       time.Time
			}
		}
		if err := call(ctx, "GET", c.URLs[i%len(c.URLs)]+"/v1/matchmaking/tickets/"+t.id, t.token, nil, &out); err != nil {
			if t.status == "" { // a read again keeps what the last said
				t.status = "error"
			}
			fail("read", err)
			return nil
		}
		t.status, t.matchID, t.team = out.Ticket.Status, out.Ticket.MatchID, out.Ticket.Team
		t.created, t.matched = out.Ticket.CreatedAt, out.Ticket.MatchedAt
		return nil
	}
	var todo []int
	for i, t := range ts {
		if t.id != "" {
			todo = append(todo, i)
		}
	}
	for round := 0; len(todo) > 0 && round < 20; round++ {
		before := make([]string, len(todo))
		for k, i := range todo {
			before[k] = ts[i].status
		}
		parallel(ctx, c.Clients, len(todo), func(k int) error { return read(todo[k]) })
		changed := false
		var searching []int
		for k, i := range todo {
			changed = changed || ts[i].status != before[k]
			if ts[i].status == "searching" {
				searching = append(searching, i)
			}
		}
		if !changed && round > 0 {
			return
		}
		todo = searching
	}
}

// analyse fills the report from the tickets read back.
func (rep MatchReport) analyse(ts []*matchTicket, teamSize int) MatchReport {
	var waits []float64
	bands := map[string][]float64{}
	var first, last, created time.Time
	var at []time.Time
	perSecond := map[int64]int{}
	matches := map[string][]*matchTicket{}
	for _, t := range ts {
		switch t.status {
		case "matched":
			rep.Matched++
		case "expired":
			rep.Expired++
		case "searching":
			rep.Searching++
		case "error":
			rep.Errors++
		}
		if t.status != "matched" {
			continue
		}
		w := t.matched.Sub(t.created).Seconds()
		waits = append(waits, w)
		d := math.Abs(t.rating - 1500)
		band := "|r-1500| < 300"
		switch {
		case d >= 600:
			band = "|r-1500| >= 600"
		case d >= 300:
			band = "300 <= |r-1500| < 600"
		}
		bands[band] = append(bands[band], w)
		at = append(at, t.matched)
		perSecond[t.matched.Unix()]++
		if created.IsZero() || t.created.Before(created) {
			created = t.created
		}
		if first.IsZero() || t.matched.Before(first) {
			first = t.matched
		}
		if t.matched.After(last) {
			last = t.matched
		}
		matches[t.matchID] = append(matches[t.matchID], t)
	}
	rep.Wait = percentiles(waits)
	rep.WaitBands = map[string]Percentiles{}
	for b, xs := range bands {
		rep.WaitBands[b] = percentiles(xs)
	}
	rep.MatchSpanSeconds = last.Sub(first).Seconds()
	if rep.MatchSpanSeconds > 0 {
		rep.MatchedPerSecond = float64(rep.Matched) / rep.MatchSpanSeconds
	}
	rep.Matches = len(matches)
	if len(at) > 0 {
		slices.SortFunc(at, func(a, b time.Time) int { return a.Compare(b) })
		n99 := max(1, len(at)*99/100)
		rep.Bulk99Seconds = at[n99-1].Sub(created).Seconds()
		if rep.Bulk99Seconds > 0 {
			rep.Bulk99PerSecond = float64(n99) / rep.Bulk99Seconds
		}
		for _, n := range perSecond {
			rep.PeakPerSecond = max(rep.PeakPerSecond, n)
		}
	}
	var spreads []float64
	for _, m := range matches {
		lo, hi := math.Inf(1), math.Inf(-1)
		teams := map[int]int{}
		for _, t := range m {
			lo, hi = math.Min(lo, t.rating), math.Max(hi, t.rating)
			teams[t.team] += t.users // a ticket is in one team: its party whole
		}
		spreads = append(spreads, hi-lo)
		wrong := false
		for _, n := range teams {
			if n != teamSize {
				rep.TeamsWrongSize++
				wrong = true
			}
		}
		if wrong && len(rep.WrongTeams) < 5 {
			d := m[0].matchID + ":"
			for _, t := range m {
				d += fmt.Sprintf(" %s team %d users %d;", t.id, t.team, t.users)
			}
			rep.WrongTeams = append(rep.WrongTeams, d)
		}
	}
	rep.Spread = percentiles(spreads)
	rep.teamSize = teamSize
	return rep
}

// searching sums realsync_matchmaking_tickets over the instances.
func searching(ctx context.Context, urls []string) (float64, error) {
	var sum float64
	for _, u := range urls {
		req, _ := http.NewRequestWithContext(ctx, "GET", u+"/metrics", nil)
		res, err := client.Do(req)
		if err != nil {
			return 0, err
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "realsync_matchmaking_tickets{") {
				f := strings.Fields(line)
				v, _ := strconv.ParseFloat(f[len(f)-1], 64)
				sum += v
			}
		}
	}
	return sum, nil
}

// parallel runs f(0..n-1) on workers goroutines; the first error stops
// the handing out and is returned.
func parallel(ctx context.Context, workers, n int, f func(i int) error) error {
	var next atomic.Int64
	var once sync.Once
	var first error
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				if err := f(i); err != nil {
					once.Do(func() { first = err })
					next.Store(int64(n))
					return
				}
			}
		}()
	}
	wg.Wait()
	if first == nil {
		first = ctx.Err()
	}
	return first
}

func (rep MatchReport) print(w io.Writer) {
	fmt.Fprintf(w, "tickets %d (users %d, parties of 2: %d), created in %.1f s: %.0f tickets/s, %d errors\n",
		rep.Tickets, rep.Users, rep.Parties, rep.CreateSeconds, rep.CreatedPerSecond, rep.Errors)
	if rep.ConsentRefused > 0 {
		fmt.Fprintf(w, "%d creates refused for a party member's consent, sent again once given\n", rep.ConsentRefused)
	}
	fmt.Fprintf(w, "matched %d, expired %d, still searching %d; %d matches\n", rep.Matched, rep.Expired, rep.Searching, rep.Matches)
	fmt.Fprintf(w, "matching: 99%% of the matched tickets in %.1f s from the first ticket: %.0f tickets matched/s; busiest second %d; all: %.0f/s over %.1f s (first match to last)\n",
		rep.Bulk99Seconds, rep.Bulk99PerSecond, rep.PeakPerSecond, rep.MatchedPerSecond, rep.MatchSpanSeconds)
	pr := func(name string, p Percentiles, unit string) {
		fmt.Fprintf(w, "%-24s n=%-7d p50 %.2f%s  p90 %.2f%s  p99 %.2f%s  max %.2f%s\n", name, p.N, p.P50, unit, p.P90, unit, p.P99, unit, p.Max, unit)
	}
	pr("time to match", rep.Wait, " s")
	bands := make([]string, 0, len(rep.WaitBands))
	for b := range rep.WaitBands {
		bands = append(bands, b)
	}
	sort.Strings(bands)
	for _, b := range bands {
		pr("  "+b, rep.WaitBands[b], " s")
	}
	pr("rating spread per match", rep.Spread, "")
	for k, n := range rep.ErrorCodes {
		fmt.Fprintf(w, "errors: %s: %d\n", k, n)
	}
	fmt.Fprintf(w, "teams not of the rules' size %d: %d (a party's users count in its ticket's team)\n", rep.teamSize, rep.TeamsWrongSize)
	for _, d := range rep.WrongTeams {
		fmt.Fprintf(w, "  a match with such a team: %s\n", d)
	}
}
