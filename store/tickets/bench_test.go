package tickets_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/realsync/realsync/internal/race"
	"github.com/realsync/realsync/internal/redisinfo"
	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/internal/storetest"
	"github.com/realsync/realsync/matchmaking"
	"github.com/realsync/realsync/store"
	"github.com/realsync/realsync/store/tickets"
)

// BenchmarkPass is one pass over a queue of 2 000 duel tickets (ratings
// spread over 1000..2000, windows ±100), of 2 000 tickets of 2 v 2 with a
// fifth of them parties of 2, and of 2 000 tickets of 5 v 5: parties of 1
// to 5 (a mix that mostly matches), parties of 2 and 4 alone (no match
// can be made of them: every try falls short, and its search ends at once,
// no party adding up to a team's free seats), and parties of 4 with a solo
// every 200th ticket (a match only where two solos are within a window:
// the worst case: every try walks its whole window, about 200 tickets,
// and searches, finding nothing): the Redis time of the pass script (INFO
// commandstats, on a redis-server of its own, so other tests do not count),
// the Redis CPU of the pass (INFO cpu, user and system: what a loaded
// machine's other processes stretch less than the script's time), the
// tickets it matched, the passes cut by the budget (PassBudget.Work:
// the default's but where a case says) and the tickets it matched per
// second of that time. A case walks its whole queue as one page, or a
// page of 1 000 (the matcher's); "unbounded" is a budget no pass spends
// (the work of a whole page, as before the bound). With -short or the
// race detector (CI runs every benchmark once, to keep it working) each
// queue and room count is a tenth.
//
//	go test -run '^$' -bench BenchmarkPass -benchtime 10x ./store/tickets/
func BenchmarkPass(b *testing.B) {
	teams := func(n int) matchmaking.Rules {
		return matchmaking.Rules{Teams: 2, TeamSize: n, Window: matchmaking.Window{Start: 100}}
	}
	fours := func(i int) int {
		if i%200 == 0 {
			return 1
		}
		return 4
	}
	// 64 players in one team, windows of ±1: no try fills (a few steps
	// each)
	ffa := matchmaking.Rules{Teams: 1, MinPlayers: 64, MaxPlayers: 64, Window: matchmaking.Window{Start: 1}, Backfill: true}
	threes := func(i int) int {
		if i%200 == 0 {
			return 1
		}
		return 3
	}
	for _, tc := range []struct {
		queued int
		name   string
		r      matchmaking.Rules
		size   func(i int) int // the i-th ticket's players
		budget matchmaking.PassBudget
		// regions each ticket lists (all open at once: a try each); rooms
		// open to backfill, none of which any ticket fits (another eq key)
		regions, rooms int
	}{
		{500, "", matchmaking.Default(), nil, matchmaking.PassBudget{}, 0, 0},
		{2000, "", matchmaking.Default(), nil, matchmaking.PassBudget{}, 0, 0},
		{2000, "2v2-parties", teams(2), func(i int) int { return 2 - min(i%5, 1) }, matchmaking.PassBudget{}, 0, 0},
		{2000, "5v5-parties", teams(5), func(i int) int { return 1 + i%5 }, matchmaking.PassBudget{}, 0, 0},
		{2000, "5v5-even", teams(5), func(i int) int { return 2 + 2*(i%2) }, matchmaking.PassBudget{}, 0, 0},
		{2000, "5v5-fours", teams(5), fours, matchmaking.PassBudget{}, 0, 0},
		// the matcher's page of 1 000: duels, all matched (the most writes),
		// and the two worst queues
		{2000, "page=1000", matchmaking.Default(), nil, matchmaking.PassBudget{}, 0, 0},
		{2000, "5v5-even,page=1000", teams(5), func(i int) int { return 2 + 2*(i%2) }, matchmaking.PassBudget{}, 0, 0},
		{2000, "5v5-fours,page=1000", teams(5), fours, matchmaking.PassBudget{}, 0, 0},
		// a pass that tries one anchor: the page's reading, the pass's
		// fixed cost
		{2000, "5v5-even,page=1000,work=1", teams(5), func(i int) int { return 2 + 2*(i%2) }, matchmaking.PassBudget{Work: 1}, 0, 0},
		// the same with a search of one node: the walk's share
		{2000, "5v5-fours,search=1", teams(5), fours, matchmaking.PassBudget{Try: 1}, 0, 0},
		// and with no bound: the whole page's work
		{2000, "5v5-even,unbounded", teams(5), func(i int) int { return 2 + 2*(i%2) }, matchmaking.PassBudget{Work: 1 << 30}, 0, 0},
		{2000, "5v5-fours,unbounded", teams(5), fours, matchmaking.PassBudget{Work: 1 << 30}, 0, 0},
		// 150 tickets within one window (spread over 1000..1100), parties of 4
		// and one solo: a short walk, searches of 500 nodes each, fruitless;
		// then a search of one node
		{150, "5v5-fours,one-window", teams(5), fours, matchmaking.PassBudget{}, 0, 0},
		{150, "5v5-fours,one-window,search=1", teams(5), fours, matchmaking.PassBudget{Try: 1}, 0, 0},
		// the shapes whose cost a step does not measure: 16 teams of 4,
		// parties of 3 with a solo every 200th (each search node weighs
		// every team); 5v5 fours in 8 regions (an anchor's 8 tries run
		// whole once begun); a backfill mode's 1 000 open rooms that take
		// no ticket of the page (the backfill is outside the budget)
		{2000, "16x4-threes,page=1000", matchmaking.Rules{Teams: 16, TeamSize: 4, Window: matchmaking.Window{Start: 100}},
			threes, matchmaking.PassBudget{}, 0, 0},
		{2000, "5v5-fours,page=1000,regions=8", teams(5), fours, matchmaking.PassBudget{}, 8, 0},
		{2000, "32v32-threes,page=1000", teams(32), threes, matchmaking.PassBudget{}, 0, 0},
		{2000, "32v32-threes,page=1000,search=1", teams(32), threes, matchmaking.PassBudget{Try: 1}, 0, 0},
		{2000, "ffa-backfill,page=1000,rooms=0", ffa, nil, matchmaking.PassBudget{}, 0, 0},
		{2000, "ffa-backfill,page=1000,rooms=1000", ffa, nil, matchmaking.PassBudget{}, 0, 1000},
		{2000, "ffa-backfill,page=1000,rooms=5000", ffa, nil, matchmaking.PassBudget{}, 0, 5000},
	} {
		queued, r, spread, walk := tc.queued, tc.r, 1000.0, tc.queued
		if strings.Contains(tc.name, "one-window") {
			spread = 100
		}
		if strings.Contains(tc.name, "page=1000") {
			walk = 1000
		}
		if race.Smoke() { // the case's name says the sizes it runs
			queued, walk, tc.rooms = queued/10, walk/10, tc.rooms/10
			tc.name = strings.NewReplacer("page=1000", "page=100", "rooms=1000", "rooms=100", "rooms=5000", "rooms=500").Replace(tc.name)
		}
		name := fmt.Sprintf("queued=%d", queued)
		if tc.name != "" {
			name += "," + tc.name
		}
		b.Run(name, func(b *testing.B) {
			srv, err := redistest.StartServer()
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(srv.Stop)
			ctx := context.Background()
			// a pass of a worst case may take seconds: wait for it
			s := storetest.Open(b, store.Config{RedisURL: "redis://" + srv.Addr, Prefix: redistest.Prefix(b), Shards: 8,
				ReadTimeout: time.Minute})
			e := env{rooms: s, tickets: tickets.New(s.Base(), s.UserLogs(), s.Renewals())}
			rng := rand.New(rand.NewPCG(1, 2))
			var usec, matched, cut int64
			var cpu float64
			for b.Loop() {
				b.StopTimer()
				for i := range queued {
					uid := fmt.Sprintf("u%d-%d", b.N, i)
					party := []string{}
					if tc.size != nil {
						for k := 1; k < tc.size(i); k++ {
							party = append(party, fmt.Sprintf("%s-mate%d", uid, k))
						}
					}
					regions := []string{"eu"}
					for k := 1; k < tc.regions; k++ {
						regions = append(regions, fmt.Sprintf("r%d", k))
					}
					t := matchmaking.Ticket{ID: e.tickets.NewID("duel", ""), Mode: "duel", Regions: regions,
						Rating: 1000 + rng.Float64()*spread, Attributes: map[string]any{}, UserID: uid, PartyUserIDs: party}
					g := matchmaking.GroupKey{Rating: t.Rating, Size: 1 + len(party), Regions: t.Regions, Users: append([]string{uid}, party...)}
					if _, err := e.tickets.Add(ctx, t, g, time.Minute, 0, 1_000_000); err != nil {
						b.Fatal(err)
					}
				}
				for k := range tc.rooms {
					room := `{"region":"eu","rating":1500,"eq":"other","free":8}`
					if err := e.rooms.Client().HSet(ctx, e.tickets.BackfillKey("duel"), fmt.Sprintf("room%04d", k), room).Err(); err != nil {
						b.Fatal(err)
					}
				}
				before, cpu0 := evalsha(b, e), redisCPU(b, e)
				b.StartTimer()
				p, err := e.tickets.Pass(ctx, "duel", r, matchmaking.PassParams{Walk: walk, Sweep: 1000, Grace: time.Minute, Budget: tc.budget})
				b.StopTimer()
				if err != nil {
					b.Fatal(err)
				}
				cpu += redisCPU(b, e) - cpu0
				usec += evalsha(b, e).Sub(before).Usec
				for _, m := range p.Matches {
					matched += int64(len(m.Tickets))
				}
				if p.Cut != "" {
					cut++
				}
				// empty the queue for the next round
				e.rooms.Client().FlushAll(ctx)
				b.StartTimer()
			}
			b.ReportMetric(float64(usec)/float64(b.N), "redis-µs/pass")
			b.ReportMetric(cpu*1e6/float64(b.N), "redis-cpu-µs/pass")
			b.ReportMetric(float64(matched)/float64(b.N), "matched/pass")
			b.ReportMetric(float64(cut)/float64(b.N), "cut/pass")
			b.ReportMetric(float64(matched)/(float64(usec)/1e6), "matched/redis-s")
		})
	}
}

func evalsha(b *testing.B, e env) redisinfo.Stat {
	b.Helper()
	info, err := e.rooms.Client().Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	return redisinfo.Commandstats(info)["evalsha"]
}

// BenchmarkRound is one matcher round over 1 000 queued duel tickets (100
// with -short or the race detector) with
// every pair within its windows: the pass, then each match's room (create,
// seats held), match_found for each user and the room on the tickets. It
// reports tickets matched per second of wall time, and of Redis CPU
// (INFO cpu, a redis-server of its own).
//
//	go test -run '^$' -bench BenchmarkRound -benchtime 3x ./store/tickets/
func BenchmarkRound(b *testing.B) {
	srv, err := redistest.StartServer()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(srv.Stop)
	e := open(b, redistest.Backend{Name: "fresh", URL: "redis://" + srv.Addr}, matchmaking.RuleSet{})
	ctx := context.Background()
	m := matchmaking.NewMatcher(matchmaking.MatcherConfig{Config: e.cfg, Rooms: e.rooms, Notifier: e.tickets, Holder: "bench"})
	queued := 1000
	if race.Smoke() {
		queued = 100
	}
	var wall time.Duration
	var cpu float64
	matched := 0
	round := 0
	for b.Loop() {
		b.StopTimer()
		round++
		for i := range queued {
			uid := fmt.Sprintf("u%d-%d", round, i)
			rating := float64(1000 + i) // neighbours pair up
			if _, err := e.svc.Create(ctx, player(uid), matchmaking.TicketParams{Mode: "duel", Regions: []string{"eu"}, Rating: &rating}); err != nil {
				b.Fatal(err)
			}
		}
		c0 := redisCPU(b, e)
		t0 := time.Now()
		b.StartTimer()
		m.Round(ctx)
		b.StopTimer()
		wall += time.Since(t0)
		cpu += redisCPU(b, e) - c0
		n, _ := e.tickets.Searching(ctx, "duel")
		matched += queued - n
		b.StartTimer()
	}
	b.ReportMetric(float64(matched)/wall.Seconds(), "matched/s")
	b.ReportMetric(float64(matched)/cpu, "matched/redis-cpu-s")
}

func redisCPU(b *testing.B, e env) float64 {
	b.Helper()
	info, err := e.rooms.Client().Info(context.Background(), "cpu").Result()
	if err != nil {
		b.Fatal(err)
	}
	v, _ := redisinfo.CPU(info)
	return v
}
