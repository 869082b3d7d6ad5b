package store_test

import (
	"github.com/realsync/realsync/internal/redisinfo"

	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/store"
)

// BenchmarkBatching compares, on a fresh redis-server and in one run,
// 64 concurrent callers sending join-shaped scripts with batching off, with
// natural batching and with a 200 µs window, against redis-benchmark
// sending the same EVALSHA with 64 clients at -P 1 and -P 16:
//
//   - evalsha: the join EVALSHA of BenchmarkRedisCeiling (a room that
//     never fills, a new user each call), through the store's client;
//   - join+leave: the store's Join (the script and the room read in one
//     MULTI/EXEC) then Leave, into 8 rooms of 100 seats.
//
// Besides ops/s (noisy on a shared machine), it reports Redis' own cost:
// CPU per operation (INFO cpu, used_cpu_sys + used_cpu_user), its time per
// EVALSHA (INFO commandstats usec_per_call) and the EVALSHA calls per
// read system call it served, plus this process' CPU per operation
// (getrusage: the Go client and the callers). Use three
// alternated rounds (REALSYNC_BENCH_ROUND=1, 2, 3 rotate the order of
// the three store variants; -count would run each variant thrice in a
// row). Run:
//
//	for r in 1 2 3; do REALSYNC_BENCH_ROUND=$r go test ./store -run '^$' -bench Batching -benchtime 20000x; done
func BenchmarkBatching(b *testing.B) {
	if _, err := exec.LookPath("redis-benchmark"); err != nil {
		b.Fatal("redis-benchmark not found: install redis-tools (scripts/test.sh does)")
	}
	variants := []struct {
		name  string
		batch *store.Batching
	}{{"off", nil}, {"natural", &store.Batching{}}, {"window=200us", &store.Batching{Window: 200 * time.Microsecond}}}
	// REALSYNC_BENCH_ROUND (scripts/bench.sh) rotates the order, so that
	// over three rounds each variant runs first, second and third once.
	round, _ := strconv.Atoi(os.Getenv("REALSYNC_BENCH_ROUND"))
	variants = append(variants[round%len(variants):], variants[:round%len(variants)]...)
	_, addr := freshStore(b)
	for _, v := range variants {
		s := openStoreWith(b, redisAt(addr), func(c *store.Config) { c.Batch = v.batch })
		b.Run("evalsha/"+v.name, func(b *testing.B) {
			args, id, user := joinArgs(b, s)
			joined := countJoins(b, s, id)
			var seq atomic.Int64
			measure(b, s.Client(), func() error {
				a := slices.Clone(args)
				a[user] = "u-" + strconv.FormatInt(seq.Add(1), 36)
				return s.Client().Do(context.Background(), a...).Err()
			})
			joined(b.N)
		})
		b.Run("join+leave/"+v.name, func(b *testing.B) {
			ids := make([]string, 8)
			for i := range ids {
				ids[i] = mustCreate(b, s, rooms.User{ID: fmt.Sprintf("o-%d", i)}, newRoom(func(r *rooms.NewRoom) {
					r.MaxPlayers, r.Region = 100, fmt.Sprintf("r%d", i)
				})).Room.ID
			}
			var seq atomic.Int64
			measure(b, s.Client(), func() error {
				n := seq.Add(1)
				u, id := rooms.User{ID: "u-" + strconv.FormatInt(n, 36), Name: "p"}, ids[n%8]
				if _, err := s.Join(context.Background(), u, id); err != nil {
					return err
				}
				return s.Leave(context.Background(), u, id)
			})
		})
	}
	s := openStoreWith(b, redisAt(addr), func(*store.Config) {})
	for _, pipe := range []string{"1", "16"} {
		b.Run("evalsha/redis-benchmark-P"+pipe, func(b *testing.B) {
			args, id, user := joinArgs(b, s)
			args[user] = "u-__rand_int__"
			host, port, _ := strings.Cut(addr, ":")
			n := max(b.N, 1000)
			cmd := append([]string{"-h", host, "-p", port, "-c", "64", "-P", pipe, "-n", strconv.Itoa(n),
				"-r", randomUsers, "-q"}, anyStrings(args)...)
			joined := countJoins(b, s, id)
			before := redisFigures(b, s.Client())
			start := time.Now()
			if out, err := exec.Command("redis-benchmark", cmd...).CombinedOutput(); err != nil {
				b.Fatalf("redis-benchmark: %v: %s", err, out)
			}
			report(b, n, time.Since(start), before, redisFigures(b, s.Client()), 0)
			joined(n)
		})
	}
}

// redisAt is the standalone backend at addr.
func redisAt(addr string) redistest.Backend {
	return redistest.Backend{Name: "fresh", URL: "redis://" + addr}
}

// joinArgs is the join EVALSHA of a fresh room that never fills, the
// room's id, and the index of the join's user among the arguments.
func joinArgs(b *testing.B, s *store.Store) ([]any, string, int) {
	b.Helper()
	ctx := context.Background()
	j, err := s.Create(ctx, rooms.User{ID: "owner", Name: "owner"}, newRoom(func(r *rooms.NewRoom) { r.MaxPlayers = 100 }))
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Client().HSet(ctx, s.RoomKey(j.Room.ID), "mx", 1<<30).Err(); err != nil {
		b.Fatal(err)
	}
	args, err := s.EvalShaArgs(ctx, "join", j.Room.ID, "UID")
	if err != nil {
		b.Fatal(err)
	}
	user := slices.Index(args, "UID")
	if user < 0 {
		b.Fatalf("the join's user is not among its arguments: %q", args)
	}
	out := make([]any, len(args))
	for i, a := range args {
		out[i] = a
	}
	return out, j.Room.ID, user
}

func anyStrings(a []any) []string {
	out := make([]string, len(a))
	for i, x := range a {
		out[i] = fmt.Sprint(x)
	}
	return out
}

// measure runs op b.N times from 64 goroutines and reports the figures.
func measure(b *testing.B, c redis.UniversalClient, op func() error) {
	b.Helper()
	var next atomic.Int64
	var failed atomic.Value
	before := redisFigures(b, c)
	self := cpuSelf()
	start := time.Now()
	var wg sync.WaitGroup
	for range 64 {
		wg.Go(func() {
			for next.Add(1) <= int64(b.N) {
				if err := op(); err != nil {
					failed.Store(err)
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err := failed.Load(); err != nil {
		b.Fatal(err)
	}
	report(b, b.N, elapsed, before, redisFigures(b, c), cpuSelf()-self)
}

// figures are Redis' counters: its CPU (s), and the EVALSHA calls and
// their time (µs), and the read system calls it served.
type figures struct {
	cpu                float64
	calls, usec, reads float64
}

func redisFigures(b *testing.B, c redis.UniversalClient) figures {
	b.Helper()
	info, err := c.Info(context.Background(), "cpu", "commandstats", "stats").Result()
	if err != nil {
		b.Fatal(err)
	}
	var f figures
	f.cpu, _ = redisinfo.CPU(info)
	ev := redisinfo.Commandstats(info)["evalsha"]
	f.calls, f.usec = float64(ev.Calls), float64(ev.Usec)
	for _, l := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(l, "total_reads_processed:"); ok {
			f.reads, _ = strconv.ParseFloat(v, 64)
		}
	}
	return f
}

// report reports n operations that took elapsed: ops/s, Redis' CPU per
// operation and time per EVALSHA, EVALSHA per read it served, and this
// process' CPU per operation (0: not measured).
func report(b *testing.B, n int, elapsed time.Duration, before, after figures, self time.Duration) {
	b.ReportMetric(float64(n)/elapsed.Seconds(), "ops/s")
	b.ReportMetric((after.cpu-before.cpu)*1e6/float64(n), "redis-cpu-µs/op")
	if calls := after.calls - before.calls; calls > 0 {
		b.ReportMetric((after.usec-before.usec)/calls, "redis-µs/evalsha")
		b.ReportMetric(calls/max(after.reads-before.reads, 1), "evalsha/read")
	}
	if self > 0 {
		b.ReportMetric(float64(self.Microseconds())/float64(n), "go-cpu-µs/op")
	}
}

// cpuSelf is this process' CPU time so far (user + system).
func cpuSelf() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
