package store_test

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"

	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/store"
)

// The first call after a Redis restart runs, even when the outage failed
// more dials than the pool has connections. go-redis then fails every dial
// at once with the last dial error (its circuit breaker: PoolSize failures,
// counted over the pool's life) and tries one itself once a second, so a
// call sent again 20 ms after its failed dial failed too: 503 for every
// call that needed a connection, up to a second after Redis was back,
// while readiness, through connections of its own, said ready. A call
// whose dial failed is now sent again after a second and a little
// (redisx.Redial; a single command's case: its TestRedialAfterTheBreakerOpened).
func TestFirstCallAfterARedisRestartRuns(t *testing.T) {
	srv := ownServer(t)
	// unbatched: each call dials on its own
	s := openStoreWith(t, redistest.Backend{Name: "fresh", URL: "redis://" + srv.Addr}, func(c *store.Config) { c.Batch = nil })
	ctx := context.Background()
	j, err := s.Create(ctx, alice, newRoom())
	if err != nil {
		t.Fatal(err)
	}
	read := func() error {
		_, _, err := s.Get(ctx, j.Room.ID, false)
		if errors.Is(err, rooms.ErrRoomNotFound) { // after the restart: nothing was kept
			return nil
		}
		return err
	}
	if err := read(); err != nil {
		t.Fatal(err)
	}
	restart := func() {
		t.Helper()
		srv.Kill()
		var wg sync.WaitGroup
		for range 4 * 10 * runtime.GOMAXPROCS(0) { // go-redis' PoolSize is 10 a CPU: twice that in failed dials, at least
			wg.Go(func() {
				if err := read(); !errors.Is(err, rooms.ErrUnavailable) {
					t.Errorf("read with Redis down: %v, want rooms.ErrUnavailable", err)
				}
			})
		}
		wg.Wait()
		if err := srv.Start(); err != nil {
			t.Fatal(err)
		}
	}
	restart()
	if err := read(); err != nil { // a transaction
		t.Fatalf("the first read after the restart: %v", err)
	}
	restart()
	if _, err := s.Create(ctx, alice, newRoom()); err != nil { // scripts
		t.Fatalf("the first create after the restart: %v", err)
	}
}
