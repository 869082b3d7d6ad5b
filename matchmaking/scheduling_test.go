package matchmaking

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The matcher's scheduling against fakes: fairness of the pass slots,
// stale renewal answers, and the maps it keeps.

// burstQueue: n modes always listed, every lease granted, each pass takes d.
type burstQueue struct {
	Queue
	modes  []string
	d      time.Duration
	mu     sync.Mutex
	passes map[string]int
}

func (q *burstQueue) Modes(context.Context) ([]string, error) { return q.modes, nil }
func (q *burstQueue) Lease(context.Context, string, string, time.Duration) (bool, error) {
	return true, nil
}
func (q *burstQueue) Renew(context.Context, string, string, time.Duration) (bool, error) {
	return true, nil
}
func (q *burstQueue) DropLease(context.Context, string, string) error { return nil }
func (q *burstQueue) Pass(ctx context.Context, mode string, _ Rules, _ PassParams) (Pass, error) {
	select {
	case <-time.After(q.d):
	case <-ctx.Done():
		return Pass{}, ctx.Err()
	}
	q.mu.Lock()
	q.passes[mode]++
	q.mu.Unlock()
	return Pass{}, nil
}
func (q *burstQueue) Pending(context.Context, string) ([]Match, error) { return nil, nil }

func (q *burstQueue) Forget(context.Context, string) (time.Time, error) { return time.Time{}, nil }

// More modes than slots on one healthy instance: every mode is passed in
// turn (the slots serve their waiters first come, first served, and a
// wait that gives its lease up keeps its place), so each gets its share
// of the passes: the fewest of any mode at least 2 and half the most
// (healthy here: 11 against 12, and 5 against 6). Reviewers' finds, each
// a case: a wait gave up at a third of LeaseTTL whatever the slots did,
// and its mode, at the front of the queue, rested and went to the back,
// so the same modes starved (at the defaults, 24 modes of 300 ms passes:
// a mode 10.7 s without a pass in 20 s; here 2 modes passed once in 7 s;
// that code rebuilt, 2 to 6 passes against 15 or 16); then, with healthy
// passes longer than that third, the waits gave their places up with
// their leases and the modes holding the slots took them again at their
// next tick (4 of 8 modes passed twice or less in 8 s). Shares, not the
// longest wait between passes: a stalled machine slows every mode alike.
func TestNoModeStarves(t *testing.T) {
	for _, c := range []struct {
		name      string
		modes     int
		pass, run time.Duration
	}{
		{"more modes than slots", 24, 100 * time.Millisecond, 7 * time.Second},
		{"behind long passes", 8, 700 * time.Millisecond, 8 * time.Second},
	} {
		t.Run(c.name, func(t *testing.T) {
			q := &burstQueue{d: c.pass, passes: map[string]int{}}
			for i := range c.modes {
				q.modes = append(q.modes, fmt.Sprintf("m%02d", i))
			}
			m := NewMatcher(MatcherConfig{Config: Config{Queue: q}, Holder: "a", PassTimeout: time.Minute,
				Interval: 83 * time.Millisecond, LeaseTTL: time.Second})
			runMatcher(t, m)
			time.Sleep(c.run)
			q.mu.Lock()
			defer q.mu.Unlock()
			fewest, most, who := -1, 0, ""
			for _, mode := range q.modes {
				n := q.passes[mode]
				if fewest < 0 || n < fewest {
					fewest, who = n, mode
				}
				most = max(most, n)
			}
			if fewest < 2 || fewest*2 < most {
				t.Errorf("%s passed %d times on a healthy instance, the busiest mode %d (passes per mode in %v: %v)",
					who, fewest, most, c.run, q.passes)
			}
		})
	}
}

// blockingHandler blocks the "lease lost" warning until resume is closed
// (a slow log sink, or the renewing goroutine descheduled there).
type blockingHandler struct {
	slog.Handler
	warned, resume chan struct{}
	once           sync.Once
}

func (h *blockingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *blockingHandler) Handle(_ context.Context, r slog.Record) error {
	if strings.Contains(r.Message, "lease lost during a pass") {
		h.once.Do(func() { close(h.warned) })
		<-h.resume
	}
	return nil
}

type releaseRaceQueue struct {
	Queue
	lapse                    atomic.Bool
	passes                   atomic.Int32
	inPass1, inPass2, warned chan struct{}
	renewsInPass2            atomic.Int32
	pass2                    atomic.Bool
}

func (q *releaseRaceQueue) Modes(context.Context) ([]string, error) { return []string{"duel"}, nil }
func (q *releaseRaceQueue) Lease(context.Context, string, string, time.Duration) (bool, error) {
	q.lapse.Store(false) // the lease lapsed: free for a take, renewed after it
	return true, nil
}
func (q *releaseRaceQueue) Renew(context.Context, string, string, time.Duration) (bool, error) {
	if q.pass2.Load() {
		q.renewsInPass2.Add(1)
	}
	return !q.lapse.Load(), nil
}
func (q *releaseRaceQueue) DropLease(context.Context, string, string) error  { return nil }
func (q *releaseRaceQueue) Pending(context.Context, string) ([]Match, error) { return nil, nil }
func (q *releaseRaceQueue) Pass(ctx context.Context, mode string, _ Rules, _ PassParams) (Pass, error) {
	switch q.passes.Add(1) {
	case 1:
		close(q.inPass1)
		<-q.warned // the renewal that found the lease lapsed is logging it
		return Pass{}, nil
	case 2:
		q.lapse.Store(false)
		close(q.inPass2)
		q.pass2.Store(true)
		select {
		case <-time.After(time.Second):
		case <-ctx.Done():
		}
		q.pass2.Store(false)
		return Pass{}, ctx.Err()
	}
	<-ctx.Done()
	return Pass{}, ctx.Err()
}

// A renewal that finds the lease lapsed forgets the mode in the same
// locked step as it decides so: a tick that took the free lease and
// started a new pass meanwhile keeps its hold, renewed. The release came
// after (the renewal logging, descheduled), and the new pass ran
// unrenewed, its lease lapsing under it (a reviewer's find).
func TestLapsedLeaseForgetsNoNewHold(t *testing.T) {
	h := &blockingHandler{warned: make(chan struct{}), resume: make(chan struct{})}
	q := &releaseRaceQueue{inPass1: make(chan struct{}), inPass2: make(chan struct{}), warned: h.warned}
	m := NewMatcher(MatcherConfig{Config: Config{Queue: q}, Holder: "a", Interval: 10 * time.Millisecond,
		LeaseTTL: 300 * time.Millisecond, PassTimeout: time.Minute, Logger: slog.New(h)})
	runMatcher(t, m)
	<-q.inPass1
	q.lapse.Store(true)
	select {
	case <-q.inPass2:
	case <-time.After(2 * time.Second):
		close(h.resume)
		t.Fatal("no second pass")
	}
	close(h.resume)
	time.Sleep(600 * time.Millisecond) // twice the TTL into pass 2
	m.mu.Lock()
	_, held := m.held["duel"]
	passing := m.passes["duel"] != nil
	m.mu.Unlock()
	if n := q.renewsInPass2.Load(); passing && (!held || n == 0) {
		t.Errorf("duel's second pass under way 600 ms (TTL 300 ms): held %v, %d renewals", held, n)
	}
}

func (q *releaseRaceQueue) Forget(context.Context, string) (time.Time, error) {
	return time.Time{}, nil
}

// phasedQueue lists what the test sets; leases as held says; passes of
// s* stall until their ctx ends, others return a walk cursor.
type phasedQueue struct {
	Queue
	mu    sync.Mutex
	modes []string
	grant bool
}

func (q *phasedQueue) set(modes []string) { q.mu.Lock(); q.modes = modes; q.mu.Unlock() }
func (q *phasedQueue) Modes(context.Context) ([]string, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.modes, nil
}
func (q *phasedQueue) Lease(context.Context, string, string, time.Duration) (bool, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.grant, nil
}
func (q *phasedQueue) Renew(ctx context.Context, mode, h string, ttl time.Duration) (bool, error) {
	return q.Lease(ctx, mode, h, ttl)
}
func (q *phasedQueue) DropLease(context.Context, string, string) error { return nil }
func (q *phasedQueue) Pass(ctx context.Context, mode string, _ Rules, _ PassParams) (Pass, error) {
	if mode[0] == 's' {
		<-ctx.Done()
		return Pass{}, ctx.Err()
	}
	return Pass{Next: "1000|" + mode}, nil
}
func (q *phasedQueue) Pending(context.Context, string) ([]Match, error) { return nil, nil }

func (m *Matcher) sizes() (from, listed, resting, held int, fromKeys []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k := range m.from {
		fromKeys = append(fromKeys, k)
	}
	return len(m.from), len(m.listed), len(m.resting), len(m.held), fromKeys
}

// The matcher keeps entries of the modes it holds only: listing modes
// another instance holds stamped each of them for good (with
// REALSYNC_MODES unset, every mode name clients ever queued in), and a
// pass that gave up for want of a slot kept its walk's place after its
// mode was forgotten (reviewer's finds).
func TestListingKeepsNoModeHeldElsewhere(t *testing.T) {
	q := &phasedQueue{grant: false} // every mode another instance's
	var modes []string
	for i := range 1000 {
		modes = append(modes, fmt.Sprintf("m%d", i))
	}
	q.set(modes)
	m := NewMatcher(MatcherConfig{Config: Config{Queue: q}, Holder: "a", Interval: time.Millisecond,
		LeaseTTL: 300 * time.Millisecond})
	runMatcher(t, m)
	time.Sleep(100 * time.Millisecond)
	q.set(nil) // the modes' tickets all gone
	time.Sleep(200 * time.Millisecond)
	if _, listed, _, held, _ := m.sizes(); listed != 0 {
		t.Errorf("no mode listed any more, none held (%d): m.listed still has %d entries", held, listed)
	}
}

// See TestListingKeepsNoModeHeldElsewhere.
func TestSlotlessPassKeepsNoWalk(t *testing.T) {
	q := &phasedQueue{grant: true}
	q.set([]string{"e"})
	m := NewMatcher(MatcherConfig{Config: Config{Queue: q}, Holder: "a", Interval: 10 * time.Millisecond,
		LeaseTTL: 300 * time.Millisecond, PassTimeout: time.Minute})
	runMatcher(t, m)
	time.Sleep(50 * time.Millisecond) // e passed: from[e] set
	q.set([]string{"e", "s0", "s1", "s2", "s3"})
	time.Sleep(400 * time.Millisecond)      // s* stall in the 4 slots; e's pass goes slotless
	q.set([]string{"s0", "s1", "s2", "s3"}) // e's tickets gone
	time.Sleep(time.Second)
	if n, _, _, held, keys := m.sizes(); n != 0 {
		t.Errorf("e no longer listed nor held (held %d: the stalled s*): walk cursors kept %v", held, keys)
	}
}

func (q *phasedQueue) Forget(context.Context, string) (time.Time, error) { return time.Time{}, nil }

// forgetCounter counts the Forget calls, each answering that the mode's
// time is an hour ahead.
type forgetCounter struct {
	burstQueue
	forgets int
}

func (q *forgetCounter) Forget(context.Context, string) (time.Time, error) {
	q.mu.Lock()
	q.forgets++
	q.mu.Unlock()
	return time.Now().Add(time.Hour), nil
}

// An empty mode whose time is ahead (its last create's TTL and grace) is
// asked to leave the list once, not at every pass: the list is one key.
// Every pass of every empty mode wrote it (a reviewer's find: 50 empty
// modes, 200 scripts a second).
func TestEmptyModeAskedToLeaveOnce(t *testing.T) {
	q := &forgetCounter{burstQueue: burstQueue{passes: map[string]int{}}}
	for i := range 50 {
		q.modes = append(q.modes, fmt.Sprintf("m%02d", i))
	}
	runMatcher(t, NewMatcher(MatcherConfig{Config: Config{Queue: q}, Holder: "a", Interval: 20 * time.Millisecond}))
	time.Sleep(time.Second)
	q.mu.Lock()
	defer q.mu.Unlock()
	if passes := len(q.passes); q.forgets > 50 || passes == 0 {
		t.Errorf("50 empty modes passed (%d passed at all) 1 s: %d Forget calls, want one each", passes, q.forgets)
	}
}

// hopeless: one mode whose queue never fills a match; every pass spends its
// budget (Cut), ~12 ms of Redis each (DefaultBudget's figure), no match made.
type hopeless struct {
	listedQueue
	passes, renews atomic.Int64
}

func (q *hopeless) Pass(ctx context.Context, _ string, _ Rules, _ PassParams) (Pass, error) {
	q.passes.Add(1)
	time.Sleep(12 * time.Millisecond) // the script holding Redis
	return Pass{Cut: "t", Next: "1 t", Left: 5000}, nil
}
func (q *hopeless) Renew(context.Context, string, string, time.Duration) (bool, error) {
	q.renews.Add(1)
	return true, nil
}

// A mode whose passes are cut by their budget without making a match
// (a queue that never fills one) is passed once a tick, not back to back:
// every such pass holds Redis for its budget (a reviewer's find: 236
// passes in 3 s, 94% of the time in its script, when a cut counted as
// work).
func TestCutPassWithoutMatchesWaitsForTheTick(t *testing.T) {
	q := &hopeless{}
	q.set([]string{"5v5"})
	runMatcher(t, NewMatcher(MatcherConfig{Config: Config{Queue: q}, Holder: "a"})) // defaults: Interval 250 ms
	time.Sleep(3 * time.Second)
	p, r := q.passes.Load(), q.renews.Load()
	// one pass a tick (250 ms) would be 12 in 3 s
	if p > 24 {
		t.Errorf("a mode making no match, cut every pass: %d passes (%.0f%% of the 3 s in its script) and %d Renew calls in 3 s; one per tick would be 12", p, float64(p)*12/3000*100, r)
	}
}

// expiring leases: a lease lapses TTL after its last take or renewal;
// the listing fails after the first tick; 24 busy modes share the 4 slots.
type lapsing struct {
	Queue
	mu       sync.Mutex
	modes    []string
	listings int
	until    map[string]time.Time
	bad      atomic.Int64
	badModes sync.Map
}

func (q *lapsing) Modes(context.Context) ([]string, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.listings++; q.listings > 1 {
		return nil, errors.New("modes key's master failing over")
	}
	return q.modes, nil
}
func (q *lapsing) Lease(_ context.Context, mode, _ string, ttl time.Duration) (bool, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.until[mode] = time.Now().Add(ttl)
	return true, nil
}
func (q *lapsing) Renew(_ context.Context, mode, _ string, ttl time.Duration) (bool, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if time.Now().After(q.until[mode]) {
		return false, nil
	}
	q.until[mode] = time.Now().Add(ttl)
	return true, nil
}
func (q *lapsing) DropLease(_ context.Context, mode, _ string) error {
	q.mu.Lock()
	delete(q.until, mode)
	q.mu.Unlock()
	return nil
}
func (q *lapsing) Forget(context.Context, string) (time.Time, error) { return time.Time{}, nil }
func (q *lapsing) Pending(context.Context, string) ([]Match, error)  { return nil, nil }
func (q *lapsing) Pass(ctx context.Context, mode string, _ Rules, _ PassParams) (Pass, error) {
	q.mu.Lock()
	lapsed := time.Now().After(q.until[mode])
	late := time.Since(q.until[mode])
	q.mu.Unlock()
	if lapsed {
		q.bad.Add(1)
		q.badModes.Store(mode, late)
	}
	select {
	case <-time.After(60 * time.Millisecond):
	case <-ctx.Done():
		return Pass{}, ctx.Err()
	}
	return Pass{Cut: "t", Left: 100}, nil
}

// No pass starts on a lapsed lease, however long it waited for a slot:
// the lease is confirmed once the slot is taken. 24 modes share the 4
// slots, the listing fails after the first tick (so the waiting modes'
// leases are not renewed), and a pass that waited past the TTL ran on a
// lease another instance could have taken (a reviewer's find: 6 passes).
func TestNoPassOnALapsedLease(t *testing.T) {
	q := &lapsing{until: map[string]time.Time{}}
	for i := range 24 {
		q.modes = append(q.modes, fmt.Sprintf("m%02d", i))
	}
	runMatcher(t, NewMatcher(MatcherConfig{Config: Config{Queue: q}, Holder: "a", PassTimeout: time.Minute,
		Interval: 100 * time.Millisecond, LeaseTTL: 300 * time.Millisecond}))
	time.Sleep(3 * time.Second)
	if n := q.bad.Load(); n > 0 {
		var s []string
		q.badModes.Range(func(k, v any) bool {
			s = append(s, fmt.Sprintf("%v(%v)", k, v.(time.Duration).Round(time.Millisecond)))
			return true
		})
		t.Errorf("%d passes started on a lapsed lease (mode, how long after the lapse): %v", n, s)
	}
}

// hangingCount: duel's passes return at once; reading its queue
// (Searching, for the metrics) hangs until its ctx ends (a Cluster master
// of its slot failing over, a pool with no free connection).
type hangingCount struct {
	listedQueue
	renews   atomic.Int64
	counting atomic.Bool
	returned atomic.Bool
}

func (q *hangingCount) Renew(context.Context, string, string, time.Duration) (bool, error) {
	q.renews.Add(1)
	return true, nil
}
func (q *hangingCount) Searching(ctx context.Context, _ string) (int, error) {
	if !q.counting.Swap(true) {
		defer q.returned.Store(true)
	}
	<-ctx.Done()
	return 0, ctx.Err()
}

// The queue read after a pass (passMode's Searching, for the metrics) is
// bounded as a lease call: the pass holds its slot, and its lease is
// renewed as a passing mode's, until it returns. A reviewer's find: it
// ran without a deadline, past PassTimeout, which bounds a pass "and the
// renewals of its lease with it" (the read hanging, the slot kept from
// the other modes and the mode from the other instances).
func TestQueueReadAfterAPassIsBounded(t *testing.T) {
	q := &hangingCount{}
	q.set([]string{"duel"})
	m := NewMatcher(MatcherConfig{Config: Config{Queue: q, Observer: &observed{}}, Holder: "a",
		Interval: 10 * time.Millisecond, LeaseTTL: 300 * time.Millisecond, PassTimeout: 300 * time.Millisecond})
	runMatcher(t, m)
	for !q.counting.Load() {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(1200 * time.Millisecond) // 4×PassTimeout
	m.mu.Lock()
	p := m.passes["duel"]
	m.mu.Unlock()
	slotted := p != nil && p.slotted.Load()
	if !q.returned.Load() {
		t.Errorf("duel's queue read still hanging 4×PassTimeout after it began: its pass holds a slot (%v), its lease renewed %d times meanwhile",
			slotted, q.renews.Load())
	}
}

// deadLeftovers: duel's queue holds the pending matches a killed instance
// left (older than RepairAfter); each completion's room takes roomTime
// (a busy Redis: the killed instance's pass of hundreds of matches took
// ~4 s at 16 at once, docs/MATCHMAKING.md).
type deadLeftovers struct {
	listedQueue
	pending  []Match
	mu       sync.Mutex
	assigned map[string]bool
}

func (q *deadLeftovers) Pending(context.Context, string) ([]Match, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	var out []Match
	for _, m := range q.pending {
		if !q.assigned[m.ID] {
			out = append(out, m)
		}
	}
	return out, nil
}
func (q *deadLeftovers) Get(context.Context, string) (Ticket, error) {
	return Ticket{}, ErrTicketNotFound
}
func (q *deadLeftovers) Commit(context.Context, Match, string) (bool, error) { return true, nil }
func (q *deadLeftovers) Assign(_ context.Context, m Match, _ string, _ time.Time) (bool, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.assigned[m.ID] = true
	return true, nil
}

type slowRooms struct {
	RoomOpener
	d time.Duration
}

func (r slowRooms) OpenMatchRoom(ctx context.Context, m Match, _ int, _ time.Duration) (string, error) {
	select {
	case <-time.After(r.d):
		return "r-" + m.ID, nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// A pass repairs the pending matches a dead instance left
// completeConcurrency at once, as it completes its own, within the same
// PassTimeout. A reviewer's find: it repaired them one at a time, so 40
// leftovers of 50 ms each took 2 s (0.15 s 16 at once), past a 1 s
// PassTimeout: the pass was cut, the survivor gave the lease up and left
// the mode alone for PassTimeout, and with no other instance nobody
// passed it.
func TestDeadInstancesLeftoversRepairedConcurrently(t *testing.T) {
	q := &deadLeftovers{assigned: map[string]bool{}}
	q.set([]string{"duel"})
	at := time.Now().Add(-10 * time.Second)
	for i := range 40 {
		q.pending = append(q.pending, Match{ID: fmt.Sprintf("m%d", i), Mode: "duel", At: at,
			Tickets: []MatchedTicket{{ID: fmt.Sprintf("t%d", i), Users: []string{fmt.Sprintf("u%d", i)}}}})
	}
	var buf bytes.Buffer
	m := NewMatcher(MatcherConfig{Config: Config{Queue: q}, Rooms: slowRooms{d: 50 * time.Millisecond},
		Notifier: silentNotifier{}, Holder: "a", Logger: slog.New(slog.NewTextHandler(&buf, nil)),
		LeaseTTL: 300 * time.Millisecond, PassTimeout: time.Second})
	held := m.Round(context.Background())
	q.mu.Lock()
	n := len(q.assigned)
	q.mu.Unlock()
	if len(held) == 0 || n < 40 {
		t.Errorf("a healthy instance's pass repaired %d of 40 leftovers within PassTimeout (1 s at 50 ms each); held after: %v; cut: %v",
			n, held, strings.Contains(buf.String(), "pass cut"))
	}
}

// ctxLeases: one lease, held by "a" once taken; lease calls take d and
// honour their ctx (as the store's do: a cancelled ctx fails the call).
type ctxLeases struct {
	listedQueue
	d       time.Duration
	lmu     sync.Mutex
	holder  string
	dropped bool
}

func (q *ctxLeases) wait(ctx context.Context) error {
	select {
	case <-time.After(q.d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
func (q *ctxLeases) Lease(ctx context.Context, _, h string, _ time.Duration) (bool, error) {
	if err := q.wait(ctx); err != nil {
		return false, err
	}
	q.lmu.Lock()
	defer q.lmu.Unlock()
	if q.holder == "" || q.holder == h {
		q.holder = h
		return true, nil
	}
	return false, nil
}
func (q *ctxLeases) Renew(ctx context.Context, m, h string, ttl time.Duration) (bool, error) {
	return q.Lease(ctx, m, h, ttl)
}
func (q *ctxLeases) DropLease(ctx context.Context, _, h string) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	q.lmu.Lock()
	defer q.lmu.Unlock()
	if q.holder == h {
		q.holder, q.dropped = "", true
	}
	return nil
}
func (q *ctxLeases) Pass(ctx context.Context, _ string, _ Rules, _ PassParams) (Pass, error) {
	<-ctx.Done()
	return Pass{}, ctx.Err()
}

// signalHandler closes cut when the matcher logs a pass cut.
type signalHandler struct {
	slog.Handler
	cut  chan struct{}
	once sync.Once
}

func (h *signalHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *signalHandler) Handle(_ context.Context, r slog.Record) error {
	if strings.Contains(r.Message, "pass cut") {
		h.once.Do(func() { close(h.cut) })
	}
	return nil
}

// A shutdown that comes while a cut pass gives its lease up (letGo,
// waiting for the mode's renewal under way) still gives it up: Run's own
// drops go over the modes held, which no longer names it. A reviewer's
// find: letGo dropped under Run's ctx, ended by then (the call failed),
// and the lease lapsed after its TTL instead of being free at once.
func TestShutdownDuringACutPassGivesItsLeaseUp(t *testing.T) {
	q := &ctxLeases{d: 200 * time.Millisecond}
	q.set([]string{"duel"})
	h := &signalHandler{cut: make(chan struct{})}
	m := NewMatcher(MatcherConfig{Config: Config{Queue: q}, Holder: "a", Logger: slog.New(h),
		Interval: 10 * time.Millisecond, LeaseTTL: 900 * time.Millisecond, PassTimeout: 300 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); m.Run(ctx) }()
	select {
	case <-h.cut:
	case <-time.After(5 * time.Second):
		cancel()
		<-done
		t.Fatal("no cut")
	}
	cancel() // the shutdown, while the cut pass waits for duel's renewal
	<-done
	q.lmu.Lock()
	defer q.lmu.Unlock()
	if q.holder != "" {
		t.Errorf("Run returned: duel's lease still held by %q (dropped %v), left to lapse", q.holder, q.dropped)
	}
}

type silentNotifier struct{}

func (silentNotifier) MatchFound(context.Context, string, MatchFound) error { return nil }
