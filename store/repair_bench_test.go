package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/internal/race"
	"github.com/realsync/realsync/internal/redisinfo"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/store"
)

// BenchmarkJanitorVisit reports the Redis time of one janitor visit of a
// shard on a healthy store of 2 000 idle 8-player rooms (8 shards): the
// lease, the schedules and one page of the repair walk, which is what
// every shard costs every second whatever happens (a tenth of the rooms
// and visits with -short or the race detector). Run:
//
//	go test ./store -run '^$' -bench JanitorVisit -benchtime 1x
func BenchmarkJanitorVisit(b *testing.B) {
	s, _ := freshStore(b, func(c *store.Config) { c.Lifecycle.LogIdleTrim = -1 })
	ctx := context.Background()
	// 50 visits per shard: more than one round of the walk over 250 rooms
	roomsN, visits := 2000, 400
	if race.Smoke() {
		roomsN, visits = 200, 40
	}
	for i := range roomsN {
		j, err := s.Create(ctx, rooms.User{ID: fmt.Sprintf("owner-%05d", i)}, newRoom(func(r *rooms.NewRoom) {
			r.Mode, r.Region, r.MaxPlayers = fmt.Sprint("m", i%4), fmt.Sprint("r", i%4), 8
		}))
		if err != nil {
			b.Fatal(err)
		}
		for p := 1; p < 8; p++ {
			if _, err := s.Join(ctx, rooms.User{ID: fmt.Sprintf("u-%05d-%d", i, p)}, j.Room.ID); err != nil {
				b.Fatal(err)
			}
		}
	}
	s.Client().ConfigResetStat(ctx)
	rep := store.Report{}
	for v := range visits {
		r, err := s.Sweep(ctx, v%8, "bench", time.Millisecond)
		if err != nil {
			b.Fatal(err)
		}
		for k, n := range r {
			rep[k] += n
		}
		time.Sleep(10 * time.Microsecond)
	}
	if len(rep) != 0 {
		b.Fatalf("a healthy store was repaired: %v", rep)
	}
	b.ReportMetric(redisMicros(b, s.Client())/float64(visits), "redis-µs/shard-visit")
}

// redisMicros is Redis' own time in all commands since the last CONFIG
// RESETSTAT.
func redisMicros(b *testing.B, c redis.UniversalClient) float64 {
	return commandMicros(b, c, func(cmd string) bool { return cmd != "info" })
}

// scriptTotalMicros is Redis' own time in scripts (EVALSHA, EVAL) since the
// last CONFIG RESETSTAT: the commands they ran included, counted once.
func scriptTotalMicros(b *testing.B, c redis.UniversalClient) float64 {
	return commandMicros(b, c, func(cmd string) bool { return cmd == "evalsha" || cmd == "eval" })
}

// commandMicros is Redis' own time in the commands keep says yes to, from
// INFO commandstats.
func commandMicros(b *testing.B, c redis.UniversalClient, keep func(cmd string) bool) float64 {
	info, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	total := 0.0
	for cmd, st := range redisinfo.Commandstats(info) {
		if keep(cmd) {
			total += float64(st.Usec)
		}
	}
	return total
}
