package main

import (
	"fmt"
	"log/slog"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"time"
)

// afterBurst is the hub's AfterBurst: nil with REALSYNC_SSE_BURST_RELEASE
// false, else releaseBurst.
func (c Config) afterBurst(log *slog.Logger) func(openings int64) {
	if !c.BurstRelease {
		return nil
	}
	return releaseBurst(log)
}

// releaseBurst gives the memory of a burst of stream openings back: once
// it is over, the garbage it left (snapshots, request buffers, grown
// stacks) is collected and its pages given back to the OS at once
// (collectBurst: 0.3–0.6 s after 10 000 h2c or HTTP/1.1 openings on the
// reference machine, seconds when it runs during a storm's openings),
// rather than over the minute or two an idle server's runtime takes. At
// most once every 10 s (sse.Config).
func releaseBurst(log *slog.Logger) func(openings int64) {
	return func(openings int64) {
		start := time.Now()
		n := collectBurst()
		log.Info("event streams: a burst of openings is over, its memory given back to the OS",
			"openings", openings, "collections", n, "took", time.Since(start).Round(time.Millisecond))
	}
}

// maxBurstCollections bounds collectBurst; it collects again only while a
// collection gave at least minBurstStackShrink of stacks back.
const (
	maxBurstCollections = 4
	minBurstStackShrink = 1 << 20
)

// collectBurst collects the garbage of a burst and gives its free pages
// back to the OS, and returns the collections it ran: at least two,
// because one keeps what the burst left in sync.Pools (the openings'
// batch buffers, sized by their snapshots; net/http's and chi's pooled
// request state) as the pools' victims until the next, and more while
// the goroutines' stacks still shrink by a MiB or more (a collection
// halves a stack less than a quarter used, so one grown to 16 KiB by an
// opening needs two to come back to 4), at most maxBurstCollections.
// Measured, 10 000 idle h2c streams: 23.2–24.1 KiB resident a stream
// (three collections), 24.6–25.0 after one (docs/PERFORMANCE-HISTORY.md,
// "A burst's pools given back").
func collectBurst() (collections int) {
	stacks := []metrics.Sample{{Name: "/memory/classes/heap/stacks:bytes"}}
	read := func() uint64 {
		metrics.Read(stacks)
		return stacks[0].Value.Uint64()
	}
	runtime.GC()
	before := read()
	for collections = 1; collections < maxBurstCollections; {
		debug.FreeOSMemory()
		collections++
		after := read()
		if after+minBurstStackShrink > before {
			break
		}
		before = after
	}
	return collections
}

// A heap floor (REALSYNC_GC_MIN_HEAP). At the default GOGC (100) Go
// collects whenever the heap has doubled since the last collection; a
// server that holds few streams keeps a live heap of a few MiB, so under
// load it collects many times a second, and each collection's fixed costs
// and assists come out of every request (with a 64 MiB floor a GET room's
// server CPU −4% to −22% over HTTP, a list page's −3% to −17%, a join's
// −5% to −14%: docs/PERFORMANCE-HISTORY.md, "A heap floor for the
// collector"). The floor raises GOGC, after every collection, so the next
// one comes when the heap reaches about floor bytes; once the live heap is
// past half the floor (many streams) GOGC is the default again and the
// floor costs nothing. GOMEMLIMIT still bounds the whole.

// parseHeapSize reads REALSYNC_GC_MIN_HEAP: 0, or a number of bytes with
// GOMEMLIMIT's suffixes (B, KiB, MiB, GiB, TiB; none: bytes) from 1 MiB to
// 1 TiB.
func parseHeapSize(s string) (uint64, error) {
	num := strings.TrimRight(s, "BKMGTi")
	unit := uint64(1)
	switch s[len(num):] {
	case "", "B":
	case "KiB":
		unit = 1 << 10
	case "MiB":
		unit = 1 << 20
	case "GiB":
		unit = 1 << 30
	case "TiB":
		unit = 1 << 40
	default:
		return 0, fmt.Errorf(heapSizeRule, s)
	}
	n, err := strconv.ParseUint(num, 10, 64)
	if err != nil || (n != 0 && (n > 1<<40/unit || n*unit < 1<<20)) {
		return 0, fmt.Errorf(heapSizeRule, s)
	}
	return n * unit, nil
}

// heapSizeRule is REALSYNC_GC_MIN_HEAP's error, with the value given.
const heapSizeRule = "must be 0 or a size from 1MiB to 1TiB, such as 64MiB (suffix B, KiB, MiB, GiB or TiB); got %q"

// gcFloor is the heap floor to keep: REALSYNC_GC_MIN_HEAP's, or none when
// the operator set GOGC (theirs to decide; said in the log).
func gcFloor(minHeap uint64, gogc string, log *slog.Logger) uint64 {
	if gogc != "" && minHeap != 0 {
		log.Info("GOGC is set: REALSYNC_GC_MIN_HEAP is not applied, the collector runs at GOGC alone", "GOGC", gogc)
		return 0
	}
	return minHeap
}

// gcPercentFloor is the GOGC that puts the next collection's heap goal at
// floor bytes, given what the last collection found live: the heap goal is
// live + (live + stacks + globals) × GOGC / 100 (runtime/mgcpacer.go), and
// at least the runtime's minimum heap, 4 MiB × GOGC / 100, so GOGC is at
// most floor × 100 / 4 MiB (1 600 for 64 MiB) whatever little is live. It
// is never below base, the GOGC the process started with.
func gcPercentFloor(floor, live, roots uint64, base int) int {
	if live >= floor {
		return base
	}
	scan := live + roots
	if scan == 0 {
		return base
	}
	pct := min((floor-live)*100/scan, floor*100/minHeapAt100)
	return int(max(pct, uint64(base)))
}

// minHeapAt100 is the Go runtime's minimum heap goal at GOGC 100
// (defaultHeapMinimum), scaled by GOGC like the goal itself.
const minHeapAt100 = 4 << 20

// gcFloorMetrics are what gcPercentFloor reads after each collection, in
// runtime/metrics' names: the live heap the collection marked, and the
// stacks and globals it scans.
var gcFloorMetrics = []string{"/gc/heap/live:bytes", "/gc/scan/stack:bytes", "/gc/scan/globals:bytes"}

// startGCFloor keeps the heap floor (0: off) until the returned stop, which
// puts GOGC back to what it was (the process' GOGC, which it never goes
// below; with collections off it does nothing). It runs after every
// collection, on the runtime's finalizer goroutine: a finalizer set on an
// object nobody holds, set again each time it runs.
func startGCFloor(floor uint64) (stop func()) {
	if floor == 0 {
		return func() {}
	}
	base := debug.SetGCPercent(100)
	debug.SetGCPercent(base)
	if base < 0 { // collections off (debug.SetGCPercent(-1)): nothing to tune
		return func() {}
	}
	var mu sync.Mutex // held while GOGC is set: a stop waits for a tuning under way
	stopped := false
	samples := make([]metrics.Sample, len(gcFloorMetrics))
	for i, name := range gcFloorMetrics {
		samples[i].Name = name
	}
	var tune func(*gcSentinel)
	tune = func(s *gcSentinel) {
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			return
		}
		metrics.Read(samples)
		roots := samples[1].Value.Uint64() + samples[2].Value.Uint64()
		debug.SetGCPercent(gcPercentFloor(floor, samples[0].Value.Uint64(), roots, base))
		runtime.SetFinalizer(s, tune)
	}
	runtime.SetFinalizer(&gcSentinel{}, tune)
	return func() {
		mu.Lock()
		defer mu.Unlock()
		if !stopped {
			stopped = true
			debug.SetGCPercent(base)
		}
	}
}

// gcSentinel is the object whose finalizer runs after each collection; its
// size keeps it out of the tiny allocator, whose blocks are shared and
// collected together.
type gcSentinel struct{ _ [16]byte }
