package main

import (
	"maps"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"testing"
	"time"
	"weak"
)

// REALSYNC_GC_MIN_HEAP: 64 MiB by default, 0 off, GOMEMLIMIT's suffixes,
// 1 MiB..1 TiB.
func TestGCMinHeapSetting(t *testing.T) {
	base := map[string]string{"REALSYNC_JWT_SECRET": "0123456789abcdef0123456789abcdef"}
	tests := []struct {
		name  string
		value string // "": unset
		want  uint64
		err   string
	}{
		{"Default", "", 64 << 20, ""},
		{"Off", "0", 0, ""},
		{"ZeroWithUnit", "0MiB", 0, ""},
		{"MiB", "128MiB", 128 << 20, ""},
		{"GiB", "2GiB", 2 << 30, ""},
		{"KiB", "2048KiB", 2 << 20, ""},
		{"Bytes", "1048576", 1 << 20, ""},
		{"BytesWithB", "1048576B", 1 << 20, ""},
		{"TiB", "1TiB", 1 << 40, ""},
		{"BelowAMiB", "1023KiB", 0, "REALSYNC_GC_MIN_HEAP"},
		{"AboveATiB", "1025GiB", 0, "REALSYNC_GC_MIN_HEAP"},
		{"Overflow", "18446744073709551615KiB", 0, "REALSYNC_GC_MIN_HEAP"},
		{"SILikeUnit", "64MB", 0, "REALSYNC_GC_MIN_HEAP"},
		{"LowerCase", "64mib", 0, "REALSYNC_GC_MIN_HEAP"},
		{"Negative", "-64MiB", 0, "REALSYNC_GC_MIN_HEAP"},
		{"UnitOnly", "MiB", 0, "REALSYNC_GC_MIN_HEAP"},
		{"Spaces", "64 MiB", 0, "REALSYNC_GC_MIN_HEAP"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env := maps.Clone(base)
			if tc.value != "" {
				env["REALSYNC_GC_MIN_HEAP"] = tc.value
			}
			c, ok := parseCase(t, env, nil, tc.err)
			if ok && c.GCMinHeap != tc.want {
				t.Fatalf("GCMinHeap %d, want %d", c.GCMinHeap, tc.want)
			}
		})
	}
}

// gcPercentFloor puts the next heap goal at the floor, the runtime's
// minimum heap (which GOGC scales) included, and never below the process'
// own GOGC.
func TestGCPercentFloor(t *testing.T) {
	const mib = 1 << 20
	tests := []struct {
		name               string
		floor, live, roots uint64
		base               int
		want               int
	}{
		// goal = live + (live + roots) × GOGC/100 = floor
		{"SmallHeap", 64 * mib, 6 * mib, 2 * mib, 100, 725},
		{"NoRoots", 64 * mib, 8 * mib, 0, 100, 700},
		{"HalfTheFloor", 64 * mib, 32 * mib, 0, 100, 100},
		{"PastHalf", 64 * mib, 40 * mib, 1 * mib, 100, 100},
		{"PastTheFloor", 64 * mib, 80 * mib, 1 * mib, 100, 100},
		{"BaseAbove", 64 * mib, 8 * mib, 0, 1000, 1000},
		{"BaseBelow", 64 * mib, 40 * mib, 0, 50, 60},
		// the runtime's minimum heap, 4 MiB × GOGC/100, bounds it
		{"Tiny", 64 * mib, 1 * mib, mib * 3 / 10, 100, 1600},
		{"TinyLargeFloor", 1 << 30, 1 << 10, 0, 100, 25600},
		{"TinyBaseAbove", 64 * mib, 1 * mib, 0, 3000, 3000},
		{"Empty", 64 * mib, 0, 0, 100, 100},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := gcPercentFloor(tc.floor, tc.live, tc.roots, tc.base); got != tc.want {
				t.Fatalf("gcPercentFloor(%d, %d, %d, %d) = %d, want %d", tc.floor, tc.live, tc.roots, tc.base, got, tc.want)
			}
		})
	}
}

// The floor retunes GOGC after every collection: raised while the live
// heap is small, back to the process' own once half the floor is live,
// raised again when that is let go; its stop puts the process' own back
// for good. Not parallel: GOGC is the process'.
func TestGCFloorFollowsTheLiveHeap(t *testing.T) {
	const floor = 96 << 20
	// the process' own GOGC is 100 for the test (whatever GOGC says),
	// and put back after it
	const base = 100
	defer debug.SetGCPercent(debug.SetGCPercent(base))
	gogc := func() int64 {
		s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
		metrics.Read(s)
		return int64(s[0].Value.Uint64())
	}
	// await collects until GOGC is what ok wants (the floor runs on the
	// finalizer goroutine, after the collection)
	await := func(what string, ok func(int64) bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; {
			runtime.GC()
			if ok(gogc()) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("GOGC %d after 10 s of collections; want %s", gogc(), what)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	stop := startGCFloor(floor)
	defer stop()
	await("raised", func(p int64) bool { return p > int64(base) })
	held := make([]byte, floor*3/4)
	await("the process' own", func(p int64) bool { return p == int64(base) })
	runtime.KeepAlive(held)
	held = nil
	await("raised again", func(p int64) bool { return p > int64(base) })
	stop()
	if p := gogc(); p != int64(base) {
		t.Fatalf("GOGC %d after stop, want %d", p, base)
	}
	for range 3 {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if p := gogc(); p != int64(base) {
		t.Fatalf("GOGC %d after stop and collections, want %d", p, base)
	}
}

// collectBurst gives back what a burst left in sync.Pools (one collection
// only moves a pool's content to its victim cache, kept until the next),
// and stops at two collections when the stacks did not shrink by a MiB.
func TestCollectBurstEmptiesPools(t *testing.T) {
	// an idle goroutine whose stack shrinks by less than a MiB at each
	// collection is no reason to collect again
	grown, stop := make(chan struct{}), make(chan struct{})
	go func() {
		growStack(200)
		close(grown)
		<-stop
	}()
	<-grown
	defer close(stop)
	var pool sync.Pool
	buf := new([64 << 10]byte)
	kept := weak.Make(buf)
	pool.Put(buf)
	buf = nil
	if n := collectBurst(); n != 2 {
		t.Errorf("%d collections, want 2: the stacks shrank by less than a MiB", n)
	}
	if kept.Value() != nil {
		t.Fatal("a pooled buffer outlived collectBurst")
	}
	runtime.KeepAlive(&pool)
	if n := collectBurst(); n != 2 {
		t.Errorf("%d collections with no stack left to shrink by a MiB, want 2", n)
	}
}

// collectBurst collects again while the goroutines' stacks shrink by a
// MiB or more (one collection halves a stack), up to maxBurstCollections:
// 256 idle goroutines whose stacks grew to 64 KiB (16 MiB in all, a MiB
// still given back by the fourth collection) are back to a sixteenth of
// it.
func TestCollectBurstShrinksStacks(t *testing.T) {
	const goroutines = 256
	stacks := func() int64 {
		s := []metrics.Sample{{Name: "/memory/classes/heap/stacks:bytes"}}
		metrics.Read(s)
		return int64(s[0].Value.Uint64())
	}
	runtime.GC()
	base := stacks()
	grown, stop := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			growStack(48)
			grown <- struct{}{}
			<-stop
		})
	}
	for range goroutines {
		<-grown
	}
	defer func() { close(stop); wg.Wait() }()
	before := stacks() - base
	if before < goroutines*48<<10 {
		t.Fatalf("the goroutines' stacks grew by %d bytes, want at least %d", before, goroutines*48<<10)
	}
	if n := collectBurst(); n != maxBurstCollections {
		t.Errorf("%d collections, want %d (the stacks shrank at each)", n, maxBurstCollections)
	}
	if after := stacks() - base; after > before/10 {
		t.Fatalf("the goroutines' stacks hold %d bytes more than before them after collectBurst, %d before it: want at most a tenth", after, before)
	}
}

// growStack uses about n KiB of its goroutine's stack.
//
//go:noinline
func growStack(n int) byte {
	var b [1 << 10]byte
	b[n%len(b)] = byte(n)
	if n == 0 {
		return b[0]
	}
	return growStack(n-1) + b[(n*7)%len(b)]
}
