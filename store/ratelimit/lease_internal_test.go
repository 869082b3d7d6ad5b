package ratelimit

import (
	"testing"
	"time"

	"github.com/realsync/realsync/internal/limits"
)

// A lease is spent until it expires; what it held then is dropped, and
// its size follows the hits of the last window.
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
	if n, fetching := e.want(l); n != 5 || !fetching {
		t.Fatalf("want %d (fetching %v) after 5 hits, want 5", n, fetching)
	}
	// while that lease is on its way, another request asks for one
	if n, fetching := e.want(l); n != 1 || fetching {
		t.Fatalf("want %d (fetching %v) beside a fetch, want 1", n, fetching)
	}
	d := e.grant(limits.Decision{Allowed: true, Remaining: 70, Reset: 10 * time.Hour}, 5, true, t0, ttl)
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
	// held requests expire with the lease
	// a refusal that comes back while the lease holds a request takes it
	e.grant(limits.Decision{Allowed: true, Remaining: 60}, 3, false, t0.Add(700*time.Millisecond), ttl)
	if d := e.grant(limits.Decision{Retry: time.Second}, 0, false, t0.Add(800*time.Millisecond), ttl); !d.Allowed || e.spare != 1 {
		t.Fatalf("refusal beside 2 held: %+v, %d still held", d, e.spare)
	}
	if _, ok := e.spend(t0.Add(1700*time.Millisecond), ttl); ok {
		t.Fatal("spent an expired lease")
	}
	// a new window remembers the last one's hits (10, 1 in this one)
	if n, _ := e.want(l); n != 10 {
		t.Fatalf("want %d in a new window after 10 hits, want 10 (the cap)", n)
	}
	e.abort()
	// two windows without hits: back to one at a time, and idle
	if !e.idle(t0.Add(5*time.Second), ttl) {
		t.Fatal("not idle after 3 s without hits")
	}
	e.spend(t0.Add(5*time.Second), ttl)
	if n, fetching := e.want(l); n != 1 || fetching {
		t.Fatalf("want %d after an idle gap, want 1", n)
	}
	// a refusal grants nothing
	if d := e.grant(limits.Decision{Retry: time.Second}, 0, false, t0.Add(5*time.Second), ttl); d.Allowed || e.spare != 0 {
		t.Fatalf("refusal granted: %+v, %d held", d, e.spare)
	}
}

// The table forgets idle leases every leaseSweep, and every lease when
// it fills with busy ones.
func TestLeaseTableBounded(t *testing.T) {
	const ttl = time.Second
	tab := newLeaseTable(ttl)
	t0 := time.Unix(1_800_000_000, 0)
	tab.get("a", t0).spend(t0, ttl)
	tab.get("b", t0).spend(t0, ttl)
	if tab.size() != 2 {
		t.Fatalf("%d leases, want 2", tab.size())
	}
	later := t0.Add(leaseSweep)
	tab.get("b", later) // a known key: no sweep
	tab.get("b", later).spend(later, ttl)
	tab.get("c", later) // a new key, a sweep due: a goes (idle), b stays
	if _, ok := tab.m["a"]; ok || tab.size() != 2 {
		t.Fatalf("after the sweep: %d leases, a kept: %v", tab.size(), ok)
	}
	for i := range maxLeases {
		tab.get(string(rune('A'+i%26))+string(rune(i)), later).spend(later, ttl)
	}
	if tab.size() > maxLeases {
		t.Fatalf("%d leases, more than %d", tab.size(), maxLeases)
	}
}
