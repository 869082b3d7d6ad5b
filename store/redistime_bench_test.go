package store_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/internal/anchor"
	"github.com/realsync/realsync/internal/race"
	"github.com/realsync/realsync/internal/redisinfo"
	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/store"
)

// BenchmarkRedisTime measures Redis' own time per mutation, one kind at a
// time, against the anchor script (internal/anchor) in the same run: on a
// fresh redis-server, rounds of phase joins (each a new user into one of 4
// pool rooms of 100 seats that never fill), leaves (the same users),
// one-key state patches, each by a store running the mutations as
// functions of the library and by one running them as scripts
// (Config.ScriptsOnly), quick-joins of new users into one (mode, region)
// of 100-seat rooms (the lock's script, the quick_join script and the
// lock's release: three scripts an op), and anchor runs, alternating,
// phaseOps each, one call at a time; around each phase INFO commandstats
// and INFO cpu. Per kind: the script's own µs per call (FCALL or EVALSHA),
// its transaction's (the join's MULTI/EXEC: script and room read), Redis
// CPU per operation, and the ratios to the anchor that issue 15 item 1
// targets (join, leave ≤ 2×, patch ≤ 1.5×). Sequential calls: Redis' time
// per call does not depend on the clients' concurrency, and the phases
// alternate so the machine's noise falls on every kind alike (20 ops a
// phase with -short or the race detector). Run:
//
//	go test ./store -run '^$' -bench RedisTime -benchtime 20x
func BenchmarkRedisTime(b *testing.B) {
	phaseOps := 200
	if race.Smoke() {
		phaseOps = 20
	}
	fs, addr := freshStore(b)
	ss := openStoreWith(b, redistest.Backend{Name: "fresh", URL: "redis://" + addr}, func(c *store.Config) { c.ScriptsOnly = true })
	if !fs.UsesFunctions() {
		b.Fatal("the store runs no functions")
	}
	ctx := context.Background()
	c := fs.Client()
	type fixture struct {
		s      *store.Store
		pool   []string
		owners []rooms.User
	}
	fixtures := map[string]*fixture{"fn": {s: fs}, "script": {s: ss}}
	for _, f := range fixtures {
		f.pool, f.owners = benchPool(b, f.s)
	}
	type acc struct {
		ops                   int
		scriptUs, txUs, cpuUs float64
		scriptCalls, txCalls  int64
		commands              int64
		commandUs             float64 // the commands' own time (in scripts and transactions too)
	}
	kinds := []string{"fn-join", "script-join", "fn-leave", "script-leave", "fn-patch", "script-patch",
		"fn-quickjoin", "script-quickjoin", "anchor"}
	accs := map[string]*acc{}
	for _, k := range kinds {
		accs[k] = &acc{}
	}
	measure := func(kind string, op func(i int) error) {
		cpu0, st0 := redisCPU(b, c), commandstats(b, c)
		for i := range phaseOps {
			if err := op(i); err != nil {
				b.Fatalf("%s: %v", kind, err)
			}
		}
		cpu1, st1 := redisCPU(b, c), commandstats(b, c)
		a := accs[kind]
		a.ops += phaseOps
		a.cpuUs += (cpu1 - cpu0) * 1e6
		for name, s1 := range st1 {
			d := s1.Calls - st0[name].Calls
			us := float64(s1.Usec - st0[name].Usec)
			switch {
			case name == "evalsha" || name == "eval" || name == "fcall":
				a.scriptUs += us
				a.scriptCalls += d
			case name == "exec":
				a.txUs += us
				a.txCalls += d
			case name == "info" || name == "multi":
			default:
				a.commands += d
				a.commandUs += us
			}
		}
	}
	users := make([]rooms.User, phaseOps)
	b.ResetTimer()
	for round := range b.N {
		for _, mode := range []string{"fn", "script"} {
			f := fixtures[mode]
			for i := range users {
				users[i] = rooms.User{ID: fmt.Sprintf("u-%s-%d-%d", mode, round, i), Name: "player"}
			}
			measure(mode+"-join", func(i int) error {
				_, err := f.s.Join(ctx, users[i], f.pool[i%len(f.pool)])
				return err
			})
			measure(mode+"-leave", func(i int) error { return f.s.Leave(ctx, users[i], f.pool[i%len(f.pool)]) })
			measure(mode+"-patch", func(i int) error {
				_, err := f.s.PatchState(ctx, f.owners[i%len(f.owners)], f.pool[i%len(f.pool)],
					rooms.StatePatch{Set: rooms.State{"k" + strconv.Itoa(i%8): []byte(strconv.Itoa(i))}, IfMatch: -1})
				return err
			})
			measure(mode+"-quickjoin", func(i int) error {
				u := rooms.User{ID: fmt.Sprintf("q-%s-%d-%d", mode, round, i), Name: "player"}
				_, err := f.s.QuickJoin(ctx, u, "qj", []string{"r0"}, nil, quickRoom("qj", "r0", 100))
				return err
			})
		}
		measure("anchor", func(i int) error {
			return anchor.Script.Run(ctx, c, anchor.Keys, "u"+strconv.Itoa(i), `"anchor"`, anchor.Channel).Err()
		})
	}
	b.StopTimer()
	an := accs["anchor"]
	anchorUs := an.scriptUs / float64(an.scriptCalls)
	anchorCPU := an.cpuUs / float64(an.ops)
	for _, k := range kinds {
		a := accs[k]
		script := a.scriptUs / float64(a.ops) // one script per op (the holdings' too, when on), quick-join three
		cpu := a.cpuUs / float64(a.ops)
		b.ReportMetric(script, k+"-script-µs/op")
		b.ReportMetric(cpu, k+"-cpu-µs/op")
		if k != "anchor" {
			b.ReportMetric(script/anchorUs, k+"-script/anchor")
		}
		if b.N == 1 {
			continue // the first, calibrating run: its figures are the next run's too
		}
		b.Logf("%-16s script %6.1f µs/op (%d runs), tx %6.1f µs/op, Redis CPU %6.1f µs/op, %4.1f Redis calls/op taking %5.1f µs; vs anchor: script ×%.2f, CPU ×%.2f",
			k, script, a.scriptCalls, a.txUs/float64(a.ops), cpu, float64(a.commands)/float64(a.ops), a.commandUs/float64(a.ops), script/anchorUs, cpu/anchorCPU)
	}
}

// benchPool creates 4 pool rooms of 100 seats, open state, one per region.
func benchPool(b *testing.B, s *store.Store) (pool []string, owners []rooms.User) {
	ctx := context.Background()
	for i := range 4 {
		owner := rooms.User{ID: fmt.Sprint("owner-", i), Name: "owner"}
		j, err := s.Create(ctx, owner, newRoom(func(r *rooms.NewRoom) {
			r.MaxPlayers, r.StatePolicy, r.Mode, r.Region = 100, rooms.PolicyOpen, "pool", fmt.Sprint("r", i)
		}))
		if err != nil {
			b.Fatal(err)
		}
		pool, owners = append(pool, j.Room.ID), append(owners, owner)
	}
	return pool, owners
}

// commandstats reads INFO commandstats: command → calls, µs.
func commandstats(b *testing.B, c redis.UniversalClient) map[string]redisinfo.Stat {
	info, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	return redisinfo.Commandstats(info)
}

// redisCPU is the redis-server's used_cpu_user + used_cpu_sys, seconds.
func redisCPU(b *testing.B, c redis.UniversalClient) float64 {
	info, err := c.Info(context.Background(), "cpu").Result()
	if err != nil {
		b.Fatal(err)
	}
	cpu, ok := redisinfo.CPU(info)
	if !ok {
		b.Fatalf("INFO cpu: %q", info)
	}
	return cpu
}
