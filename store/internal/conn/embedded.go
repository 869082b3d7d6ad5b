package conn

import (
	"crypto/rand"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/alicebob/miniredis/v2"
)

// The embedded store's clock (see Embedded): a walk over every key costing
// more than embeddedExactMax switches from exact expiries to ticks, one
// costing less than half of it back; ticks come every embeddedTick, or 20
// (embeddedShare) times a walk's cost when that is longer, at most
// embeddedTickMax apart. A store of fewer than embeddedExactKeys keys
// (a walk of about 55 µs) never starts ticking however long its walks
// take: on a loaded machine a walk's time is mostly the wait for the
// store's lock and for a core, not the keys. (One that ticks goes back
// once its walks are cheap again, whatever its keys.)
const (
	embeddedExactMax  = 100 * time.Microsecond
	embeddedExactKeys = 500
	embeddedTick      = 10 * time.Millisecond
	embeddedTickMax   = time.Second
	embeddedShare     = 20
)

// Embedded is the in-process store (miniredis) on a loopback port, with its
// keys' expiries applied by a clock of its own. The port asks for a
// password drawn at each start (Password), known only to the process: any
// local process can reach a loopback port (a tester's find: it read and
// wrote every key, unasked).
//
// miniredis applies TTLs only when told that time passed. Its ClockTTL
// mode does so on every key access (a script's calls included), walking
// every key, sorted, each time: exact, but a script of 10 calls over 20 000
// keys took 48 ms, so the embedded store slowed down with every room it
// held. The clock keeps ClockTTL while a walk is cheap (always on a store
// of fewer than 500 keys that never ticked), and past that advances the TTLs itself on
// ticks: then a key may go up to one tick (10 ms to 1 s, by the walk's
// cost) before or after its expiry, and PTTL reads up to a tick off.
// Development only, as the embedded store is.
type Embedded struct {
	*miniredis.Miniredis
	// Password is what the store's port asks of every connection.
	Password string
	// exactMax is the walk's cost past which the clock ticks
	// (embeddedExactMax; ns, tests set their own); ticking is true while
	// it does; a store of fewer than exactKeys keys never ticks
	// (embeddedExactKeys, tests set their own).
	exactMax  atomic.Int64
	exactKeys atomic.Int64
	ticking   atomic.Bool
	stop      chan struct{}
	done      sync.WaitGroup
	once      sync.Once
}

// StartEmbedded starts miniredis on 127.0.0.1 and its clock.
func StartEmbedded() (*Embedded, error) {
	return startEmbeddedWith(embeddedExactMax)
}

// startEmbeddedWith is StartEmbedded ticking past a walk of exactMax.
func startEmbeddedWith(exactMax time.Duration) (*Embedded, error) {
	m := miniredis.NewMiniRedis()
	m.ClockTTL(true)
	password := rand.Text() // 26 base32 characters: 130 bits
	m.RequireAuth(password)
	if err := m.StartAddr("127.0.0.1:0"); err != nil {
		return nil, fmt.Errorf("embedded store: %w", err)
	}
	e := &Embedded{Miniredis: m, Password: password, stop: make(chan struct{})}
	e.exactMax.Store(int64(exactMax))
	e.exactKeys.Store(embeddedExactKeys)
	e.done.Add(1)
	go e.clock()
	return e, nil
}

// clock measures the walk's cost and, while it is high, applies the
// expiries on ticks, until Close.
func (e *Embedded) clock() {
	defer e.done.Done()
	exact, last := true, time.Now()
	var took [4]time.Duration // the last walks' times: their least is a walk's cost
	for i := 0; ; i++ {
		cost := slices.Min(took[:])
		wait := min(max(embeddedTick, embeddedShare*cost), embeddedTickMax)
		if exact {
			wait = embeddedTickMax / 10 // only measuring
		}
		select {
		case <-e.stop:
			return
		case <-time.After(wait):
		}
		now := time.Now()
		if exact {
			e.FastForward(0) // the walk ClockTTL makes, timed
		} else {
			e.FastForward(now.Sub(last))
		}
		last = now
		took[i%len(took)] = time.Since(now)
		switch cost, limit := slices.Min(took[:]), time.Duration(e.exactMax.Load()); {
		case exact && cost > limit && int64(len(e.Keys())) >= e.exactKeys.Load():
			// ClockTTL applies the time passed at each access, and only
			// then: the time since the last one (a quiet store's, however
			// long) is applied now (DB ticks), the ticks charge what follows
			e.DB(0)
			last = time.Now()
			e.ClockTTL(false)
			exact = false
			e.ticking.Store(true)
		case !exact && cost < limit/2:
			e.FastForward(time.Since(last))
			e.ClockTTL(true) // from now on
			exact = true
			e.ticking.Store(false)
		}
	}
}

// Close stops the clock and the server; later calls do nothing.
func (e *Embedded) Close() {
	e.once.Do(func() {
		close(e.stop)
		e.done.Wait()
		e.Miniredis.Close()
	})
}
