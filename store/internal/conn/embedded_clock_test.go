package conn

import (
	"fmt"
	"math"
	"testing"
	"time"
)

// A quiet embedded store whose clock turns to ticks still charges its
// keys the time it was quiet: exact expiries (ClockTTL) apply the time
// passed only at each access, so the switch applies the time since the
// last one before the ticks take over. Else every key would outlive its
// expiry by as long as the store was quiet (a machine's load, not its
// keys, making the walk costly enough to switch).
func TestEmbeddedClockChargesAQuietStore(t *testing.T) {
	e, err := startEmbeddedWith(math.MaxInt64) // exact until told
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	if err := e.Set("long", "v"); err != nil {
		t.Fatal(err)
	}
	e.SetTTL("long", time.Hour)
	const quiet = 1500 * time.Millisecond
	time.Sleep(quiet) // no access: nothing applied yet
	e.exactKeys.Store(0)
	e.exactMax.Store(0) // any walk is costly: the clock ticks
	for began := time.Now(); !e.ticking.Load(); time.Sleep(10 * time.Millisecond) {
		if time.Since(began) > 5*time.Second {
			t.Fatal("the clock did not switch to ticks within 5 s")
		}
	}
	if ttl := e.TTL("long"); ttl > time.Hour-quiet {
		t.Fatalf("TTL %v after %v quiet, want at most %v: the quiet time was never charged", ttl, quiet, time.Hour-quiet)
	}
}

// A small store stays exact however costly its walks look: on a loaded
// machine (CI's lanes at once) every walk of a store of a few keys took
// longer than embeddedExactMax, the clock ticked, and a key read just
// after its SET was charged a whole tick.
func TestEmbeddedClockKeepsASmallStoreExact(t *testing.T) {
	e, err := startEmbeddedWith(0) // every walk is costly
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	for i := range embeddedExactKeys - 1 {
		if err := e.Set(fmt.Sprint("k", i), "v"); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(time.Second) // the clock's walks, one every 100 ms
	if e.ticking.Load() {
		t.Fatalf("ticking with %d keys, want exact below %d", embeddedExactKeys-1, embeddedExactKeys)
	}
	if err := e.Set("last", "v"); err != nil { // embeddedExactKeys: ticks
		t.Fatal(err)
	}
	for began := time.Now(); !e.ticking.Load(); time.Sleep(10 * time.Millisecond) {
		if time.Since(began) > 5*time.Second {
			t.Fatalf("still exact with %d keys and every walk costly", embeddedExactKeys)
		}
	}
}
