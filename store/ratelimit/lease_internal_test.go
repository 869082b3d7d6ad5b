package ratelimit

import (
	"strconv"
	"testing"
	"time"

	"github.com/realsync/realsync/internal/limits"
)

// A lease is spent until it expires; what it held then is handed back with
// the next call; its size follows the hits of the last window.
func TestLeaseExpiresAndWindowRolls(t *testing.T) {
	const ttl = time.Second
	l := limits.Limit{Rate: 1, Period: time.Hour, Burst: 80}
	t0 := time.Unix(1_800_000_000, 0)
	e := &lease{}
	for i := range 5 {
		if _, ok := e.spend(t0, ttl); ok {
			t.Fatalf("spend %d of an empty lease: ok", i)
		}
	}
	if n, back, fetching := e.want(l); n != 5 || back.n != 0 || !fetching {
		t.Fatalf("want %d (back %d, fetching %v) after 5 hits, want 5", n, back.n, fetching)
	}
	// while that lease is on its way, another request asks for one
	if n, _, fetching := e.want(l); n != 1 || fetching {
		t.Fatalf("want %d (fetching %v) beside a fetch, want 1", n, fetching)
	}
	d := e.grant(limits.Decision{Allowed: true, Remaining: 70, Reset: 10 * time.Hour}, leaseGrant{taken: 5, tat: 100}, true, t0, ttl)
	if d.Remaining != 74 {
		t.Fatalf("granted decision %+v, want 70 + 4 held remaining", d)
	}
	for i := range 4 {
		d, ok := e.spend(t0.Add(500*time.Millisecond), ttl)
		if !ok || d.Remaining != 73-i || d.Reset != 10*time.Hour-500*time.Millisecond {
			t.Fatalf("spend %d: %+v %v", i, d, ok)
		}
	}
	if _, ok := e.spend(t0.Add(600*time.Millisecond), ttl); ok {
		t.Fatal("a fifth spend of 4 held: ok")
	}
	// a refusal that comes back while the lease holds a request takes it
	e.grant(limits.Decision{Allowed: true, Remaining: 60}, leaseGrant{taken: 3, tat: 200}, false, t0.Add(700*time.Millisecond), ttl)
	if d := e.grant(limits.Decision{Retry: time.Second}, leaseGrant{}, false, t0.Add(800*time.Millisecond), ttl); !d.Allowed || e.spare != 1 {
		t.Fatalf("refusal beside 2 held: %+v, %d still held", d, e.spare)
	}
	// what an expired lease held is not spent but handed back, once
	if _, ok := e.spend(t0.Add(1700*time.Millisecond), ttl); ok {
		t.Fatal("spent an expired lease")
	}
	// a new window remembers the last one's hits (10; 1 in this one)
	if n, back, _ := e.want(l); n != 10 || back != (leaseGrant{n: 1, tat: 200}) {
		t.Fatalf("want %d, back %+v in a new window after 10 hits and 1 held past expiry; want 10 (the cap), 1 before 200", n, back)
	}
	e.abort()
	if _, back, _ := e.want(l); back.n != 0 {
		t.Fatalf("%d handed back twice", back.n)
	}
	e.abort()
	// a window that ended a ttl or more ago is forgotten: 10 hits, then a
	// gap of 2.5 ttl, and the lease is back to one at a time
	t1 := t0.Add(time.Hour)
	for range 10 {
		e.spend(t1, ttl)
	}
	e.spend(t1.Add(2500*time.Millisecond), ttl)
	if n, _, fetching := e.want(l); n != 1 || fetching {
		t.Fatalf("want %d after an idle gap, want 1", n)
	}
	// a refusal grants nothing
	if d := e.grant(limits.Decision{Retry: time.Second}, leaseGrant{}, false, t1.Add(3*time.Second), ttl); d.Allowed || e.spare != 0 {
		t.Fatalf("refusal granted: %+v, %d held", d, e.spare)
	}
	// a grant over a lease that expired keeps its leftover for handing back
	e.grant(limits.Decision{Allowed: true, Remaining: 50}, leaseGrant{taken: 4, tat: 300}, false, t1.Add(4*time.Second), ttl)
	e.grant(limits.Decision{Allowed: true, Remaining: 40}, leaseGrant{taken: 2, tat: 400}, false, t1.Add(6*time.Second), ttl)
	if e.spare != 1 || e.stale != (leaseGrant{n: 3, tat: 300}) {
		t.Fatalf("%d held, %+v to hand back; want 1 and 3 before 300", e.spare, e.stale)
	}
	// held from two grants: no more is handed back than the last took
	e.grant(limits.Decision{Allowed: true, Remaining: 30}, leaseGrant{taken: 3, tat: 450}, false, t1.Add(6200*time.Millisecond), ttl)
	e.grant(limits.Decision{Allowed: true, Remaining: 20}, leaseGrant{taken: 2, tat: 500}, false, t1.Add(6500*time.Millisecond), ttl)
	e.spend(t1.Add(8*time.Second), ttl)
	if e.stale != (leaseGrant{n: 2, tat: 500}) {
		t.Fatalf("%+v to hand back of 4 held from three grants, want 2 (the last grant's) before 500", e.stale)
	}
}

// A lease lives no longer than its counter takes to refill it.
func TestLeaseLife(t *testing.T) {
	for _, tc := range []struct {
		l    limits.Limit
		ttl  time.Duration
		want time.Duration
	}{
		{limits.Limit{Rate: 10, Period: time.Second, Burst: 30}, time.Second, 300 * time.Millisecond},
		{limits.Limit{Rate: 100, Period: time.Second, Burst: 300}, time.Second, 370 * time.Millisecond},
		{limits.Limit{Rate: 10, Period: time.Second, Burst: 100}, time.Second, time.Second},
		{limits.Limit{Rate: 1, Period: time.Hour, Burst: 80}, 250 * time.Millisecond, 250 * time.Millisecond},
	} {
		if got := leaseLife(tc.l, tc.ttl); got != tc.want {
			t.Errorf("leaseLife(%+v, %v) = %v, want %v", tc.l, tc.ttl, got, tc.want)
		}
	}
}

// The table keeps two generations: a lease not looked up for two
// rotations is forgotten, one looked up moves to the current, and a full
// generation takes no new lease (its counters are counted in Redis).
func TestLeaseTableGenerations(t *testing.T) {
	const ttl = time.Second
	tab := newLeaseTable(ttl)
	t0 := time.Unix(1_800_000_000, 0)
	a, b := tab.get("a", t0), tab.get("b", t0)
	t1 := t0.Add(ttl) // rotation: a and b in the previous generation
	if tab.get("a", t1) != a {
		t.Fatal("a lost at the first rotation")
	}
	t2 := t1.Add(ttl) // rotation: b, not looked up since t0, is dropped
	if tab.get("a", t2) != a {
		t.Fatal("a, looked up every rotation, lost")
	}
	if tab.get("b", t2) == b || tab.size() != 2 {
		t.Fatalf("b kept after two rotations unseen (%d leases)", tab.size())
	}
	for i := range maxLeases - 2 {
		if tab.get(strconv.Itoa(i), t2) == nil {
			t.Fatalf("lease %d refused below the bound", i)
		}
	}
	if tab.get("one too many", t2) != nil {
		t.Fatal("a lease past the bound")
	}
	if tab.get("a", t2) != a || tab.size() != maxLeases {
		t.Fatalf("the full table lost a (%d leases)", tab.size())
	}
	t3 := t2.Add(ttl) // rotation: room again
	if tab.get("one too many", t3) == nil {
		t.Fatal("no lease after a rotation emptied the current generation")
	}
}

// A single request's grant coming back after a lease's leaves what the
// lease holds alone: its lifetime and what it would hand back.
func TestLeaseSingleGrantKeepsTheLease(t *testing.T) {
	const ttl = time.Second
	l := limits.Limit{Rate: 1, Period: time.Hour, Burst: 80}
	t0 := time.Unix(1_800_000_000, 0)
	e := &lease{}
	for range 5 {
		e.spend(t0, ttl)
	}
	n, _, fetching := e.want(l)
	if m, _, f := e.want(l); m != 1 || f {
		t.Fatalf("second want %d, %v", m, f)
	}
	e.grant(limits.Decision{Allowed: true, Remaining: 70}, leaseGrant{taken: n, tat: 100}, fetching, t0, 400*time.Millisecond)
	e.grant(limits.Decision{Allowed: true, Remaining: 69}, leaseGrant{taken: 1, tat: 110}, false, t0.Add(200*time.Millisecond), 400*time.Millisecond)
	if _, ok := e.spend(t0.Add(400*time.Millisecond), ttl); ok {
		t.Fatal("the lease outlived its 400 ms: a single grant extended it")
	}
	if e.stale != (leaseGrant{n: 4, tat: 100}) {
		t.Fatalf("to hand back %+v, want 4 before 100", e.stale)
	}
	// no more is handed back than the call takes
	if m, back, _ := e.want(l); back.n > m {
		t.Fatalf("hands back %d with a call taking %d", back.n, m)
	}
}

// size is how many leases the table keeps.
func (t *leaseTable) size() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.cur) + len(t.prev)
}
