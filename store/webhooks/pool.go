package webhooks

import (
	"context"
	"maps"
	"sync"
	"time"
)

// pool is the dispatcher's sends, across rounds: Workers in flight at
// most, and never the same delivery twice at once (an entry of this
// consumer's pending list, read again by a scan or by XAUTOCLAIM while its
// send runs or waits, is skipped). Slow endpoints cannot hold the others'
// deliveries (room):
//   - one endpoint has at most perEndpoint sends in flight: every worker
//     but one for each other configured endpoint, half the workers (one)
//     at least; an endpoint alone takes the whole pool, and before a
//     reload adds one beside it that hangs with every worker, the new
//     one's first send waits for one of its tries to end (its timeout);
//   - an endpoint with none in flight is kept a worker: another endpoint's
//     second and later sends leave one idle worker for each configured
//     endpoint with none in flight that has sends waiting or had one in
//     the last recentSends (half the workers at most), so two or more
//     endpoints that hang cannot take every worker between them, and
//     endpoints with nothing to send keep none;
//   - an endpoint whose last try failed as an endpoint down fails (an
//     error, its timeout, a 5xx, 408 or 429; not a 4xx it answered: see
//     Config.Send), or that has not yet ended a try since it was
//     configured (new in the file, or every endpoint at the instance's
//     start), has one send in flight at a time until a try succeeds, and
//     such endpoints together at most half the workers: however many
//     hang, the others keep half the pool once each of them failed a try,
//     and one that hangs from its first send holds one worker until its
//     timeout, not every worker but the others' (a tester's find: a hung
//     endpoint beside a healthy one took 7 workers of 8 for its first
//     60 s timeout, and the healthy one's deliveries went one at a time).
//
// Room grows without a worker falling idle too (a failing endpoint's try
// succeeds, the endpoints change): every waiting send it makes room for
// starts then (fill). With one worker no endpoint is kept apart: a slow
// one holds it.
//
// A delivery with no room to start waits in memory, bounded: waitCap in
// all, waitPerEndpoint for one endpoint, and for maxWait after it was read
// at most (it is dropped then: it stays pending and a later scan reads it
// again, so its send never starts when another instance may have taken it
// over, ClaimIdle after that read); one with no room to wait is refused. A
// freed worker takes the oldest waiting send of the endpoint with room
// that has the fewest sends in flight. A send whose settle failed (Redis
// refused or lost it: a full Redis refuses a failed try's move to the
// retries) is not started again for maxWait: its delivery stays pending,
// and every round's scan read it and sent it again at once.
type pool struct {
	mu              sync.Mutex
	workers         int
	endpoints       map[string]bool      // configured (setEndpoints)
	seen            map[string]time.Time // per endpoint: when a send of it was last taken or ended
	waitCap         int
	waitPerEndpoint int
	maxWait         time.Duration
	busy            int
	byEndpoint      map[string]int      // sends in flight per endpoint
	failing         map[string]bool     // endpoints whose last settled try failed
	unproven        map[string]bool     // endpoints none of whose tries ended yet
	waiting         map[string][]queued // per endpoint, oldest first
	nWaiting        int
	held            map[string]bool      // shard/entry id of each send in flight or waiting
	ended           map[string]bool      // shard/entry id of each send ended since the last mark
	unsettled       map[string]time.Time // shard/entry id of each send whose settle failed: not started again before then
	settleWait      time.Duration
	errs            []error
	wg              sync.WaitGroup // one per send in flight or waiting
	freed           chan struct{}  // a worker fell idle (capacity 1: a wake-up, not a count)
}

// send is one delivery's try and its settling: up says whether the
// endpoint showed itself up (it took the try, or answered refusing it;
// false: it failed as an endpoint down does; a try cut by the
// dispatcher's shutdown says true), err whether its settling failed.
type send func() (up bool, err error)

// recentSends is how long after its last send an endpoint with none in
// flight is kept a worker (pool).
const recentSends = 5 * time.Minute

// queued is a send waiting in the pool.
type queued struct {
	ctx           context.Context
	key, endpoint string
	send          send
	readAt        time.Time
}

func newPool(workers int, claimIdle time.Duration) *pool {
	return &pool{workers: workers, waitCap: 32 * workers, waitPerEndpoint: 16 * workers,
		maxWait: claimIdle / 2, byEndpoint: map[string]int{}, failing: map[string]bool{}, unproven: map[string]bool{}, waiting: map[string][]queued{},
		endpoints: map[string]bool{}, seen: map[string]time.Time{},
		held: map[string]bool{}, ended: map[string]bool{}, unsettled: map[string]time.Time{}, settleWait: claimIdle / 2,
		freed: make(chan struct{}, 1)}
}

// setEndpoints tells the pool which endpoints are configured (each with
// none in flight may be kept a worker; one new to it sends as a failing
// one does until a try succeeds) and forgets what it knew of those no
// longer configured; the waiting sends the change makes room for start.
func (p *pool) setEndpoints(ids []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	known := maps.Clone(p.endpoints)
	clear(p.endpoints)
	for _, id := range ids {
		p.endpoints[id] = true
		if !known[id] {
			p.unproven[id] = true // one send at a time until a try of it ends
		}
	}
	for id := range p.failing {
		if !p.endpoints[id] {
			delete(p.failing, id)
		}
	}
	for id := range p.unproven {
		if !p.endpoints[id] {
			delete(p.unproven, id)
		}
	}
	for id := range p.seen {
		if !p.endpoints[id] {
			delete(p.seen, id)
		}
	}
	p.fill()
}

// kept is how many idle workers another endpoint's second and later sends
// leave (pool): one for each configured endpoint other than except with none in
// flight that has sends waiting or had one within recentSends, half the
// workers at most; p.mu held.
func (p *pool) kept(except string) int {
	n, now := 0, time.Now()
	for ep := range p.endpoints {
		if ep != except && p.byEndpoint[ep] == 0 && (len(p.waiting[ep]) > 0 || now.Sub(p.seen[ep]) < recentSends) {
			n++
		}
	}
	return min(n, p.workers/2)
}

// perEndpoint is the most sends in flight to one endpoint (see pool);
// p.mu held.
func (p *pool) perEndpoint() int {
	return max(p.workers-max(len(p.endpoints)-1, 0), p.half())
}

// half is half the workers, one at least.
func (p *pool) half() int { return max(p.workers/2, 1) }

// room says whether a send to endpoint may start now (see pool); p.mu
// held.
func (p *pool) room(endpoint string) bool {
	n := p.byEndpoint[endpoint]
	if p.busy >= p.workers || n >= p.perEndpoint() {
		return false
	}
	if p.failing[endpoint] {
		if n > 0 {
			return false
		}
		inFailing := 0
		for ep := range p.failing {
			inFailing += p.byEndpoint[ep]
		}
		return inFailing < p.half()
	}
	if n == 0 {
		return true
	}
	if p.unproven[endpoint] {
		return false
	}
	return p.busy < p.workers-p.kept(endpoint)
}

// hasRoom says whether start could take a delivery of an endpoint with
// room: a worker is idle or one more may wait.
func (p *pool) hasRoom() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.busy < p.workers || p.nWaiting < p.waitCap
}

// mark is called before each read of deliveries whose entries go to
// start: a send that ends from then on is settled (acknowledged, or moved
// to the retries) after that read may have returned its entry, so start
// refuses it until the next mark. The reads and starts are one
// goroutine's (Run's, or Step's), one round after another.
func (p *pool) mark() {
	p.mu.Lock()
	clear(p.ended)
	now := time.Now()
	for key, until := range p.unsettled {
		if !now.Before(until) {
			delete(p.unsettled, key)
		}
	}
	p.mu.Unlock()
}

// start takes the send of the delivery key to endpoint, read just now,
// unless ctx has ended, it is in flight or waiting already, or its send
// ended since the read began (mark): it runs at once if there is room
// for it, else waits if it may; taken says it did either.
func (p *pool) start(ctx context.Context, key, endpoint string, fn send) (taken bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if ctx.Err() != nil || p.held[key] || p.ended[key] { // ctx checked under mu: a send that ended after it did makes room for none
		return false
	}
	if until, ok := p.unsettled[key]; ok && time.Now().Before(until) {
		return false
	}
	q := queued{ctx: ctx, key: key, endpoint: endpoint, send: fn, readAt: time.Now()}
	if p.endpoints[endpoint] {
		p.seen[endpoint] = q.readAt
	}
	switch {
	case p.room(endpoint):
		p.busy++
		p.byEndpoint[endpoint]++
		go p.run(q)
	case p.nWaiting < p.waitCap && len(p.waiting[endpoint]) < p.waitPerEndpoint:
		p.waiting[endpoint] = append(p.waiting[endpoint], q)
		p.nWaiting++
	default:
		return false
	}
	p.held[key] = true
	p.wg.Add(1)
	return true
}

// run sends q, then the waiting sends its worker has room for, one at a
// time, until none.
func (p *pool) run(q queued) {
	for {
		up, err := q.send()
		p.mu.Lock()
		if err != nil {
			p.errs = append(p.errs, err)
			p.unsettled[q.key] = time.Now().Add(p.settleWait)
		}
		delete(p.unproven, q.endpoint) // a try ended, whichever way: failing says the rest
		switch {
		case up:
			delete(p.failing, q.endpoint)
		case p.endpoints[q.endpoint]: // a removed endpoint's tries fail at once: nothing to learn
			p.failing[q.endpoint] = true
		}
		if p.endpoints[q.endpoint] {
			p.seen[q.endpoint] = time.Now()
		}
		p.busy--
		if p.byEndpoint[q.endpoint]--; p.byEndpoint[q.endpoint] == 0 {
			delete(p.byEndpoint, q.endpoint)
		}
		delete(p.held, q.key)
		p.ended[q.key] = true
		p.wg.Done()
		next, ok := p.next()
		if ok {
			p.busy++
			p.byEndpoint[next.endpoint]++
		}
		p.fill() // room may have grown past this worker (a failing endpoint's try succeeded)
		p.mu.Unlock()
		if !ok {
			select {
			case p.freed <- struct{}{}:
			default:
			}
			return
		}
		q = next
	}
}

// next takes the oldest waiting send of the endpoint with room that has
// the fewest sends in flight (a worker is idle: the caller's), dropping
// on the way those whose ctx ended or that waited past maxWait; p.mu
// held.
func (p *pool) next() (queued, bool) {
	best := ""
	for ep, list := range p.waiting {
		for len(list) > 0 && (list[0].ctx.Err() != nil || time.Since(list[0].readAt) > p.maxWait) {
			p.drop(list[0])
			list = list[1:]
		}
		if len(list) == 0 {
			delete(p.waiting, ep)
			continue
		}
		p.waiting[ep] = list
		if p.room(ep) && (best == "" || p.byEndpoint[ep] < p.byEndpoint[best]) {
			best = ep
		}
	}
	if best == "" {
		return queued{}, false
	}
	list := p.waiting[best]
	q := list[0]
	if p.waiting[best] = list[1:]; len(list) == 1 {
		delete(p.waiting, best)
	}
	p.nWaiting--
	return q, true
}

// fill starts every waiting send there is room for, each on a worker of
// its own; p.mu held.
func (p *pool) fill() {
	for {
		q, ok := p.next()
		if !ok {
			return
		}
		p.busy++
		p.byEndpoint[q.endpoint]++
		go p.run(q)
	}
}

// drop forgets the waiting send q: its delivery stays pending; p.mu held.
func (p *pool) drop(q queued) {
	delete(p.held, q.key)
	p.nWaiting--
	p.wg.Done()
}

// dropWaiting forgets every waiting send (shutting down).
func (p *pool) dropWaiting() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for ep, list := range p.waiting {
		for _, q := range list {
			p.drop(q)
		}
		delete(p.waiting, ep)
	}
}

// takeErrs returns the errors of the sends ended since the last call.
func (p *pool) takeErrs() []error {
	p.mu.Lock()
	defer p.mu.Unlock()
	errs := p.errs
	p.errs = nil
	return errs
}
