package ratelimit

import (
	"sync"
	"time"

	"github.com/realsync/realsync/internal/limits"
)

// Leases. A user's or address's counter is shared by every instance, and
// checking it costs a Redis round trip and a script per request: about as
// much Redis time as the room read a GET answers (docs/BENCHMARKS.md,
// "Security costs"). So an instance that sees a counter's requests come
// often takes several of them from the shared counter at once (the script's
// "lease" mode: as many as the counter allows now, up to what was asked)
// and counts the next ones itself, until they are spent or the lease
// expires (leaseLife: Config.LeaseTTL at most). Nothing is allowed that
// the shared counter did not give: a lease only moves when requests are
// counted in Redis, never how many; and as a lease lives no longer than
// the counter takes to refill it, requests taken early and spent late
// let at most leaseCap(limit) more than the burst through at once, over
// all instances. What it costs: requests an instance took ahead and did
// not spend are lost to the user until the counter refills, at most
// leaseCap(limit) - 1 per instance and counter, for a lease's lifetime (a
// client moving to another instance, or stopping), or until the
// instance's next call for that counter hands them back. The size follows the
// counter's requests seen here in the last window (Config.LeaseTTL), so a client
// that sends one request now and then takes one at a time, as without
// leases, and one that hammers an instance takes leaseCap at a time.
// Room counters (and their members' shares) are never leased: one room's
// members are spread over instances, where the user's own requests mostly
// come through one connection.

// leaseCap is the most one lease of limit l takes: an eighth of its burst,
// so a full burst needs eight instances each holding a full lease to be
// stranded; 1 (no lease) for bursts under 16.
func leaseCap(l limits.Limit) int { return l.Burst / 8 }

// leaseLife is how long a lease of limit l lives: ttl, or the time the
// counter takes to refill a full lease when that is shorter.
func leaseLife(l limits.Limit, ttl time.Duration) time.Duration {
	return min(ttl, time.Duration(leaseCap(l))*l.Interval())
}

// leasable reports whether c may be counted from a lease.
func leasable(c limits.Check) bool {
	return c.Scope != limits.Room && c.Member == "" && leaseCap(c.Limit) > 1
}

// lease is what this instance holds of one counter.
type lease struct {
	mu        sync.Mutex
	spare     int        // requests taken ahead, to count here until until
	until     time.Time  // when spare expires
	tat       int64      // the TAT (µs) the last grant left: its requests end there
	lastN     int        // the requests the last grant took
	stale     leaseGrant // what a lease held when it expired: handed back with the next call
	remaining int        // the shared counter's remaining at the last grant
	reset     time.Time  // when the counter is back to its burst, as of the last grant
	window    time.Time  // start of the current window (one ttl long)
	hits      int        // the counter's requests seen here in that window
	last      int        // … and in the window before
	fetching  bool       // a lease of more than one request is being asked of Redis
}

// spend counts one request: from the lease when it holds one (ok), and in
// any case as a hit of the window.
func (e *lease) spend(now time.Time, ttl time.Duration) (limits.Decision, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.hit(now, ttl)
	return e.take(now)
}

// leaseGrant is what a lease call took from the shared counter (taken;
// to hand back: n) and the TAT it left.
type leaseGrant struct {
	taken, n int
	tat      int64
}

// expire moves what an expired lease held to stale, to hand back: the
// requests just before the TAT its last grant left, no more than that
// grant took (what it held beside from an earlier grant, and any older
// stale not yet handed back, is dropped: lost to its user until the
// counter refills, as the requests of other grants in between cannot be
// told apart). Called with e.mu held.
func (e *lease) expire(now time.Time) {
	if e.spare > 0 && !now.Before(e.until) {
		e.stale = leaseGrant{n: min(e.spare, e.lastN), tat: e.tat}
		e.spare = 0
	}
}

// take counts one request from what the lease holds, if anything.
// Called with e.mu held.
func (e *lease) take(now time.Time) (limits.Decision, bool) {
	e.expire(now)
	if e.spare == 0 {
		return limits.Decision{}, false
	}
	e.spare--
	return limits.Decision{Allowed: true, Remaining: e.remaining + e.spare, Reset: max(0, e.reset.Sub(now))}, true
}

// hit counts a request in the window, rolling it when ttl has passed: the
// last window's hits are kept when it ended less than a ttl ago. Called
// with e.mu held.
func (e *lease) hit(now time.Time, ttl time.Duration) {
	if now.Sub(e.window) >= ttl {
		e.last = 0
		if now.Sub(e.window) < 2*ttl {
			e.last = e.hits
		}
		e.window, e.hits = now, 0
	}
	e.hits++
}

// want is, for a request spend could not count, how many requests to take
// from the shared counter of limit l: as many as came here in the last
// window (or this one so far), within 1..leaseCap(l); but one while
// another request's lease of more is on its way (fetching: this one's is,
// and grant or abort must be told), so that concurrent requests of one
// counter do not each take a lease, drain the counter between them and
// be refused while this instance holds what they took. back is what an
// expired lease held, to hand back with this call (gcra_check.lua hands
// back only what the counter did not refill meanwhile); the call owns it:
// handed back once, lost (never given twice) if the call fails.
func (e *lease) want(l limits.Limit) (n int, back leaseGrant, fetching bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	back, e.stale = e.stale, leaseGrant{}
	n = min(max(1, e.hits, e.last), leaseCap(l))
	if n == 1 || e.fetching {
		n = 1
	} else {
		e.fetching, fetching = true, true
	}
	// no more handed back than this call takes: should the call run twice
	// (a client's retry after a lost reply), the second run takes at least
	// what it hands back again; the rest is lost, never given twice
	back.n = min(back.n, n)
	return n, back, fetching
}

// abort ends a lease fetch that got no answer.
func (e *lease) abort() {
	e.mu.Lock()
	e.fetching = false
	e.mu.Unlock()
}

// grant records what the shared counter gave: d its decision, g the
// requests it took (the one being counted among them) and the TAT it left,
// fetching what want said, life the lease's lifetime. It returns d with the requests the
// lease holds added to its remaining; a refusal is turned into an
// allowance when the lease holds a request meanwhile (a concurrent
// request's lease came back first).
func (e *lease) grant(d limits.Decision, g leaseGrant, fetching bool, now time.Time, life time.Duration) limits.Decision {
	e.mu.Lock()
	defer e.mu.Unlock()
	if fetching {
		e.fetching = false
	}
	if !d.Allowed || g.taken < 1 {
		if held, ok := e.take(now); ok {
			return held
		}
		return d
	}
	e.expire(now)
	e.remaining, e.reset = d.Remaining, now.Add(d.Reset)
	if g.taken > 1 { // a lease: what it holds lives from now (a single request leaves alone what another grant holds)
		e.spare += g.taken - 1
		e.until, e.tat, e.lastN = now.Add(life), g.tat, g.taken
	}
	d.Remaining += e.spare
	return d
}

// maxLeases bounds the leases an instance keeps in each of its two
// generations: past it, counters it has no lease of are counted in Redis.
const maxLeases = 100_000

// leaseTable is an instance's leases by counter key, in two generations:
// every ttl the current one becomes the previous and the previous is
// dropped, and a lease found in the previous moves to the current. A lease
// not looked up for two rotations is forgotten; what it held expired by
// then (a lease lives ttl at most). No scan, no lock held for more than a
// map lookup.
type leaseTable struct {
	ttl       time.Duration
	mu        sync.Mutex
	cur, prev map[string]*lease
	rotated   time.Time
}

func newLeaseTable(ttl time.Duration) *leaseTable {
	return &leaseTable{ttl: ttl, cur: map[string]*lease{}, prev: map[string]*lease{}}
}

// get returns the lease of key, a new one when there is none, nil when the
// table is full.
func (t *leaseTable) get(key string, now time.Time) *lease {
	t.mu.Lock()
	defer t.mu.Unlock()
	if now.Sub(t.rotated) >= t.ttl {
		t.prev, t.cur, t.rotated = t.cur, map[string]*lease{}, now
	}
	if e, ok := t.cur[key]; ok {
		return e
	}
	if e, ok := t.prev[key]; ok {
		delete(t.prev, key)
		t.cur[key] = e
		return e
	}
	if len(t.cur) >= maxLeases {
		return nil
	}
	e := &lease{}
	t.cur[key] = e
	return e
}
