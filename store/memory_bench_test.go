package store_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/realsync/realsync/internal/race"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/store"
)

// BenchmarkRoomMemory reports the Redis memory of an idle room of 8
// players: everything it adds to used_memory (its keys and its entries in
// the indexes, user index and stats) without its event log; the log's
// bytes at 8 events (Redis allocates a stream's first node whole), and the
// log's bytes per event past that; and an idle room's bytes in all once the
// janitor dropped its log. It runs on a fresh redis-server. Run:
//
//	go test ./store -run '^$' -bench RoomMemory -benchtime 1x
func BenchmarkRoomMemory(b *testing.B) {
	s, _ := freshStore(b, func(c *store.Config) { c.Lifecycle.LogIdleTrim = time.Millisecond })
	ctx := context.Background()
	c := s.Client()
	used := func() int64 {
		info, _ := c.Info(ctx, "memory").Result()
		for _, l := range strings.Split(info, "\r\n") {
			if v, ok := strings.CutPrefix(l, "used_memory:"); ok {
				n, _ := strconv.ParseInt(v, 10, 64)
				return n
			}
		}
		b.Fatal("no used_memory")
		return 0
	}
	// warm-up: one room through the janitor, so every script is loaded
	// (Redis counts script bodies in used_memory) before measuring
	if _, err := s.Create(ctx, rooms.User{ID: "warm-up"}, newRoom()); err != nil {
		b.Fatal(err)
	}
	sweepIdle := func(n int) {
		for dropped := 0; dropped < n; {
			for shard := range 8 {
				rep, err := s.Sweep(ctx, shard, "bench", time.Millisecond)
				if err != nil {
					b.Fatal(err)
				}
				dropped += rep["trimmed"]
				time.Sleep(time.Millisecond)
			}
		}
	}
	time.Sleep(2 * time.Millisecond)
	sweepIdle(1)
	n := 2000
	if race.Smoke() {
		n = 50
	}
	before := used()
	var logBytes int64
	for i := range n {
		r := newRoom(func(r *rooms.NewRoom) {
			r.Mode, r.Region, r.MaxPlayers = fmt.Sprint("m", i%4), fmt.Sprint("r", i%4), 8
		})
		j, err := s.Create(ctx, rooms.User{ID: fmt.Sprintf("owner-%05d", i), Name: "owner"}, r)
		if err != nil {
			b.Fatal(err)
		}
		for p := 1; p < 8; p++ {
			if _, err := s.Join(ctx, rooms.User{ID: fmt.Sprintf("u-%05d-%d", i, p), Name: fmt.Sprint("player", p)}, j.Room.ID); err != nil {
				b.Fatal(err)
			}
		}
		lb, _ := c.MemoryUsage(ctx, s.LogKey(j.Room.ID)).Result()
		logBytes += lb
	}
	total := used() - before
	b.ReportMetric(float64(total-logBytes)/float64(n), "bytes/room-without-log")
	b.ReportMetric(float64(logBytes)/float64(n), "log-bytes/room(8-events)")

	// idle: the janitor drops every log (the rooms were created with a 1 ms
	// trim delay; visits of 100 rooms per shard)
	sweepIdle(n)
	b.ReportMetric(float64(used()-before)/float64(n), "bytes/idle-room-in-all")

	// a log's cost per event once it is past its first node: 900 one-key
	// state events (the log keeps about 1000)
	j, err := s.Create(ctx, rooms.User{ID: "log-owner"}, newRoom())
	if err != nil {
		b.Fatal(err)
	}
	logUsage := func() int64 {
		n, err := c.MemoryUsage(ctx, s.LogKey(j.Room.ID), 0).Result()
		if err != nil {
			b.Fatal(err)
		}
		return n
	}
	start := logUsage()
	const patches = 900
	for i := range patches {
		p := rooms.StatePatch{Set: rooms.State{"score": []byte(strconv.Itoa(i))}, IfMatch: rooms.NoIfMatch}
		if _, err := s.PatchState(ctx, rooms.User{ID: "log-owner"}, j.Room.ID, p); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(logUsage()-start)/patches, "log-bytes/event")
}
