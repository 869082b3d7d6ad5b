package store_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/realsync/realsync/internal/race"
	"github.com/realsync/realsync/sse"
	"github.com/realsync/realsync/store"
)

// BenchmarkSessionRenewalRound measures one instance's renewal round of
// 1 000 personal stream sessions (1 000 users over 16 shards, one session
// each), as the hub runs it (256 sessions a call, one session_renew per
// user shard in one pipeline), with the per-user stream cap off and on:
// Redis' own time per round (INFO commandstats) and the round's wall time.
// 100 sessions with -short or the race detector. Run:
//
//	go test ./store -run '^$' -bench SessionRenewalRound -benchtime 200x
func BenchmarkSessionRenewalRound(b *testing.B) {
	sessions := 1000
	if race.Smoke() {
		sessions = 100
	}
	for _, cap := range []int{0, 16} {
		b.Run(fmt.Sprintf("cap=%d", cap), func(b *testing.B) {
			s, _ := freshStore(b, func(c *store.Config) {
				c.Shards, c.PresenceTTL, c.Quotas = 16, time.Minute, store.Quotas{StreamsPerUser: cap}
			})
			ctx := context.Background()
			var ss []sse.Session
			for i := range sessions {
				x := sse.Session{UserID: fmt.Sprint("user-", i), Platform: "pc", ID: fmt.Sprint("bench.", i)}
				if _, err := s.Sessions().OpenSession(ctx, x, sse.Cursor{}, 0); err != nil {
					b.Fatal(err)
				}
				ss = append(ss, x)
			}
			if err := s.Client().ConfigResetStat(ctx).Err(); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for range b.N {
				for chunk := range slices.Chunk(ss, 256) {
					if lost, err := s.Sessions().RenewSessions(ctx, chunk); err != nil || len(lost) > 0 {
						b.Fatalf("lost %d, err %v", len(lost), err)
					}
				}
			}
			b.StopTimer()
			b.ReportMetric(scriptTotalMicros(b, s.Client())/float64(b.N), "redis-µs/round")
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "wall-µs/round")
		})
	}
}

// BenchmarkDeadInstanceSweep measures how the janitor takes a dead
// instance's 10 000 personal stream sessions (10 000 users over 16 shards,
// one session each, their leases lapsed) offline, with webhooks on: the
// janitor passes needed (every shard's visit once a pass, lease 1 s, as
// realsyncd runs it with a TTL of 3 s or more), the visits' wall time
// (the passes' own time, not the interval between them), and Redis' own
// time in the scripts: per call on average and the longest call (SLOWLOG,
// every command logged). 1 000 sessions with -short or the race detector.
// Run:
//
//	go test ./store -run '^$' -bench DeadInstanceSweep -benchtime 1x
func BenchmarkDeadInstanceSweep(b *testing.B) {
	const ttl = time.Second
	sessions := 10000
	if race.Smoke() {
		sessions = 1000
	}
	hooks := 100000
	if os.Getenv("HOOKS") == "off" {
		hooks = 0
	}
	for range b.N {
		b.StopTimer()
		s, _ := freshStore(b, func(c *store.Config) {
			c.Shards, c.PresenceTTL, c.WebhookOutboxLen = 16, ttl, hooks
			// SLOWLOG GET of every command logged is a large reply: on a
			// loaded machine (CI's lanes) it outlasted the 2 s default
			c.ReadTimeout = 30 * time.Second
		})
		ctx := context.Background()
		openSessions(b, s, "user", sessions)
		time.Sleep(ttl + 100*time.Millisecond)
		c := s.Client()
		for _, kv := range [][2]string{{"slowlog-log-slower-than", "0"}, {"slowlog-max-len", "1000000"}} {
			if err := c.ConfigSet(ctx, kv[0], kv[1]).Err(); err != nil {
				b.Fatal(err)
			}
		}
		if err := c.Do(ctx, "SLOWLOG", "RESET").Err(); err != nil {
			b.Fatal(err)
		}
		if err := c.ConfigResetStat(ctx).Err(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		passes, took := 0, time.Duration(0)
		for n := int64(sessions); n > 0; passes++ {
			if passes == 100 {
				b.Fatalf("%d users online after 100 passes", n)
			}
			start := time.Now()
			for shard := range 16 {
				if _, err := s.Sweep(ctx, shard, fmt.Sprint("pass-", passes), time.Second); err != nil {
					b.Fatal(err)
				}
			}
			took += time.Since(start)
			for shard := range 16 { // the next pass need not wait for the leases
				c.Del(ctx, s.Base().Tag(shard)+":janitor")
			}
			var err error
			if n, err = s.Sessions().OnlineUsers(ctx); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		longest, calls := time.Duration(0), 0
		entries, err := c.SlowLogGet(ctx, -1).Result()
		if err != nil {
			b.Fatal(err)
		}
		for _, e := range entries {
			if len(e.Args) > 0 && (e.Args[0] == "evalsha" || e.Args[0] == "eval") {
				calls++
				longest = max(longest, e.Duration)
			}
		}
		b.ReportMetric(float64(passes), "passes")
		b.ReportMetric(float64(took.Milliseconds()), "wall-ms")
		b.ReportMetric(scriptTotalMicros(b, c)/float64(max(calls, 1)), "redis-µs/call")
		b.ReportMetric(float64(longest.Microseconds()), "longest-call-µs")
		b.ReportMetric(float64(calls), "script-calls")
		b.ReportMetric(scriptTotalMicros(b, c)/float64(sessions), "redis-µs/user")
		c.ConfigSet(ctx, "slowlog-log-slower-than", "10000")
		b.StartTimer()
	}
}

// BenchmarkSessionOpen measures session_open, which runs on every personal
// stream open: Redis' own time per open (INFO commandstats), for a fresh
// user's first open (fresh), and for opens that replace the user's
// session of the same platform, in the steady state of a client
// replacing its session over and over (1 000 replacements before the
// timer): resuming with the position of the open before
// (replace+resume, a client that keeps its Last-Event-ID), or without
// (replace+inbox: its platform's offline inbox, never acknowledged here,
// is read whole). Run:
//
//	go test ./store -run '^$' -bench SessionOpen -benchtime 5000x
func BenchmarkSessionOpen(b *testing.B) {
	for _, mode := range []string{"fresh", "replace+resume", "replace+inbox"} {
		b.Run(mode, func(b *testing.B) {
			s, _ := freshStore(b, func(c *store.Config) { c.Shards, c.PresenceTTL = 16, time.Minute })
			ctx := context.Background()
			var last sse.UserOpening
			open := func(i int) {
				x := sse.Session{UserID: fmt.Sprint("user-", i), Platform: "pc", ID: fmt.Sprint("bench.", i)}
				var c sse.Cursor
				if mode != "fresh" {
					x.UserID = "flapper"
				}
				if mode == "replace+resume" && last.Tag != "" {
					c = sse.Cursor{Set: true, Version: last.Seq, Tag: last.Tag}
				}
				o, err := s.Sessions().OpenSession(ctx, x, c, 0)
				if err != nil || o.Gap {
					b.Fatal(o.Gap, err)
				}
				last = o
			}
			if mode != "fresh" {
				for i := range 1000 {
					open(-1 - i)
				}
			}
			if err := s.Client().ConfigResetStat(ctx).Err(); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for i := range b.N {
				open(i)
			}
			b.StopTimer()
			b.ReportMetric(scriptTotalMicros(b, s.Client())/float64(b.N), "redis-µs/open")
		})
	}
}
