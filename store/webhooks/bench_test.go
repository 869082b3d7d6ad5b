package webhooks_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/store"
	"github.com/realsync/realsync/store/webhooks"
)

// BenchmarkDispatch: deliveries a second of one instance's dispatcher
// draining a backlog of room events (each room's 4) to one endpoint that
// answers at once, on a standalone Redis: what the dispatcher itself
// costs, the receiver's time aside. Its rounds are Step's (each waits for
// its sends); BenchmarkDispatchRun's, Run's, as realsyncd runs it.
func BenchmarkDispatch(b *testing.B) {
	benchDispatch(b, 500, 0, func(ctx context.Context, d *webhooks.Dispatcher, done func() bool) {
		for !done() {
			if _, err := d.Step(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkDispatchRun is BenchmarkDispatch with Run dispatching, started
// once each iteration's backlog is written and stopped once it is sent.
func BenchmarkDispatchRun(b *testing.B) {
	benchDispatch(b, 500, 0, runDispatch(b))
}

// BenchmarkDispatchRunSlowReceiver is BenchmarkDispatchRun with a receiver
// answering in 20 ms and the default 8 workers: the pool's limit, workers
// ÷ answer time (400/s) when an endpoint alone takes every worker (200/s
// when it took half, until 2026-12-05).
func BenchmarkDispatchRunSlowReceiver(b *testing.B) {
	benchDispatch(b, 100, 20*time.Millisecond, runDispatch(b))
}

func runDispatch(b *testing.B) func(ctx context.Context, d *webhooks.Dispatcher, done func() bool) {
	return func(ctx context.Context, d *webhooks.Dispatcher, done func() bool) {
		ctx, cancel := context.WithCancel(ctx)
		ran := make(chan struct{})
		go func() { defer close(ran); d.Run(ctx, func(err error) { b.Error(err) }) }()
		for !done() {
			time.Sleep(100 * time.Microsecond)
		}
		cancel()
		<-ran
	}
}

// benchDispatch measures dispatch draining each iteration's backlog, the
// events of rooms (4 each), until done; each send takes answer.
func benchDispatch(b *testing.B, rooms int, answer time.Duration, dispatch func(ctx context.Context, d *webhooks.Dispatcher, done func() bool)) {
	s := openStoreWith(b, redistest.Backend{Name: "standalone", URL: redistest.StandaloneURL(b)},
		func(c *store.Config) { c.WebhookOutboxLen = 100_000 })
	var sent atomic.Int64
	d, err := webhooks.New(s.Base(), webhooks.Config{Consumer: "i1", Endpoints: []webhooks.Endpoint{{ID: "e", Events: []string{"*"}}},
		Send: func(context.Context, webhooks.Delivery) error { time.Sleep(answer); sent.Add(1); return nil }})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	var elapsed time.Duration
	for b.Loop() {
		b.StopTimer()
		for range rooms {
			j, err := s.Create(ctx, alice, newRoom())
			if err != nil {
				b.Fatal(err)
			}
			if _, err := s.Join(ctx, bob, j.Room.ID); err != nil {
				b.Fatal(err)
			}
			if err := s.Leave(ctx, bob, j.Room.ID); err != nil {
				b.Fatal(err)
			}
			if _, err := s.Delete(ctx, alice, j.Room.ID); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
		start, want := time.Now(), sent.Load()+int64(4*rooms)
		dispatch(ctx, d, func() bool { return sent.Load() >= want })
		elapsed += time.Since(start)
	}
	b.ReportMetric(float64(sent.Load())/elapsed.Seconds(), "deliveries/s")
}

// BenchmarkRecountWalk: one whole recount walk of a shard, forced as
// every RecountWalkEvery-th recount forces it, on a standalone Redis;
// redis-µs/walk is the scripts' time inside Redis (INFO commandstats:
// evalsha, eval, fcall), the rest the round trips. deliveries: 10 000
// deliveries of 10 endpoints (RecountStep 1 000: 11 steps, the last
// replacing the counts); retries: 30 000 retries of 3 endpoints (3 dead
// endpoints at the default bound). redis-µs/script is a step's mean
// time, max-redis-µs/script the longest seen (on a loaded machine it
// includes the Redis process's waits for a core), max-entries/script the
// most entries one step read: a script's time is a stall of the shard's
// Redis, every client of it waiting.
func BenchmarkRecountWalk(b *testing.B) {
	b.Run("deliveries=10000", func(b *testing.B) { benchRecountWalk(b, 10_000, 0) })
	b.Run("retries=30000", func(b *testing.B) { benchRecountWalk(b, 0, 30_000) })
}

func benchRecountWalk(b *testing.B, n, retries int) {
	prefix := redistest.Prefix(b)
	s := openStoreWith(b, redistest.Backend{Name: "standalone", URL: redistest.StandaloneURL(b)},
		func(c *store.Config) { c.Prefix = prefix; c.WebhookOutboxLen = 1000 })
	d, err := webhooks.New(s.Base(), webhooks.Config{Consumer: "i1", Send: (&hookRecorder{}).send,
		RecountEvery: time.Hour, RecountWalkEvery: 1})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	c := s.Client()
	tag := s.Base().Tag(0)
	_, err = c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := range n {
			ep := fmt.Sprintf("ep%d", i%10)
			p.XAdd(ctx, &redis.XAddArgs{Stream: tag + ":webhooks:deliveries",
				Values: []any{"e", ep, "m", fmt.Sprintf("msg_0_%d-0", i), "t", "room_closed", "d", `{"type":"room_closed","roomId":"r"}`, "n", 0}})
			p.HIncrBy(ctx, tag+":webhooks:backlog", ep, 1)
		}
		for i := range retries { // as webhook_fail.lua writes them
			ep := fmt.Sprintf("dead%d", i%3)
			m, _ := json.Marshal(map[string]any{"id": fmt.Sprintf("%d-0", i+1), "e": ep, "m": fmt.Sprintf("msg_0_%d-0", i), "t": "room_closed",
				"d": `{"type":"room_closed","roomId":"r"}`, "n": 3})
			p.ZAdd(ctx, tag+":webhooks:retries", redis.Z{Score: float64(i), Member: string(m)})
			p.HIncrBy(ctx, tag+":webhooks:backlog", ep, 1)
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	scriptUsec := func() int64 {
		info, err := c.Info(ctx, "commandstats").Result()
		if err != nil {
			b.Fatal(err)
		}
		var total int64
		for _, line := range strings.Split(info, "\n") {
			name, stats, ok := strings.Cut(strings.TrimSpace(line), ":")
			if !ok || (name != "cmdstat_evalsha" && name != "cmdstat_eval" && name != "cmdstat_fcall") {
				continue
			}
			for _, f := range strings.Split(stats, ",") {
				if v, ok := strings.CutPrefix(f, "usec="); ok {
					u, _ := strconv.ParseInt(v, 10, 64)
					total += u
				}
			}
		}
		return total
	}
	var redisUsec, maxUsec int64
	var scripts, maxRead int
	for b.Loop() {
		b.StopTimer()
		if err := c.Del(ctx, tag+":webhooks:recount").Err(); err != nil {
			b.Fatal(err)
		}
		steps := 0
		for ; steps < (n+retries)/1000+2; steps++ {
			before := scriptUsec()
			b.StartTimer()
			read, err := d.RecountStepRead(ctx, 0)
			if err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			u := scriptUsec() - before
			redisUsec += u
			maxUsec = max(maxUsec, u)
			maxRead = max(maxRead, read)
			scripts++
			if c.HExists(ctx, tag+":webhooks:recount", "#done").Val() {
				break
			}
		}
		if steps == (n+retries)/1000+2 {
			b.Fatalf("the walk did not end in %d steps", steps)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(redisUsec)/float64(b.N), "redis-µs/walk")
	b.ReportMetric(float64(redisUsec)/float64(scripts), "redis-µs/script")
	b.ReportMetric(float64(maxUsec), "max-redis-µs/script")
	b.ReportMetric(float64(maxRead), "max-entries/script")
}
