package store

import (
	"fmt"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
)

// embeddedTick is the shortest interval at which the embedded store's
// expiries are applied; embeddedShare bounds the share of time spent
// applying them (miniredis walks every key, sorted, to do it).
const (
	embeddedTick  = 10 * time.Millisecond
	embeddedShare = 20 // at most 1/20 of the time: the next tick waits 20× the last one's cost
)

// embedded is the in-process store (miniredis) on a loopback port, with its
// keys' expiries applied by a clock of its own.
//
// miniredis applies TTLs only when told time passed. Its ClockTTL mode
// does so on every key access, walking and sorting every key each time: a
// script of 20 calls over 20 000 keys cost ~100 ms, so the embedded store
// slowed down with every room it held. Here one goroutine advances the
// clock every embeddedTick (or less often when the walk itself is long):
// a key lives up to one tick past its expiry, and PTTL reads up to one
// tick high. Development only, as the embedded store is.
type embedded struct {
	*miniredis.Miniredis
	stop chan struct{}
	done sync.WaitGroup
	once sync.Once
}

// startEmbedded starts miniredis on 127.0.0.1 and its clock.
func startEmbedded() (*embedded, error) {
	m := miniredis.NewMiniRedis()
	if err := m.StartAddr("127.0.0.1:0"); err != nil {
		return nil, fmt.Errorf("embedded store: %w", err)
	}
	e := &embedded{Miniredis: m, stop: make(chan struct{})}
	e.done.Add(1)
	go e.clock()
	return e, nil
}

// clock advances miniredis' TTLs by the time elapsed, until Close.
func (e *embedded) clock() {
	defer e.done.Done()
	last := time.Now()
	wait := embeddedTick
	for {
		select {
		case <-e.stop:
			return
		case <-time.After(wait):
		}
		now := time.Now()
		e.FastForward(now.Sub(last))
		last = now
		wait = max(embeddedTick, embeddedShare*time.Since(now))
	}
}

// Close stops the clock and the server; later calls do nothing.
func (e *embedded) Close() {
	e.once.Do(func() {
		close(e.stop)
		e.done.Wait()
		e.Miniredis.Close()
	})
}
