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
// expires (Config.LeaseTTL). Nothing is allowed that the shared counter
// did not give: a lease only moves when requests are counted in Redis,
// never how many. What it costs: requests an instance took ahead and did
// not spend are lost to the user until the counter refills, at most
// leaseCap(limit) - 1 per instance and counter, for a lease's lifetime (a
// client moving to another instance, or stopping). The size follows the
// counter's requests seen here in the last lease lifetime, so a client
// that sends one request now and then takes one at a time, as without
// leases, and one that hammers an instance takes leaseCap at a time.
// Room counters (and their members' shares) are never leased: one room's
// members are spread over instances, where the user's own requests mostly
// come through one connection.

// leaseCap is the most one lease of limit l takes: an eighth of its burst,
// so a full burst needs eight instances each holding a full lease to be
// stranded; 1 (no lease) for bursts under 16.
func leaseCap(l limits.Limit) int { return l.Burst / 8 }

// leasable reports whether c may be counted from a lease.
func leasable(c limits.Check) bool {
	return c.Scope != limits.Room && c.Member == "" && leaseCap(c.Limit) > 1
}

// lease is what this instance holds of one counter.
type lease struct {
	mu        sync.Mutex
	spare     int       // requests taken ahead, to count here until until
	until     time.Time // when spare expires
	remaining int       // the shared counter's remaining at the last grant
	reset     time.Time // when the counter is back to its burst, as of the last grant
	window    time.Time // start of the current window (one lease lifetime long)
	hits      int       // the counter's requests seen here in that window
	last      int       // … and in the window before
	fetching  bool      // a lease of more than one request is being asked of Redis
}

// spend counts one request: from the lease when it holds one (ok), and in
// any case as a hit of the window.
func (e *lease) spend(now time.Time, ttl time.Duration) (limits.Decision, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.hit(now, ttl)
	return e.take(now)
}

// take counts one request from what the lease holds, if anything.
// Called with e.mu held.
func (e *lease) take(now time.Time) (limits.Decision, bool) {
	if e.spare == 0 || !now.Before(e.until) {
		e.spare = 0
		return limits.Decision{}, false
	}
	e.spare--
	return limits.Decision{Allowed: true, Remaining: e.remaining + e.spare, Reset: max(0, e.reset.Sub(now))}, true
}

// hit counts a request in the window, rolling it when a lifetime has
// passed. Called with e.mu held.
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

// want is how many requests to take from the shared counter of limit l
// for a request spend could not count: as many as came here in the last
// window (or this one so far), within 1..leaseCap(l); but one while
// another request's lease of more is on its way (fetching: this one's is,
// and grant or abort must be told), so that concurrent requests of one
// counter do not each take a lease, drain the counter between them and
// be refused while this instance holds what they took.
func (e *lease) want(l limits.Limit) (n int, fetching bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	n = min(max(1, e.hits, e.last), leaseCap(l))
	if n == 1 || e.fetching {
		return 1, false
	}
	e.fetching = true
	return n, true
}

// abort ends a lease fetch that got no answer.
func (e *lease) abort() {
	e.mu.Lock()
	e.fetching = false
	e.mu.Unlock()
}

// grant records what the shared counter gave: d its decision, taken the
// requests it took (the one being counted among them), fetching what want
// said. It returns d with the requests the lease holds added to its
// remaining; a refusal is turned into an allowance when the lease holds a
// request meanwhile (a concurrent request's lease came back first).
func (e *lease) grant(d limits.Decision, taken int, fetching bool, now time.Time, ttl time.Duration) limits.Decision {
	e.mu.Lock()
	defer e.mu.Unlock()
	if fetching {
		e.fetching = false
	}
	if !d.Allowed || taken < 1 {
		if held, ok := e.take(now); ok {
			return held
		}
		return d
	}
	if !now.Before(e.until) {
		e.spare = 0
	}
	e.spare += taken - 1
	e.until, e.remaining, e.reset = now.Add(ttl), d.Remaining, now.Add(d.Reset)
	d.Remaining += e.spare
	return d
}

// idle reports a lease holding nothing and seeing no requests for two
// lifetimes: forgetting it changes nothing.
func (e *lease) idle(now time.Time, ttl time.Duration) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return !now.Before(e.until) && now.Sub(e.window) >= 2*ttl
}

// maxLeases bounds the leases an instance keeps; past it the idle ones
// are forgotten, and when that frees too few, all (the requests they held
// are lost to their users until the counters refill, never given twice).
const maxLeases = 100_000

// leaseSweep is how often the idle leases are forgotten.
const leaseSweep = 10 * time.Second

// leaseTable is an instance's leases by counter key.
type leaseTable struct {
	ttl   time.Duration
	mu    sync.Mutex
	m     map[string]*lease
	swept time.Time
}

func newLeaseTable(ttl time.Duration) *leaseTable {
	return &leaseTable{ttl: ttl, m: map[string]*lease{}}
}

// get returns the lease of key, a new one when there is none.
func (t *leaseTable) get(key string, now time.Time) *lease {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e, ok := t.m[key]; ok {
		return e
	}
	if len(t.m) >= maxLeases || now.Sub(t.swept) >= leaseSweep {
		t.sweep(now)
	}
	e := &lease{}
	t.m[key] = e
	return e
}

// sweep forgets the idle leases, and all of them when that leaves the
// table more than half full. Called with t.mu held.
func (t *leaseTable) sweep(now time.Time) {
	t.swept = now
	for k, e := range t.m {
		if e.idle(now, t.ttl) {
			delete(t.m, k)
		}
	}
	if len(t.m) > maxLeases/2 {
		t.m = map[string]*lease{}
	}
}

// size is how many leases the table keeps.
func (t *leaseTable) size() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.m)
}
