package matchmaking

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/realsync/realsync/rooms"
)

// Defaults of a MatcherConfig.
const (
	DefaultInterval    = 250 * time.Millisecond
	DefaultLeaseTTL    = 3 * time.Second
	DefaultRepairAfter = 5 * time.Second
	DefaultPassTimeout = 30 * time.Second
	DefaultWalk        = 1000 // ≈ 16 ms of Redis per pass (BenchmarkPass)
	DefaultSweep       = 1000
)

// Observer counts what the matcher and the service do (metrics); every
// method must be safe for concurrent use and quick.
type Observer interface {
	// Searching is how many tickets mode's queue holds, as this instance,
	// holding the mode's lease, read it.
	Searching(mode string, n int)
	// Released: this instance no longer holds mode's lease (another
	// instance took it, or the mode has no tickets left): its Searching
	// figure is withdrawn, so that only the holder reports one.
	Released(mode string)
	// Matched is one match of mode and how long each of its tickets
	// waited, told by the completion (a pass's or a repair's) that
	// recorded the match's room: once per match.
	Matched(mode string, waits []time.Duration)
	// Ended counts n tickets of mode that ended unmatched: outcome
	// "expired" (a pass of this instance's) or "cancelled" (through this
	// instance).
	Ended(mode, outcome string, n int)
	// PassCut counts a pass of mode, this instance's, cut by its budget
	// (PassBudget.Work): the next pass goes on from there.
	PassCut(mode string)
	// CommitNotReplicated counts a commit of a match of mode, or a
	// user's notice of it (Notifier), that the replicas asked for did not
	// acknowledge in time (ErrCommitNotReplicated,
	// ErrNoticeNotReplicated): held (told false: a later repair tells its
	// users, or tells that user again), or told all the same (the
	// replicas short for too long: ErrToldUnreplicated for a notice).
	CommitNotReplicated(mode string, told bool)
}

// MatcherConfig is what a Matcher needs; cmd/realsyncd wires it.
type MatcherConfig struct {
	Config
	Rooms    RoomOpener
	Notifier Notifier
	Logger   *slog.Logger
	// Holder names this instance in the leases (its instance id).
	Holder string
	// Interval between ticks (DefaultInterval); LeaseTTL how long a
	// mode's lease outlives its last renewal (DefaultLeaseTTL), renewed
	// every Interval (at most a third of LeaseTTL) while its pass holds a
	// slot or a tick listed it within LeaseTTL: a killed instance's modes
	// pass to another after it, a live one's do not (but one whose modes
	// it cannot list, or cannot pass for want of a slot).
	Interval, LeaseTTL time.Duration
	// RepairAfter: a pending match older than this (its instance died
	// between the pass and the room) is completed by the lease holder.
	RepairAfter time.Duration
	// PassTimeout cuts a pass, its matches' completion included, and the
	// renewals of its lease with it (DefaultPassTimeout): a pass that long
	// is stuck on a call, so its mode is not held forever (the matches it
	// left pending are repaired, their users told once).
	PassTimeout time.Duration
	// Walk and Sweep bound a pass (DefaultWalk, DefaultSweep), and so
	// does Budget (zero fields: DefaultBudget's): a pass cut by it ends
	// early, the mode's next pass going on from the cut (PassCut).
	Walk, Sweep int
	Budget      PassBudget
}

// Matcher runs the passes: every Interval, a tick lists the modes with
// tickets and, for each not passing, takes (or renews) its lease, so one
// instance at a time matches a mode, and starts its pass when it holds it
// (modeConcurrency passes at once). The leases held are renewed apart
// (renewing), each mode on its own, a pass under way or not. A pass is
// atomic in Redis (tickets grouped, marked matched and recorded pending,
// expired ones ended); then, per match (completeConcurrency at once), it
// makes the room with the seats reserved for exactly its users, commits
// the match to it, tells each user (match_found, once per user and
// match: the Notifier's contract; completeConcurrency of a match's users
// at once) and records the room on the tickets, which ends the pending
// record. So at most modeConcurrency × completeConcurrency² calls are
// under way, and the Queue, RoomOpener and Notifier it is given must be
// safe for concurrent use. A pass runs apart from the ticks: a slow one
// (a Cluster master of its mode's slot failing over, hundreds of
// matches) keeps its lease and holds up no other mode (but that it keeps
// one of the modeConcurrency slots: a pass that finds none free in time
// gives its mode to the other instances for a while), up to PassTimeout,
// which cuts it and gives its lease up; a lease another instance took
// meanwhile ends its pass at once. A failed lease call is logged, and so is a backfill room
// whose seats could not be read (the pass goes on without it). Pending
// matches a dead instance (or a cut pass) left are completed the same
// way (idempotent: the room id derives from the match, the notice is not
// repeated).
type Matcher struct {
	cfg MatcherConfig
	// slots are the passes under way (modeConcurrency at most); freedAt
	// is when one was last given back (unix ns).
	slots   *semaphore.Weighted
	freedAt atomic.Int64
	// wg counts the passes under way.
	wg sync.WaitGroup
	mu sync.Mutex
	// from is where each held mode's next pass starts its walk (a page of
	// a large queue at a time); release drops a mode's.
	from map[string]string
	// resting holds the modes whose pass was cut here (stuck on a call),
	// until when this instance leaves them to the others.
	resting map[string]time.Time
	// held is the modes whose lease this instance holds, and when it was
	// last taken or renewed; passes the modes whose pass is under way;
	// renewals the modes whose renewal is under way (closed once over).
	held   map[string]time.Time
	passes map[string]*passRun
	// continuous: Run's passes go on at once while they find work.
	continuous bool
	renewals   map[string]chan struct{}
	// listed is when each held mode was last listed by a tick; kept
	// until when a held mode found empty stays listed (Queue.Forget).
	listed map[string]time.Time
	kept   map[string]time.Time
	// warned is when each mode last logged matches told without their
	// replicas (warnUnreplicated)
	warned map[string]time.Time
}

// passRun is one mode's pass under way (in Run, the passes that follow
// one another while they make matches).
type passRun struct {
	cancel  context.CancelFunc // ends the pass: its lease was lost
	lost    atomic.Bool
	slotted atomic.Bool // it holds one of the modeConcurrency slots
	// refreshed is when its backfill rooms were last read (pass); only
	// the pass's goroutine touches it.
	refreshed time.Time
}

// NewMatcher returns a Matcher as cfg says. It panics when cfg.Rules do
// not pass RuleSet.Normalize, as a programming error: NewService, built
// from the same Config, reports them as an error first.
func NewMatcher(cfg MatcherConfig) *Matcher {
	c, err := cfg.Config.withDefaults()
	if err != nil {
		panic("matchmaking.NewMatcher: " + err.Error())
	}
	cfg.Config = c
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&cfg.Interval, DefaultInterval)
	def(&cfg.LeaseTTL, DefaultLeaseTTL)
	def(&cfg.RepairAfter, DefaultRepairAfter)
	def(&cfg.PassTimeout, DefaultPassTimeout)
	if cfg.Walk == 0 {
		cfg.Walk = DefaultWalk
	}
	if cfg.Sweep == 0 {
		cfg.Sweep = DefaultSweep
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Matcher{cfg: cfg, slots: semaphore.NewWeighted(modeConcurrency), from: map[string]string{},
		resting: map[string]time.Time{}, held: map[string]time.Time{}, passes: map[string]*passRun{},
		renewals: map[string]chan struct{}{}, listed: map[string]time.Time{}, kept: map[string]time.Time{},
		warned: map[string]time.Time{}}
}

// Run ticks every Interval until ctx ends, renewing the leases it holds
// apart (renewing), then waits for the passes under way and gives up its
// leases.
func (m *Matcher) Run(ctx context.Context) {
	m.continuous = true
	stop := m.renewing(ctx)
	t := time.NewTicker(m.cfg.Interval)
	defer t.Stop()
	for {
		m.tick(ctx, true)
		select {
		case <-ctx.Done():
			m.wg.Wait()
			stop()
			dctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			for _, mode := range m.heldModes() {
				_ = m.cfg.Queue.DropLease(dctx, mode, m.cfg.Holder)
				m.release(mode)
			}
			return
		case <-t.C:
		}
	}
}

// Round is one tick, its leases renewed (renewing) and the modes listed
// again (without starting passes) every third of LeaseTTL until the
// passes it started are over; it returns the modes whose lease this
// instance holds then, having reported each one's queue (Searching; not
// a mode whose pass ctx's end stopped): a mode whose lease another
// instance took during its pass is not held (Released), nor is one whose
// pass was cut (at PassTimeout; a pass that ctx's end stopped leaves its
// mode held, its lease to lapse or renew). Errors are logged, but those
// of a round whose ctx ended (the shutdown). Tests and tools run rounds;
// Run does not wait for a pass, and Round is not to be called while Run
// runs.
func (m *Matcher) Round(ctx context.Context) []string {
	stop := m.renewing(ctx)
	defer stop()
	m.tick(ctx, true)
	done := make(chan struct{})
	go func() {
		m.wg.Wait()
		close(done)
	}()
	t := time.NewTicker(max(m.cfg.LeaseTTL/3, time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-done:
			return m.heldModes()
		case <-t.C:
			m.tick(ctx, false)
		}
	}
}

// heldModes is the modes whose lease this instance holds, sorted.
func (m *Matcher) heldModes() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Sorted(maps.Keys(m.held))
}

// release withdraws this instance's Searching figure of each of modes and
// forgets where its walk was: the mode is no longer held (no tickets
// left, or another instance's), and an entry kept per mode ever held
// would grow for as long as the instance runs.
func (m *Matcher) release(modes ...string) {
	m.mu.Lock()
	for _, mode := range modes {
		m.forget(mode)
	}
	m.mu.Unlock()
	if m.cfg.Observer != nil {
		for _, mode := range modes {
			m.cfg.Observer.Released(mode)
		}
	}
}

// forget is release's part under m.mu.
func (m *Matcher) forget(mode string) {
	m.forgetHold(mode)
	delete(m.from, mode) // the next holder's walk starts from the lowest
}

// forgetHold forgets that mode is held, its walk's place kept; m.mu held.
func (m *Matcher) forgetHold(mode string) {
	delete(m.held, mode)
	delete(m.listed, mode)
	delete(m.kept, mode)
}

// modeConcurrency is how many modes' passes run at once: modes are
// independent (a lease each, their passes atomic scripts on their queues'
// slots), and a pass waits on its matches' completions, round trips more
// than CPU, so one mode at a time would have each mode wait for every
// other's pass. A pass waiting for a slot while none frees for a third
// of LeaseTTL gives its lease up (another instance may have a slot) and
// waits on in its place (acquire): a pass stuck on its calls keeps its
// slot until they fail or it is cut (PassTimeout), and four stuck, or
// long, must not keep the other modes from every instance.
const modeConcurrency = 4

// tick lists the modes with tickets (within a third of LeaseTTL; each
// listed mode not resting is confirmed: renewing renews a held mode that
// is not passing only while it was listed within LeaseTTL); a held mode
// no longer listed (no tickets left) and not passing is released, its
// lease left to lapse. With start, for each mode listed not passing, it
// takes or renews its lease (completeConcurrency calls at once, each
// bounded by a third of the TTL) and starts its pass when it holds it: a
// pass starts only right after its lease was confirmed. A mode another
// instance holds is not held. A tick that cannot list the modes does
// nothing (one that lists some, Queue.Modes' error aside, goes on with
// those: the others are on a master that is down, with their queues and
// leases): the passes' leases are renewed apart (renewing), so a slow
// listing, or lease calls that hang for some modes, never let a passing
// mode's lease lapse, and the modes not passing go to another instance
// once their listing is LeaseTTL old.
func (m *Matcher) tick(ctx context.Context, start bool) {
	lctx, cancel := context.WithTimeout(ctx, m.cfg.LeaseTTL/3)
	modes, err := m.cfg.Queue.Modes(lctx)
	cancel()
	if err != nil {
		if ctx.Err() == nil { // not the shutdown's own
			m.cfg.Logger.Warn("matchmaking: modes", "err", err)
		}
		if modes == nil {
			return
		}
	}
	m.mu.Lock()
	now := time.Now()
	modes = m.awake(modes)
	for _, mode := range modes {
		if _, held := m.held[mode]; held {
			m.listed[mode] = now
		}
	}
	var unlisted []string
	for mode := range m.held {
		if m.passes[mode] == nil && !slices.Contains(modes, mode) {
			unlisted = append(unlisted, mode)
		}
	}
	for mode, p := range m.passes {
		if _, held := m.held[mode]; !held && !slices.Contains(modes, mode) {
			p.cancel() // let go waiting for a slot (acquire), and no tickets left
		}
	}
	modes = slices.DeleteFunc(modes, func(mode string) bool { return m.passes[mode] != nil })
	m.mu.Unlock()
	if ctx.Err() == nil {
		m.release(unlisted...)
	}
	if !start {
		return
	}
	concurrently(modes, completeConcurrency, func(mode string) error {
		ok, err := m.lease(ctx, mode, false)
		if err != nil {
			return nil // unknown: as it was
		}
		m.mu.Lock()
		_, held := m.held[mode]
		if ok {
			m.held[mode] = time.Now()
			m.listed[mode] = m.held[mode]
			if ctx.Err() == nil {
				m.startPass(ctx, mode)
			}
		}
		m.mu.Unlock()
		if !ok && held { // another instance's
			m.release(mode)
		}
		return nil
	})
}

// renewing renews the lease of every mode held whose last renewal is a
// renewal period old (the smaller of Interval and a third of LeaseTTL):
// of a mode passing (in one of the slots), or not passing but listed
// within LeaseTTL (tick). Each mode's renewal runs on its own (one at a
// time, bounded by a third of LeaseTTL), apart from the ticks: a lease
// call that hangs for one mode (its slot's master failing over), or the
// ticks' listing, delays no other mode's renewal. A renewal that finds
// the lease another instance's, or lapsed, ends the mode's pass under
// way at once (this instance paused past its lease: the holder completes
// and repairs its matches) and releases the mode. stop ends the renewals
// and waits for those under way.
func (m *Matcher) renewing(ctx context.Context) (stop func()) {
	rctx, cancel := context.WithCancel(ctx)
	period := max(min(m.cfg.Interval, m.cfg.LeaseTTL/3), 2*time.Millisecond)
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(period / 2)
		defer t.Stop()
		for {
			select {
			case <-rctx.Done():
				return
			case <-t.C:
			}
			m.mu.Lock()
			now := time.Now()
			for mode, at := range m.held {
				p, listed := m.passes[mode], m.listed[mode]
				due := now.Sub(at) >= period && m.renewals[mode] == nil
				if due && (p != nil && p.slotted.Load() || now.Sub(listed) < m.cfg.LeaseTTL) {
					done := make(chan struct{})
					m.renewals[mode] = done
					wg.Go(func() { m.renew(rctx, mode, at, done) })
				}
			}
			m.mu.Unlock()
		}
	})
	return func() {
		cancel()
		wg.Wait()
	}
}

// renew is one renewal of mode's lease, held since at (renewing); done is
// closed once it is over.
func (m *Matcher) renew(ctx context.Context, mode string, at time.Time, done chan struct{}) {
	defer func() {
		m.mu.Lock()
		delete(m.renewals, mode)
		m.mu.Unlock()
		close(done)
	}()
	m.renewHeld(ctx, mode, at)
}

// renewHeld renews mode's lease, held since at: true when it is still
// this instance's. An answer that it is not (another instance's, or
// lapsed) counts only if no other lease call of the mode answered since
// at (a tick's take after it is newer): the mode is forgotten in the same
// step, its pass under way ends at once (this instance paused past its
// lease: the holder completes and repairs its matches), and it is
// released.
func (m *Matcher) renewHeld(ctx context.Context, mode string, at time.Time) bool {
	ok, err := m.lease(ctx, mode, true)
	if err != nil {
		return false
	}
	m.mu.Lock()
	cur, held := m.held[mode]
	current := held && cur.Equal(at)
	if ok && held {
		m.held[mode] = time.Now()
	}
	p := m.passes[mode]
	lost := !ok && current
	if lost { // forgotten here: a take answered later is a new hold
		m.forget(mode)
	}
	m.mu.Unlock()
	if lost {
		if p != nil && !p.lost.Swap(true) {
			if ctx.Err() == nil {
				m.cfg.Logger.Warn("matchmaking: lease lost during a pass", "mode", mode)
			}
			p.cancel()
		}
		if m.cfg.Observer != nil {
			m.cfg.Observer.Released(mode)
		}
	}
	return ok && held
}

// startPass starts mode's pass, which waits for one of the
// modeConcurrency slots (acquire); m.mu held. A pass cut at PassTimeout
// leaves its mode resting for PassTimeout and gives its lease up
// (released) once the mode's renewal under way is over; the rest runs
// from the drop: a tick takes the mode again only after it.
func (m *Matcher) startPass(ctx context.Context, mode string) {
	if m.passes[mode] != nil {
		return
	}
	pctx, cancel := context.WithCancel(ctx)
	p := &passRun{cancel: cancel}
	m.passes[mode] = p
	m.wg.Go(func() {
		defer cancel()
		cut := false
		// a pass starts only right after its lease was confirmed, the wait
		// for a slot however long; Run passes a mode whose pass made
		// matches again at once (its place in the slots' queue taken
		// anew), not at the next tick: a burst's passes came up to an
		// Interval apart
		for m.acquire(pctx, mode) {
			if !m.confirm(pctx, mode) {
				m.free()
				break
			}
			p.slotted.Store(true)
			var busy bool
			cut, busy = m.passMode(ctx, pctx, mode, p)
			p.slotted.Store(false)
			m.free()
			if cut || !busy || !m.continuous {
				break
			}
		}
		m.mu.Lock()
		delete(m.passes, mode)
		if cut {
			m.resting[mode] = time.Now().Add(m.cfg.PassTimeout + m.cfg.LeaseTTL) // until the drop, below
		}
		m.mu.Unlock()
		if cut {
			m.letGo(ctx, mode)
			m.mu.Lock()
			delete(m.from, mode)
			m.resting[mode] = time.Now().Add(m.cfg.PassTimeout)
			m.mu.Unlock()
		}
	})
}

// confirm renews mode's lease before a pass: false when it is no longer
// this instance's (released) or the call failed.
func (m *Matcher) confirm(ctx context.Context, mode string) bool {
	m.mu.Lock()
	at, held := m.held[mode]
	m.mu.Unlock()
	return held && m.renewHeld(ctx, mode, at)
}

// letGo gives mode's lease up: forgotten (released: its walk's place
// kept), then, once the mode's renewal under way is over (it may renew
// the lease), dropped.
func (m *Matcher) letGo(ctx context.Context, mode string) {
	m.mu.Lock()
	m.forgetHold(mode)
	renewal := m.renewals[mode]
	m.mu.Unlock()
	if m.cfg.Observer != nil {
		m.cfg.Observer.Released(mode)
	}
	if renewal != nil {
		<-renewal
	}
	// dropped even if ctx ended meanwhile (the shutdown's): Run drops the
	// modes held then, which this one no longer is
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), m.cfg.LeaseTTL/3)
	defer cancel()
	if err := m.cfg.Queue.DropLease(dctx, mode, m.cfg.Holder); err != nil {
		m.cfg.Logger.Warn("matchmaking: giving up a pass's lease", "mode", mode, "err", err)
	}
}

// acquire takes one of the modeConcurrency slots for mode's pass, in the
// order the passes asked (semaphore.Weighted serves its waiters first
// come, first served). While no slot frees for a third of LeaseTTL (the
// passes holding them stuck on their calls, or long) it lets the mode go
// (letGo: another instance with a slot free may take it) and waits on in
// its place; given a slot then, it takes the lease again, and gives the
// slot back when another instance holds the mode. false when it has no
// slot, or ctx ended.
func (m *Matcher) acquire(ctx context.Context, mode string) bool {
	d := m.cfg.LeaseTTL / 3
	wctx, stop := context.WithCancel(ctx)
	var (
		wg      sync.WaitGroup
		dropped atomic.Bool
	)
	start := time.Now()
	wg.Go(func() { // no slot freed for d since the wait began: let go
		t := time.NewTimer(d)
		defer t.Stop()
		for {
			select {
			case <-wctx.Done():
				return
			case <-t.C:
			}
			last := max(start.UnixNano(), m.freedAt.Load())
			if left := d - time.Since(time.Unix(0, last)); left > 0 {
				t.Reset(left)
				continue
			}
			m.letGo(ctx, mode)
			dropped.Store(true)
			return
		}
	})
	err := m.slots.Acquire(ctx, 1)
	stop()
	wg.Wait()
	if err == nil && !dropped.Load() {
		return true
	}
	if err == nil {
		if ok, lerr := m.lease(ctx, mode, false); lerr == nil && ok {
			m.mu.Lock()
			now := time.Now()
			m.held[mode], m.listed[mode] = now, now
			m.mu.Unlock()
			return true
		}
		m.free()
	}
	if dropped.Load() {
		m.mu.Lock()
		delete(m.from, mode) // another instance's now, or the shutdown's
		m.mu.Unlock()
	}
	return false
}

// free gives a slot back.
func (m *Matcher) free() {
	m.freedAt.Store(time.Now().UnixNano())
	m.slots.Release(1)
}

// awake is modes but those resting: a mode whose pass was cut here is
// left to the other instances for PassTimeout, so one instance whose
// calls for it hang does not take it back at its next tick; m.mu held.
func (m *Matcher) awake(modes []string) []string {
	now := time.Now()
	for mode, until := range m.resting {
		if now.After(until) {
			delete(m.resting, mode)
		}
	}
	return slices.DeleteFunc(slices.Clone(modes), func(mode string) bool { _, ok := m.resting[mode]; return ok })
}

// lease takes or renews mode's lease for this instance (renew: only
// while it holds it, Queue.Renew), within a third of its TTL, and logs a
// failed call (not the shutdown's).
func (m *Matcher) lease(ctx context.Context, mode string, renew bool) (bool, error) {
	lctx, cancel := context.WithTimeout(ctx, m.cfg.LeaseTTL/3)
	defer cancel()
	call := m.cfg.Queue.Lease
	if renew {
		call = m.cfg.Queue.Renew
	}
	ok, err := call(lctx, mode, m.cfg.Holder, m.cfg.LeaseTTL)
	if err != nil && ctx.Err() == nil {
		m.cfg.Logger.Warn("matchmaking: lease", "mode", mode, "err", err)
	}
	return ok, err
}

// errPassTimeout is the cause of a pass's context ended at PassTimeout.
var errPassTimeout = errors.New("matchmaking: the pass ran past PassTimeout")

// passMode runs mode's pass under pctx (which ends when its lease is
// lost: p.lost), and reports its queue (Searching) while the lease is
// held. A pass cut at PassTimeout (cut true: its caller gives the lease
// up and this instance leaves the mode alone for PassTimeout, awake) is
// stuck on a call, and the mode goes to another instance, which repairs
// what it left pending. A pass whose lease was lost ends at once: the
// holder now completes and repairs its matches.
func (m *Matcher) passMode(ctx, pctx context.Context, mode string, p *passRun) (cut, busy bool) {
	tctx, cancel := context.WithTimeoutCause(pctx, m.cfg.PassTimeout, errPassTimeout)
	busy, err := m.pass(tctx, mode, p)
	// cut by PassTimeout itself, not by pctx's end (a lost lease, a
	// shutdown, a Round's own deadline: those end the pass, the lease
	// left as it is); whichever came first is the cause
	cut = errors.Is(context.Cause(tctx), errPassTimeout)
	cancel()
	if err != nil && ctx.Err() == nil && !p.lost.Load() {
		m.cfg.Logger.Warn("matchmaking: pass", "mode", mode, "err", err)
	}
	if cut {
		m.cfg.Logger.Warn("matchmaking: pass cut, its mode left to other instances", "mode", mode, "for", m.cfg.PassTimeout)
		return true, false
	}
	if m.cfg.Observer != nil && ctx.Err() == nil && !p.lost.Load() {
		// bounded as a lease call: the pass holds its slot, and its lease
		// is renewed, until this returns
		sctx, cancel := context.WithTimeout(pctx, m.cfg.LeaseTTL/3)
		n, serr := m.cfg.Queue.Searching(sctx, mode)
		cancel()
		if serr == nil {
			// not once released (lost meanwhile): only the holder reports
			m.mu.Lock()
			if _, held := m.held[mode]; held && !p.lost.Load() {
				m.cfg.Observer.Searching(mode, n)
			}
			m.mu.Unlock()
		}
	}
	return false, busy && err == nil
}

// pass runs one pass of mode (one of run's) and completes its matches,
// then the pending ones left by a dead instance. A backfill mode's rooms
// are read again (refreshBackfill) by the first pass of a run and then at
// most once an Interval: passes that follow one another at once (Run,
// while they make matches) keep the rooms' records themselves (a pass
// takes the seats it offers off them), and reading every room of the mode
// before each would cost Redis a read per room and pass where a tick's
// pass cost one per room and Interval.
func (m *Matcher) pass(ctx context.Context, mode string, run *passRun) (busy bool, err error) {
	r := m.cfg.Rules.Of(mode)
	if r.Backfill && (run.refreshed.IsZero() || time.Since(run.refreshed) >= m.cfg.Interval) {
		run.refreshed = time.Now()
		// A room whose seats could not be read keeps the count last
		// recorded (a ticket offered a seat it no longer has goes back to
		// the queue): one room's error, a Cluster master of its slot down,
		// must not stop the mode's matches, expiries and repairs.
		if err := m.refreshBackfill(ctx, mode, r); err != nil && ctx.Err() == nil {
			m.cfg.Logger.Warn("matchmaking: backfill rooms' seats", "mode", mode, "err", err)
		}
	}
	m.mu.Lock()
	from := m.from[mode]
	m.mu.Unlock()
	p, err := m.cfg.Queue.Pass(ctx, mode, r, PassParams{Walk: m.cfg.Walk, Sweep: m.cfg.Sweep, Grace: m.cfg.Grace, From: from,
		Budget: m.cfg.Budget})
	if err != nil {
		return false, err
	}
	busy = len(p.Matches) > 0 // a cut pass that made none waits for the tick
	m.mu.Lock()
	if _, held := m.held[mode]; held { // not once lost: released, its walk forgotten
		m.from[mode] = p.Next
	}
	m.mu.Unlock()
	if p.Cut != "" && m.cfg.Observer != nil {
		m.cfg.Observer.PassCut(mode)
	}
	errs := m.completeAll(ctx, mode, p.Matches, r)
	if p.Expired > 0 && m.cfg.Observer != nil {
		m.cfg.Observer.Ended(mode, "expired", p.Expired)
	}
	if p.Left == 0 && len(p.Matches) == 0 {
		// nothing left: the mode leaves the list, unless its time (a
		// create's) is ahead, then not asked again before it (the list is
		// one key: every pass of every empty mode would write it); best
		// effort, the next pass tries again
		m.mu.Lock()
		until := m.kept[mode]
		m.mu.Unlock()
		if time.Now().After(until) {
			until, err := m.cfg.Queue.Forget(ctx, mode)
			if err != nil {
				errs = append(errs, err)
			} else if !until.IsZero() {
				m.mu.Lock()
				if _, held := m.held[mode]; held {
					m.kept[mode] = until
				}
				m.mu.Unlock()
			}
		}
	}
	pending, err := m.cfg.Queue.Pending(ctx, mode)
	if err != nil {
		return busy, errors.Join(append(errs, err)...)
	}
	// a dead instance's leftovers, as many as a pass of its may have made,
	// completeConcurrency at once as a pass's own: one at a time, a few
	// hundred took longer than PassTimeout, which cut the survivor's pass
	// and rested its mode
	pending = slices.DeleteFunc(pending, func(match Match) bool { return m.cfg.Now().Sub(match.At) < m.cfg.RepairAfter })
	errs = append(errs, concurrently(pending, completeConcurrency, func(match Match) error {
		m.cfg.Logger.Info("matchmaking: completing a pending match", "mode", mode, "match", match.ID)
		done, err := m.complete(ctx, match, r, true)
		if err == nil && done {
			m.matched(mode, match) // its first completion did not end it
		}
		return err
	})...)
	return busy, errors.Join(errs...)
}

// refreshBackfill reads the free seats of mode's backfill rooms again
// (players leave, holds lapse, rooms start or close), full ones too, so a
// pass offers what each room can take now; completeConcurrency rooms at
// once (a mode's open match rooms are all read: see pass for how often).
// A room never offers more than the mode's size (r.Size()) less its
// players and held seats, whatever maxPlayers its owner set since.
func (m *Matcher) refreshBackfill(ctx context.Context, mode string, r Rules) error {
	rs, err := m.cfg.Queue.BackfillRooms(ctx, mode)
	if err != nil {
		return err
	}
	return errors.Join(concurrently(rs, completeConcurrency, func(room BackfillRoom) error { return m.refreshRoom(ctx, mode, room, r.Size()) })...)
}

// refreshRoom records backfill room's free seats now (of size seats at
// most), when they changed; a room started or closed is dropped.
func (m *Matcher) refreshRoom(ctx context.Context, mode string, room BackfillRoom, size int) error {
	free, open, err := m.cfg.Rooms.FreeSeats(ctx, room.ID, size)
	if err != nil {
		return err
	}
	if !open {
		free = -1
	}
	if free == room.Free {
		return nil
	}
	room.Free = free
	return m.cfg.Queue.PutBackfill(ctx, mode, room)
}

// completeConcurrency is how many matches of a pass are completed at
// once, and how many users of a match are told at once: a completion is
// a few round trips (room, seats, one notice per user, tickets), so one
// at a time would bound a mode to a few hundred matches a second.
const completeConcurrency = 16

// completeAll completes a pass's matches, completeConcurrency at once,
// and returns their errors.
func (m *Matcher) completeAll(ctx context.Context, mode string, matches []Match, r Rules) []error {
	return concurrently(matches, completeConcurrency, func(match Match) error {
		done, err := m.complete(ctx, match, r, false)
		if err == nil && done {
			m.matched(mode, match)
		}
		return err
	})
}

// matched counts match, completed by this instance (Observer.Matched),
// with each of its tickets' wait.
func (m *Matcher) matched(mode string, match Match) {
	if m.cfg.Observer == nil {
		return
	}
	waits := make([]time.Duration, len(match.Tickets))
	for i, t := range match.Tickets {
		waits[i] = match.At.Sub(t.CreatedAt)
	}
	m.cfg.Observer.Matched(mode, waits)
}

// concurrently runs f on each of items, limit at once, and returns the
// errors it returned.
func concurrently[T any](items []T, limit int, f func(T) error) []error {
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
		sem  = make(chan struct{}, limit)
	)
	for _, it := range items {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := f(it); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return errs
}

// Complete makes match's room (seats reserved for its users) or, for a
// backfill, holds seats of its open room, commits the match to the room
// (Queue.Commit), tells each user, and records the room on its tickets,
// ending the pending record. A backfill the room cannot take any more
// (full, started, closed), or a match whose room was made and closed
// before it was completed (a repair), puts its tickets back in the queue,
// unless the match was committed. Safe to run again for the same match,
// even while a first completion still runs: the room is found, the
// Notifier tells each user of a match once (match_found of a user and
// match id sent already is not sent again), and the commit orders the
// two: of a completion that puts the tickets back and one that tells
// their users, the first to reach the pending record wins, the other
// then telling no one or putting nothing back. It completes a pending
// match (a repair): a backfill's seats may have been held, and taken, by
// a first completion that died before recording the room, so members are
// skipped and holds made again; users the room banned are still refused,
// while the match is not committed. So are, in a match room made by a
// first completion that died, the users its room banned (or kicked) since: their
// tickets go back to the queue barred from the room, and the others are
// told and recorded. A ticket one of whose users is in that room keeps
// the match, its banned user unable to join: sent back, the room's member
// would be matched again, in two matches. A committed match stands
// whatever its room became (locked, full, closed, banning some of its
// users): some of its users may have been told of it. A notice short of
// its replicas (Notifier: ErrNoticeNotReplicated) holds a committed match
// as a commit short of them holds one: the tickets do not record the
// room, and a repair tells again.
func (m *Matcher) Complete(ctx context.Context, match Match, r Rules) error {
	_, err := m.complete(ctx, match, r, true)
	return err
}

// complete is Complete; done is true when this completion ended the
// match's pending record (so a match is counted once, whichever of a
// first completion and a repair records it first), false for a match put
// back or left to another completion.
func (m *Matcher) complete(ctx context.Context, match Match, r Rules, repair bool) (done bool, err error) {
	// the seats are held from the room's script on, for the mode's hold:
	// this side of it by the time its call takes
	until := time.Now().Add(r.Hold())
	match, room, ok, err := m.seat(ctx, match, r, repair)
	if err != nil || !ok {
		return false, err
	}
	// every user told (completeConcurrency at once: each user's log is a
	// slot of its own) before the tickets record the room
	var notices []userNotice
	for _, t := range match.Tickets {
		for _, uid := range t.Users {
			notices = append(notices, userNotice{uid, MatchFound{TicketID: t.ID, MatchID: match.ID, RoomID: room,
				Mode: match.Mode, Region: match.Region, Team: t.Team, Leader: t.Users[0], SeatHeldUntil: until}})
		}
	}
	// a notice short of its replicas holds the match (not assigned: a
	// repair tells again and waits again), unless they have been short
	// for too long (told all the same)
	var held error
	for _, err := range concurrently(notices, completeConcurrency, func(n userNotice) error {
		return m.cfg.Notifier.MatchFound(ctx, n.uid, n.e)
	}) {
		anyway := errors.Is(err, ErrToldUnreplicated)
		if anyway || errors.Is(err, ErrNoticeNotReplicated) {
			if m.cfg.Observer != nil {
				m.cfg.Observer.CommitNotReplicated(match.Mode, anyway)
			}
			if anyway {
				m.warnUnreplicated(match.Mode, err)
				continue
			}
		}
		if held == nil {
			held = err // one is enough: the rest failed alike (Redis), or are held alike
		}
	}
	if held != nil {
		return false, held
	}
	return m.cfg.Queue.Assign(ctx, match, room, until)
}

// seat makes match's room or holds its seats of a backfill's, and commits
// the match to it (Queue.Commit). It returns the match to tell (less the
// tickets put back, refused by the room a repair found again) and its
// room; ok is false when none of it is to be told: the room could not
// take it and its tickets went back to the queue, or another completion
// put them back or committed the match first (that one tells them). A
// first hold (repair false) refuses a user in the room or holding a seat
// already (queued again), a repair's does not. A committed match
// (match.Told: a repair of a completion that died telling) holds its
// seats again where the room lets it and stands whatever the room says.
func (m *Matcher) seat(ctx context.Context, match Match, r Rules, repair bool) (_ Match, room string, ok bool, err error) {
	told, hold := match.Told != "", r.Hold()
	gone := func(err error) bool {
		return errors.Is(err, rooms.ErrRoomFull) || errors.Is(err, rooms.ErrNotJoinable) || errors.Is(err, rooms.ErrRoomNotFound)
	}
	refused := (*SeatsRefusedError)(nil)
	// requeue puts tickets back; another completion committed the match
	// first: it stands, and that one tells its users
	requeue := func(barred []string) (Match, string, bool, error) {
		if _, err := m.cfg.Queue.Requeue(ctx, match, barred, m.cfg.Grace); err != nil && !errors.Is(err, ErrMatchTold) {
			return match, "", false, err
		}
		return match, "", false, nil
	}
	if room = match.RoomID; room != "" {
		err := m.cfg.Rooms.ReserveMatchSeats(ctx, room, match.Users(), r.Size(), hold, repair)
		if told && errors.As(err, &refused) { // the others' seats, the banned left out
			err = m.cfg.Rooms.ReserveMatchSeats(ctx, room, slices.DeleteFunc(match.Users(), func(u string) bool {
				return slices.Contains(refused.Users, u)
			}), r.Size(), hold, repair)
		}
		switch {
		case told && (errors.As(err, &refused) || gone(err)):
			// the match stands: its users are told of the room as it is
		case errors.As(err, &refused):
			return requeue(match.ticketsOf(refused.Users))
		case gone(err):
			return requeue(nil)
		case err != nil:
			return match, "", false, err
		}
	} else {
		if t, err := m.cfg.Queue.Get(ctx, match.Tickets[0].ID); err == nil {
			match.OwnerName = t.Name // else the store's placeholder name
		}
		room, err = m.cfg.Rooms.OpenMatchRoom(ctx, match, r.Size(), hold)
		switch {
		case told && (errors.Is(err, rooms.ErrRoomNotFound) || errors.Is(err, rooms.ErrRoomFull)):
			// closed, or full (its owner lowered maxPlayers, friends took
			// the seats of users who left), since it was told: it stands
			room = match.Told
		case errors.As(err, &refused) && room != "":
			// a repair, the room having banned some users since: their
			// tickets go back to the queue, as a refused backfill's
			kept, err := m.requeueRefused(ctx, match, room, refused.Users)
			if errors.Is(err, ErrMatchTold) || err == nil && len(kept.Tickets) == 0 {
				return match, "", false, nil
			} else if err != nil {
				return match, "", false, err
			}
			match = kept
		case errors.Is(err, rooms.ErrRoomNotFound):
			return requeue(nil) // made before a crash, closed since
		case err != nil:
			return match, "", false, err
		}
		if r.Backfill && !errors.Is(err, rooms.ErrRoomNotFound) { // full or not: a seat may free up later
			free := r.Size() - len(match.Users())
			if err := m.cfg.Queue.PutBackfill(ctx, match.Mode, BackfillRoom{ID: room, Region: match.Region,
				Rating: match.Rating, EqKey: match.EqKey, Free: max(free, 0)}); err != nil {
				return match, "", false, err
			}
		}
	}
	if told {
		// committed again to its room (changing nothing) for the commit's
		// wait for replicas: the first completion's may have ended short
		room = match.Told
	}
	ok, err = m.cfg.Queue.Commit(ctx, match, room)
	if errors.Is(err, ErrCommitNotReplicated) {
		if m.cfg.Observer != nil {
			m.cfg.Observer.CommitNotReplicated(match.Mode, ok)
		}
		if ok { // told all the same: the replicas short for too long
			m.warnUnreplicated(match.Mode, err)
			err = nil
		}
	}
	return match, room, ok, err
}

// warnUnreplicated logs that mode's matches are told without their
// replicas' acknowledgement: once a minute a mode at most (the metric
// counts each; a broken replica would log every match of its master's
// modes).
func (m *Matcher) warnUnreplicated(mode string, err error) {
	m.mu.Lock()
	last, now := m.warned[mode], time.Now()
	log := now.Sub(last) >= time.Minute
	if log {
		m.warned[mode] = now
	}
	m.mu.Unlock()
	if log {
		m.cfg.Logger.Warn("matchmaking: matches told without their replicas' acknowledgement (logged once a minute)", "mode", mode, "err", err)
	}
}

// userNotice is one user's match_found.
type userNotice struct {
	uid string
	e   MatchFound
}

// requeueRefused puts match's tickets that hold any of users (whole: a
// party is not split) back in the queue, barred from room, which refused
// those users, releases the seats their users hold in it (a first
// completion's), and returns match without them: the pending record keeps
// the others, so a crash before they are told leaves them to a repair.
// The seats go only once the tickets went back: a stale completion's
// refusal (another completion told and recorded the match meanwhile)
// must not take a told user's seat.
func (m *Matcher) requeueRefused(ctx context.Context, match Match, room string, users []string) (Match, error) {
	barred := match.ticketsOf(users)
	back := match
	back.RoomID, back.Tickets = room, nil
	kept := match
	kept.Tickets = nil
	for _, t := range match.Tickets {
		if slices.Contains(barred, t.ID) {
			back.Tickets = append(back.Tickets, t)
		} else {
			kept.Tickets = append(kept.Tickets, t)
		}
	}
	gone, err := m.cfg.Queue.Requeue(ctx, back, barred, m.cfg.Grace)
	if err != nil {
		return kept, err
	}
	var free []string
	for _, t := range back.Tickets {
		if slices.Contains(gone, t.ID) {
			free = append(free, t.Users...)
		}
	}
	if len(free) > 0 {
		if err := m.cfg.Rooms.ReleaseMatchSeats(ctx, room, free); err != nil {
			return kept, err
		}
	}
	return kept, nil
}
