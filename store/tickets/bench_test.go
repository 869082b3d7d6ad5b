package tickets_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/realsync/realsync/internal/redisinfo"
	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/matchmaking"
)

// BenchmarkPass is one pass over a queue of 2 000 duel tickets (ratings
// spread over 1000..2000, windows ±100), and of 2 000 tickets of 2 v 2
// with a fifth of them parties of 2: the Redis time of the pass script
// (INFO commandstats, on a redis-server of its own, so other tests do not
// count) and the tickets it matched per second of that time.
//
//	go test -run '^$' -bench BenchmarkPass -benchtime 10x ./store/tickets/
func BenchmarkPass(b *testing.B) {
	for _, tc := range []struct {
		queued  int
		parties bool // 2 v 2, a fifth of the tickets parties of 2 (else duels)
	}{{500, false}, {2000, false}, {2000, true}} {
		queued := tc.queued
		name := fmt.Sprintf("queued=%d", queued)
		r := matchmaking.Default()
		if tc.parties {
			name += ",2v2-parties"
			r = matchmaking.Rules{Teams: 2, TeamSize: 2, Window: matchmaking.Window{Start: 100}}
		}
		b.Run(name, func(b *testing.B) {
			srv, err := redistest.StartServer()
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(srv.Stop)
			e := open(b, redistest.Backend{Name: "fresh", URL: "redis://" + srv.Addr}, matchmaking.RuleSet{})
			ctx := context.Background()
			rng := rand.New(rand.NewPCG(1, 2))
			var usec, matched int64
			for b.Loop() {
				b.StopTimer()
				for i := range queued {
					uid := fmt.Sprintf("u%d-%d", b.N, i)
					party := []string{}
					if tc.parties && i%5 == 0 {
						party = []string{uid + "-mate"}
					}
					t := matchmaking.Ticket{ID: e.tickets.NewID("duel"), Mode: "duel", Regions: []string{"eu"},
						Rating: 1000 + rng.Float64()*1000, Attributes: map[string]any{}, UserID: uid, PartyUserIDs: party}
					g := matchmaking.GroupKey{Rating: t.Rating, Size: 1 + len(party), Regions: t.Regions, Users: append([]string{uid}, party...)}
					if _, err := e.tickets.Add(ctx, t, g, time.Minute, 1_000_000); err != nil {
						b.Fatal(err)
					}
				}
				before := evalsha(b, e)
				b.StartTimer()
				p, err := e.tickets.Pass(ctx, "duel", r, matchmaking.PassParams{Walk: queued, Sweep: 1000, Grace: time.Minute})
				b.StopTimer()
				if err != nil {
					b.Fatal(err)
				}
				usec += evalsha(b, e).Sub(before).Usec
				for _, m := range p.Matches {
					matched += int64(len(m.Tickets))
				}
				// empty the queue for the next round
				e.rooms.Client().FlushAll(ctx)
				b.StartTimer()
			}
			b.ReportMetric(float64(usec)/float64(b.N), "redis-µs/pass")
			b.ReportMetric(float64(matched)/float64(b.N), "matched/pass")
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

// BenchmarkRound is one matcher round over 1 000 queued duel tickets with
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
	const queued = 1000
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
