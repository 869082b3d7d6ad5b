package matchmaking

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
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
func (q *listedQueue) DropLease(context.Context, string, string) error { return nil }
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
	lastLease, lastDrop  time.Time
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
	const ttl = 300 * time.Millisecond
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
	const ttl = 300 * time.Millisecond
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
	runMatcher(t, NewMatcher(MatcherConfig{Config: Config{Queue: q}, Holder: "a", LeaseTTL: 300 * time.Millisecond,
		PassTimeout: 300 * time.Millisecond, Interval: 10 * time.Millisecond}))
	deadline := time.Now().Add(5 * time.Second)
	for _, d := q.count(); d != 1; _, d = q.count() {
		if time.Now().After(deadline) {
			t.Fatal("the pass was not cut within 5 s")
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
