package matchmaking

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// listedQueue lists the modes a test sets, grants every lease and passes
// each mode with a walk to resume from; the Queue's other methods are not
// called by rounds without tickets (nil: a call panics).
type listedQueue struct {
	Queue
	mu     sync.Mutex
	modes  []string
	rounds int
}

func (q *listedQueue) set(modes []string) {
	q.mu.Lock()
	q.modes, q.rounds = modes, 0
	q.mu.Unlock()
}

// roundsSince is the number of Modes calls since the last set.
func (q *listedQueue) roundsSince() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.rounds
}

func (q *listedQueue) Modes(context.Context) ([]string, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.rounds++
	return q.modes, nil
}
func (q *listedQueue) Lease(context.Context, string, string, time.Duration) (bool, error) {
	return true, nil
}
func (q *listedQueue) Renew(ctx context.Context, mode, h string, ttl time.Duration) (bool, error) {
	return q.Lease(ctx, mode, h, ttl)
}
func (q *listedQueue) DropLease(context.Context, string, string) error   { return nil }
func (q *listedQueue) Forget(context.Context, string) (time.Time, error) { return time.Time{}, nil }
func (q *listedQueue) Pass(_ context.Context, mode string, _ Rules, _ PassParams) (Pass, error) {
	return Pass{Next: "1000|" + mode}, nil
}
func (q *listedQueue) Pending(context.Context, string) ([]Match, error) { return nil, nil }

func (m *Matcher) walks() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.from)
}

// A mode the matcher no longer holds (no tickets left, or another
// instance's) forgets where its walk was: the matcher kept an entry for
// every mode it ever passed, for as long as it ran (with REALSYNC_MODES
// unset, every mode name clients ever queued in).
func TestMatcherForgetsTheWalksOfModesItReleased(t *testing.T) {
	q := &listedQueue{}
	m := NewMatcher(MatcherConfig{Config: Config{Queue: q}, Holder: "i1", Interval: time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); m.Run(ctx) }()
	defer func() { cancel(); <-done }()
	// the passes run apart from the ticks, 4 at once: the walks settle
	// once every mode listed has been passed
	walks := func(want int, what string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for q.roundsSince() < 3 || m.walks() != want {
			if time.Now().After(deadline) {
				t.Fatalf("%d walks kept %s, want %d", m.walks(), what, want)
			}
			time.Sleep(time.Millisecond)
		}
	}
	var modes []string
	for i := range 100 {
		modes = append(modes, fmt.Sprintf("m%d", i))
	}
	q.set(modes)
	walks(100, "for 100 modes held")
	q.set(modes[:1])
	walks(1, "after 99 of 100 modes went")
	time.Sleep(50 * time.Millisecond) // ticks on: none comes back
	if n := m.walks(); n != 1 {
		t.Fatalf("%d walks kept after 99 of 100 modes went, want the one still held", n)
	}
}

// failingLeases is a Queue whose every Lease call fails.
type failingLeases struct{ listedQueue }

func (q *failingLeases) Lease(context.Context, string, string, time.Duration) (bool, error) {
	return false, errors.New("NOPERM this user has no permissions to run the 'evalsha' command")
}

// A lease call that fails is logged: the matcher passes no mode while
// the leases' connections fail (an ACL, a dial), and said nothing (a
// reviewer's find).
func TestLeaseErrorsAreLogged(t *testing.T) {
	q := &failingLeases{}
	q.set([]string{"duel"})
	var buf bytes.Buffer
	m := NewMatcher(MatcherConfig{Config: Config{Queue: q}, Holder: "i1",
		Logger: slog.New(slog.NewTextHandler(&buf, nil))})
	if held := m.Round(context.Background()); len(held) != 0 {
		t.Fatalf("a round whose lease call failed holds %v", held)
	}
	if !strings.Contains(buf.String(), "NOPERM") || !strings.Contains(buf.String(), "mode=duel") {
		t.Errorf("the failed lease call was not logged with its mode: %q", buf.String())
	}
}

// stallQueue lists "duel" (after slowModes when set), grants every lease
// (each lease call taking leaseTime) and records when each answered; a
// pass hangs until its ctx ends.
type stallQueue struct {
	Queue
	mu                   sync.Mutex
	slowModes, leaseTime time.Duration
	passes, drops        int
	leasedAt             []time.Time
	leaseAfterDropOfDuel bool
}

func (q *stallQueue) Modes(ctx context.Context) ([]string, error) {
	q.mu.Lock()
	d := q.slowModes
	q.mu.Unlock()
	select {
	case <-time.After(d):
		return []string{"duel"}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
func (q *stallQueue) Lease(ctx context.Context, mode, _ string, _ time.Duration) (bool, error) {
	q.mu.Lock()
	d := q.leaseTime
	q.mu.Unlock()
	select {
	case <-time.After(d):
	case <-ctx.Done():
		return false, ctx.Err()
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.leasedAt = append(q.leasedAt, time.Now())
	if q.drops > 0 {
		q.leaseAfterDropOfDuel = true
	}
	return true, nil
}
func (q *stallQueue) Renew(ctx context.Context, mode, h string, ttl time.Duration) (bool, error) {
	return q.Lease(ctx, mode, h, ttl)
}
func (q *stallQueue) DropLease(context.Context, string, string) error {
	q.mu.Lock()
	q.drops++
	q.mu.Unlock()
	return nil
}
func (q *stallQueue) Pass(ctx context.Context, _ string, _ Rules, _ PassParams) (Pass, error) {
	q.mu.Lock()
	q.passes++
	q.mu.Unlock()
	<-ctx.Done()
	return Pass{}, ctx.Err()
}

func (q *stallQueue) count() (passes, drops int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.passes, q.drops
}

// worstGap is the longest time without a lease answer from the last
// answer before since to now.
func (q *stallQueue) worstGap(since time.Time) time.Duration {
	q.mu.Lock()
	at := append(slices.Clone(q.leasedAt), time.Now())
	q.mu.Unlock()
	var worst time.Duration
	for i := 1; i < len(at); i++ {
		if at[i].After(since) {
			worst = max(worst, at[i].Sub(at[i-1]))
		}
	}
	return worst
}

func runMatcher(t *testing.T, m *Matcher) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); m.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

// A pass under way keeps its lease while the listing of the modes is
// slow (the requests' pool busy, its master failing over): renewals run
// apart from the ticks. The ticks renewed after listing, and a listing
// slower than the TTL let the lease lapse under the pass (a reviewer's
// find).
func TestSlowListingLetsNoPassingLeaseLapse(t *testing.T) {
	q := &stallQueue{}
	// renewals a third of the TTL apart: 1 s leaves a loaded machine's
	// scheduling room, the gaps these tests guard against scale with it
	const ttl = time.Second
	runMatcher(t, NewMatcher(MatcherConfig{Config: Config{Queue: q}, Holder: "a", LeaseTTL: ttl,
		PassTimeout: time.Minute, Interval: 10 * time.Millisecond}))
	for p, _ := q.count(); p != 1; p, _ = q.count() {
		time.Sleep(time.Millisecond)
	}
	q.mu.Lock()
	q.slowModes = 4 * ttl
	q.mu.Unlock()
	since := time.Now()
	time.Sleep(3 * ttl)
	if gap := q.worstGap(since); gap >= ttl {
		t.Errorf("duel's pass under way, its lease renewed %v apart at worst (TTL %v) while the listing took %v",
			gap.Round(time.Millisecond), ttl, 4*ttl)
	}
}

// hangingLeases lists 64 modes whose lease calls hang (their master
// failing over) until their deadline, and zz, whose pass is long.
type hangingLeases struct{ stallQueue }

func (q *hangingLeases) Modes(context.Context) ([]string, error) {
	ms := []string{"zz"}
	for i := range 64 {
		ms = append(ms, fmt.Sprintf("h%02d", i))
	}
	return ms, nil
}
func (q *hangingLeases) Lease(ctx context.Context, mode, h string, ttl time.Duration) (bool, error) {
	if mode != "zz" {
		<-ctx.Done()
		return false, ctx.Err()
	}
	return q.stallQueue.Lease(ctx, mode, h, ttl)
}

// One mode's renewals never wait behind other modes' lease calls: with
// 64 hanging (16 at once, each up to a third of the TTL), a tick lasted
// 4 thirds of the TTL, and zz's lease, its pass under way, lapsed
// between two renewals (a reviewer's find).
func TestHangingLeaseCallsDelayNoOtherRenewal(t *testing.T) {
	q := &hangingLeases{}
	// renewals a third of the TTL apart: 1 s leaves a loaded machine's
	// scheduling room, the gaps these tests guard against scale with it
	const ttl = time.Second
	runMatcher(t, NewMatcher(MatcherConfig{Config: Config{Queue: q}, Holder: "a", LeaseTTL: ttl,
		PassTimeout: time.Minute, Interval: 10 * time.Millisecond}))
	since := time.Now()
	time.Sleep(5 * ttl)
	if p, _ := q.count(); p != 1 {
		t.Fatalf("%d passes of zz, want its one pass under way", p)
	}
	if gap := q.worstGap(since); gap >= ttl {
		t.Errorf("zz's pass under way, its lease renewed %v apart at worst (TTL %v)", gap.Round(time.Millisecond), ttl)
	}
}

// A pass cut at PassTimeout gives its lease up after the mode's renewal
// under way (slow here) is over, and its mode rests: no lease call of the
// mode answers after the drop, and no pass starts again within the rest.
// A renewal in flight at the cut took the lease back after the drop, and
// a tick in flight started the resting mode's pass again (a reviewer's
// find).
func TestCutPassDropsItsLeaseLast(t *testing.T) {
	q := &stallQueue{leaseTime: 40 * time.Millisecond}
	// a rest of 2 s: a loaded machine's stall while the test sleeps below
	// must not end it
	runMatcher(t, NewMatcher(MatcherConfig{Config: Config{Queue: q}, Holder: "a", LeaseTTL: 300 * time.Millisecond,
		PassTimeout: 2 * time.Second, Interval: 10 * time.Millisecond}))
	deadline := time.Now().Add(10 * time.Second)
	for _, d := q.count(); d != 1; _, d = q.count() {
		if time.Now().After(deadline) {
			t.Fatal("the pass was not cut within 10 s")
		}
		time.Sleep(time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // within the mode's rest (PassTimeout)
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.leaseAfterDropOfDuel || q.passes != 1 || q.drops != 1 {
		t.Errorf("after the cut: a lease call answered after the drop %v, %d passes, %d drops; want none, 1, 1",
			q.leaseAfterDropOfDuel, q.passes, q.drops)
	}
}

// observed records the Searching and Released figures in order.
type observed struct {
	mu     sync.Mutex
	events []string
}

func (o *observed) add(e string)                     { o.mu.Lock(); o.events = append(o.events, e); o.mu.Unlock() }
func (o *observed) Searching(mode string, n int)     { o.add(fmt.Sprintf("Searching(%s,%d)", mode, n)) }
func (o *observed) Released(mode string)             { o.add("Released(" + mode + ")") }
func (o *observed) Matched(string, []time.Duration)  {}
func (o *observed) Ended(string, string, int)        {}
func (o *observed) PassCut(string)                   {}
func (o *observed) CommitNotReplicated(string, bool) {}
func (o *observed) all() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.events)
}

// lostWhileCounting: the pass is over and its queue being read (slowly:
// a busy pool) when another instance takes the lease.
type lostWhileCounting struct {
	listedQueue
	lost, counting, counted chan struct{}
}

func (q *lostWhileCounting) Lease(context.Context, string, string, time.Duration) (bool, error) {
	select {
	case <-q.lost:
		return false, nil
	default:
		return true, nil
	}
}
func (q *lostWhileCounting) Renew(ctx context.Context, mode, h string, ttl time.Duration) (bool, error) {
	return q.Lease(ctx, mode, h, ttl)
}
func (q *lostWhileCounting) Searching(ctx context.Context, mode string) (int, error) {
	close(q.counting)
	<-q.counted
	return 7, nil
}

// A mode released (its lease found another instance's) while its pass
// read the queue is not reported searching after: only the holder
// reports the mode. The figure came after the release and stayed (a
// reviewer's find).
func TestQueueFigureNotReportedOnceReleased(t *testing.T) {
	q := &lostWhileCounting{lost: make(chan struct{}), counting: make(chan struct{}), counted: make(chan struct{})}
	q.set([]string{"duel"})
	o := &observed{}
	m := NewMatcher(MatcherConfig{Config: Config{Queue: q, Observer: o}, Holder: "a", LeaseTTL: 300 * time.Millisecond,
		Interval: 20 * time.Millisecond})
	done := make(chan []string)
	go func() { done <- m.Round(context.Background()) }()
	<-q.counting
	close(q.lost)
	for deadline := time.Now().Add(5 * time.Second); len(o.all()) == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the lost lease was not released within 5 s")
		}
	}
	close(q.counted)
	held := <-done
	if ev := o.all(); len(held) != 0 || !slices.Equal(ev, []string{"Released(duel)"}) {
		t.Errorf("held %v, figures %v: want none held, duel released and not reported after", held, ev)
	}
}

// listedOnce lists duel once, then fails every listing; it records each
// lease call.
type listedOnce struct {
	listedQueue
	lmu    sync.Mutex
	lists  int
	leases []time.Time
}

func (q *listedOnce) Modes(context.Context) ([]string, error) {
	q.lmu.Lock()
	defer q.lmu.Unlock()
	if q.lists++; q.lists == 1 {
		return []string{"duel"}, nil
	}
	return nil, errors.New("i/o timeout")
}
func (q *listedOnce) Lease(context.Context, string, string, time.Duration) (bool, error) {
	q.lmu.Lock()
	q.leases = append(q.leases, time.Now())
	q.lmu.Unlock()
	return true, nil
}
func (q *listedOnce) Renew(ctx context.Context, mode, h string, ttl time.Duration) (bool, error) {
	return q.Lease(ctx, mode, h, ttl)
}

// A held mode not passing is renewed only while the ticks list it: when
// every listing fails (the requests' pool busy), it lapses after LeaseTTL
// for another instance to pass it. It was renewed forever, passed by no
// one (a reviewer's find).
func TestHeldModeLapsesWhileListingFails(t *testing.T) {
	q := &listedOnce{}
	const ttl = 300 * time.Millisecond
	runMatcher(t, NewMatcher(MatcherConfig{Config: Config{Queue: q}, Holder: "a", LeaseTTL: ttl,
		Interval: 10 * time.Millisecond}))
	time.Sleep(10 * ttl)
	q.lmu.Lock()
	defer q.lmu.Unlock()
	last := q.leases[len(q.leases)-1]
	if since := time.Since(last); since < 5*ttl {
		t.Errorf("duel's lease renewed %v ago, %d calls in all, while every listing failed for %v", since.Round(time.Millisecond),
			len(q.leases), 10*ttl)
	}
}

// sharedLeases is one Redis' mode leases (no TTL) for several instances'
// queues.
type sharedLeases struct {
	mu     sync.Mutex
	holder map[string]string
	passed map[string]map[string]int // holder → mode → passes
	took   []string                  // "holder mode" of every lease taken
	stuck  int                       // passes stalled
}

// until polls cond (under l.mu) for up to 10 s.
func (l *sharedLeases) until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		l.mu.Lock()
		ok := cond()
		l.mu.Unlock()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not within 10 s: %s", what)
		}
	}
}

// slotsQueue is an instance's view: modes s0..s3 and e; the passes of
// s0..s3 stall on this instance when stall is set.
type slotsQueue struct {
	Queue
	l     *sharedLeases
	stall bool
}

func (q *slotsQueue) Modes(context.Context) ([]string, error) {
	return []string{"e", "s0", "s1", "s2", "s3"}, nil
}
func (q *slotsQueue) Lease(_ context.Context, mode, h string, _ time.Duration) (bool, error) {
	q.l.mu.Lock()
	defer q.l.mu.Unlock()
	if cur := q.l.holder[mode]; cur != "" && cur != h {
		return false, nil
	}
	if q.l.holder[mode] != h {
		q.l.took = append(q.l.took, h+" "+mode)
	}
	q.l.holder[mode] = h
	return true, nil
}
func (q *slotsQueue) Renew(_ context.Context, mode, h string, _ time.Duration) (bool, error) {
	q.l.mu.Lock()
	defer q.l.mu.Unlock()
	return q.l.holder[mode] == h, nil
}
func (q *slotsQueue) DropLease(_ context.Context, mode, h string) error {
	q.l.mu.Lock()
	defer q.l.mu.Unlock()
	if q.l.holder[mode] == h {
		delete(q.l.holder, mode)
	}
	return nil
}
func (q *slotsQueue) Pass(ctx context.Context, mode string, _ Rules, _ PassParams) (Pass, error) {
	if q.stall && mode != "e" {
		q.l.mu.Lock()
		q.l.stuck++
		q.l.mu.Unlock()
		<-ctx.Done()
		return Pass{}, ctx.Err()
	}
	q.l.mu.Lock()
	h := q.l.holder[mode]
	if q.l.passed[h] == nil {
		q.l.passed[h] = map[string]int{}
	}
	q.l.passed[h][mode]++
	q.l.mu.Unlock()
	return Pass{}, nil
}
func (q *slotsQueue) Pending(context.Context, string) ([]Match, error)  { return nil, nil }
func (q *slotsQueue) Forget(context.Context, string) (time.Time, error) { return time.Time{}, nil }

// Four passes stuck on an instance (their calls hanging) take its four
// slots; a fifth mode whose pass waits for one gives its lease up, and
// another instance passes it. The waiting pass kept its lease renewed, so
// no instance passed the mode until the stuck ones were cut (a
// reviewer's find).
func TestModeWithoutASlotGoesToAnotherInstance(t *testing.T) {
	l := &sharedLeases{holder: map[string]string{}, passed: map[string]map[string]int{}}
	const ttl = 300 * time.Millisecond
	cfg := func(q Queue, holder string) MatcherConfig {
		return MatcherConfig{Config: Config{Queue: q}, Holder: holder, LeaseTTL: ttl, PassTimeout: time.Minute,
			Interval: 10 * time.Millisecond}
	}
	// a takes the four stalling modes first, their passes stuck in its
	// four slots
	l.holder["e"] = "b"
	runMatcher(t, NewMatcher(cfg(&slotsQueue{l: l, stall: true}, "a")))
	l.until(t, "a's four passes stuck", func() bool { return l.stuck == 4 })
	l.mu.Lock()
	delete(l.holder, "e")
	l.mu.Unlock()
	// a takes e too, its pass waiting for a slot
	l.until(t, "a took e", func() bool { return slices.Contains(l.took, "a e") })
	runMatcher(t, NewMatcher(cfg(&slotsQueue{l: l}, "b")))
	l.until(t, "e passed by b while a's four slots are stuck", func() bool { return l.passed["b"]["e"] > 0 })
}

// Rounds leave no goroutine behind (their renewals stopped), and a tiny
// Interval is run (the renewals' period has a floor).
func TestRoundsLeaveNoGoroutines(t *testing.T) {
	q := &listedQueue{}
	q.set([]string{"a", "b", "c", "d", "e", "f"})
	m := NewMatcher(MatcherConfig{Config: Config{Queue: q}, Holder: "a", Interval: time.Nanosecond, LeaseTTL: 30 * time.Millisecond})
	m.Round(context.Background())
	time.Sleep(50 * time.Millisecond)
	base := runtime.NumGoroutine()
	for range 200 {
		m.Round(context.Background())
	}
	time.Sleep(50 * time.Millisecond)
	if n := runtime.NumGoroutine(); n > base {
		t.Errorf("%d goroutines after 200 rounds, %d before", n, base)
	}
}

// partlyListed is a listedQueue whose Modes also fails with err (the
// lists of some shards unread).
type partlyListed struct {
	*listedQueue
	err error
}

func (q partlyListed) Modes(ctx context.Context) ([]string, error) {
	modes, _ := q.listedQueue.Modes(ctx)
	return modes, q.err
}

// A round whose listing read some lists only (a Redis master down) goes
// on with the modes it read: it passes them, and releases a held mode
// not among them (its list, queue and lease are on the master down); one
// that read none does nothing, its held modes kept.
func TestRoundPassesTheModesOfTheListsRead(t *testing.T) {
	unread := errors.New("the modes of shards [3] unread")
	for _, tc := range []struct {
		name  string
		modes []string // listed with the error
		held  []string
	}{
		{name: "Some", modes: []string{"a", "b"}, held: []string{"a", "b"}},
		{name: "NoneListed", modes: []string{}, held: nil},
		{name: "NoneRead", held: []string{"c"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lq := &listedQueue{}
			lq.set([]string{"c"})
			m := NewMatcher(MatcherConfig{Config: Config{Queue: lq}, Holder: "a", Interval: time.Millisecond})
			if held := m.Round(t.Context()); !slices.Equal(held, []string{"c"}) {
				t.Fatalf("held %v after a round listing c, want c", held)
			}
			lq.set(tc.modes)
			m.cfg.Queue = partlyListed{listedQueue: lq, err: unread}
			if held := m.Round(t.Context()); !slices.Equal(held, tc.held) {
				t.Fatalf("held %v after the round, want %v", held, tc.held)
			}
		})
	}
}
