package matchmaking

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
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
