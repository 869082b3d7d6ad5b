package store_test

import (
	"context"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/internal/race"
	"github.com/realsync/realsync/internal/redisinfo"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/store"
)

// BenchmarkRedisCeiling runs redis-benchmark (64 clients, -P 1, no
// pipelining) on a fresh redis-server with the EVALSHA the store sends for
// a join and for a one-key state patch: what Redis alone does with those
// scripts on this machine, the bar the HTTP figures are measured against.
// The join goes into a room whose maxPlayers is raised past the API's
// limit so it never fills, each request a new user, replying with the
// playerId only (the HTTP join also reads the room back in the same
// script: see BenchmarkScripts and docs/BENCHMARKS.md). Run:
//
//	go test ./store -run '^$' -bench RedisCeiling -benchtime 1x
func BenchmarkRedisCeiling(b *testing.B) {
	if _, err := exec.LookPath("redis-benchmark"); err != nil {
		b.Fatal("redis-benchmark not found: install redis-tools (scripts/test.sh does)")
	}
	s, addr := freshStore(b)
	ctx := context.Background()
	owner := rooms.User{ID: "owner", Name: "owner"}
	j, err := s.Create(ctx, owner, newRoom(func(r *rooms.NewRoom) { r.MaxPlayers, r.StatePolicy = 100, rooms.PolicyOpen }))
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Client().HSet(ctx, s.RoomKey(j.Room.ID), "mx", 1<<30).Err(); err != nil {
		b.Fatal(err)
	}
	host, port, _ := strings.Cut(addr, ":")
	calls := 100000
	if race.Smoke() {
		calls = 2000
	}
	for _, c := range []struct{ name, uid string }{{"join", "u-__rand_int__"}, {"patch", owner.ID}} {
		b.Run(c.name, func(b *testing.B) {
			args, err := s.EvalShaArgs(ctx, c.name, j.Room.ID, c.uid)
			if err != nil {
				b.Fatal(err)
			}
			cmd := append([]string{"-h", host, "-p", port, "-c", "64", "-P", "1", "-n", strconv.Itoa(calls),
				"-r", randomUsers, "--csv"}, args...)
			b.Logf("redis-benchmark %s", strings.Join(cmd, " "))
			s.Client().ConfigResetStat(ctx)
			joined := countJoins(b, s, j.Room.ID)
			out, err := exec.Command("redis-benchmark", cmd...).Output()
			if err != nil {
				b.Fatalf("redis-benchmark: %v", err)
			}
			if c.name == "join" {
				joined(calls)
			}
			// the test name holds the arguments, quotes unescaped: read the
			// figures from the end of the line
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			if len(lines) != 2 {
				b.Fatalf("redis-benchmark output %q", out)
			}
			head, row := strings.Split(lines[0], ","), strings.Split(lines[1], ",")
			row = row[len(row)-len(head)+1:]
			for i, h := range head[1:] {
				v, _ := strconv.ParseFloat(strings.Trim(row[i], `"`), 64)
				switch strings.Trim(h, `"`) {
				case "rps":
					b.ReportMetric(v, "evalsha/s")
				case "p50_latency_ms":
					b.ReportMetric(v, "p50-ms")
				case "p99_latency_ms":
					b.ReportMetric(v, "p99-ms")
				}
			}
			b.ReportMetric(scriptMicros(b, s.Client()), "redis-µs/script")
		})
	}
}

// randomUsers is redis-benchmark's -r for the joins' __rand_int__: it
// reads -r with atoi, so a value past a C int wraps (1e12 made every
// request the same user, a re-join that returns at its first call).
const randomUsers = "1000000000"

// countJoins counts room id's members now; the function it returns fails
// b unless nearly n joined since (-r draws at random: a few repeat).
func countJoins(b *testing.B, s *store.Store, id string) func(n int) {
	b.Helper()
	users := func() int64 {
		n, err := s.Client().HLen(context.Background(), s.RoomKey(id)+":users").Result()
		if err != nil {
			b.Fatal(err)
		}
		return n
	}
	before := users()
	return func(n int) {
		b.Helper()
		if got := users() - before; got < int64(n)*99/100 {
			b.Fatalf("%d of redis-benchmark's %d joins joined: it did not send the join it was given", got, n)
		}
	}
}

// scriptMicros is Redis' own time per EVALSHA since the last CONFIG
// RESETSTAT (INFO commandstats), the script's commands included.
func scriptMicros(b *testing.B, c redis.UniversalClient) float64 {
	info, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	if st, ok := redisinfo.Commandstats(info)["evalsha"]; ok {
		return st.PerCall()
	}
	b.Fatalf("no evalsha in INFO commandstats: %q", info)
	return 0
}
