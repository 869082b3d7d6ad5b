package tickets_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/matchmaking"
	"github.com/realsync/realsync/store/tickets"
)

// shortCommits counts the matcher's commits the replicas did not
// acknowledge in time (matchmaking.Observer).
type shortCommits struct {
	matchmaking.Observer
	mu sync.Mutex
	n  map[string]int
}

func (o *shortCommits) CommitNotReplicated(mode string) {
	o.mu.Lock()
	o.n[mode]++
	o.mu.Unlock()
}

func (o *shortCommits) of(mode string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.n[mode]
}

// nopObserver is a matchmaking.Observer that records nothing.
type nopObserver struct{}

func (nopObserver) Searching(string, int)           {}
func (nopObserver) Released(string)                 {}
func (nopObserver) Matched(string, []time.Duration) {}
func (nopObserver) Ended(string, string, int)       {}
func (nopObserver) PassCut(string)                  {}
func (nopObserver) CommitNotReplicated(string)      {}

// A Cluster master fails over after a pass matched two tickets, their
// room was made and the match committed, but before its replica had any
// of it (replication cut first, so the loss is certain). With the commit
// waiting for the replica (tickets.Durability, the default), the commit
// comes back short and no user is told; on the promoted replica the two
// tickets are still searching, the next pass matches them, and each user
// is told of one match. Without the wait each was told of the lost match
// first, then of the new one: two matches for one ticket. A repair of the
// committed match before the failover waits again, and tells no one
// either. A match made while the replica is in sync is told at once,
// after one WAIT.
func TestMatchLostInAFailoverIsToldOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Cluster of its own")
	}
	c, err := redistest.StartClusterWithReplicas(3, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	ctx := t.Context()
	if err := c.WaitSlotsListReplicas(20 * time.Second); err != nil {
		t.Fatal(err)
	}
	rs := mustRules(t, "modes:\n  duel: {}\n")
	e := open(t, redistest.Backend{Name: "failover", ClusterAddrs: c.Addrs()}, rs)
	e.tickets.WithDurability(tickets.Durability{Replicas: 1, Wait: 300 * time.Millisecond})
	rec := &recorder{next: e.tickets, got: map[string]map[string]matchmaking.MatchFound{}}
	short := &shortCommits{Observer: nopObserver{}, n: map[string]int{}}
	cfg := e.cfg
	cfg.Observer = short
	matcher := func(holder string) *matchmaking.Matcher {
		return matchmaking.NewMatcher(matchmaking.MatcherConfig{Config: cfg, Rooms: e.rooms, Notifier: rec, Holder: holder,
			LeaseTTL: 500 * time.Millisecond, RepairAfter: 100 * time.Millisecond})
	}
	ids := map[string]string{} // user → ticket
	queue := func(users ...string) {
		t.Helper()
		for _, u := range users {
			tk, err := e.svc.Create(ctx, player(u), matchmaking.TicketParams{Mode: "duel", Regions: []string{"eu"}})
			if err != nil {
				t.Fatal(err)
			}
			ids[u] = tk.ID
		}
	}
	// assigned: the user's ticket is matched and records its room (its
	// match complete), as the master now serving it says
	assigned := func(uid string) bool {
		tk, err := e.svc.Get(ctx, player(uid), ids[uid])
		return err == nil && tk.Status == matchmaking.Matched && tk.RoomID != ""
	}
	told := func(uid string) int {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		return len(rec.got[uid])
	}
	master, replica, err := c.ReplicatedShard(ctx, e.tickets.PendingKey("duel"), 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}

	// in sync: told at once, the commit waited for its replica
	redistest.ResetStats(t, master)
	queue("in-sync-1", "in-sync-2")
	a := matcher("a")
	a.Round(ctx)
	if told("in-sync-1") != 1 || told("in-sync-2") != 1 || short.of("duel") != 0 {
		t.Fatalf("in sync: told %d and %d, %d commits short; want 1, 1 and 0", told("in-sync-1"), told("in-sync-2"), short.of("duel"))
	}
	if n := master.CallsOf(t, "wait"); n != 1 {
		t.Fatalf("the mode's master ran WAIT %d times for one commit, want 1", n)
	}

	// replication cut: the commit comes back short, no one is told
	if err := c.WaitReplicated(master, 20*time.Second); err != nil {
		t.Fatal(err)
	}
	queue("u1", "u2")
	if err := redistest.CutReplication(ctx, master); err != nil {
		t.Fatal(err)
	}
	a.Round(ctx)
	if told("u1") != 0 || told("u2") != 0 {
		t.Fatalf("told %d and %d of a match its master's replica never had, want 0", told("u1"), told("u2"))
	}
	n := short.of("duel")
	if n == 0 {
		t.Fatal("no commit reported short of its replica")
	}
	// its repair (the match committed, on the master alone) commits again
	// and comes back short again: still no one told (the round's own
	// repairs, past RepairAfter, may have done so already)
	time.Sleep(150 * time.Millisecond) // past RepairAfter
	a.Round(ctx)
	if told("u1") != 0 || told("u2") != 0 || short.of("duel") <= n {
		t.Fatalf("after a repair: told %d and %d, %d commits short (%d before); want 0, 0 and more", told("u1"), told("u2"), short.of("duel"), n)
	}

	// the master dies, its replica (without the pass) takes over: the
	// tickets are matched again, and each user told once
	master.Kill()
	if _, err := redistest.WaitMaster(replica, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	b := matcher("b")
	deadline := time.Now().Add(30 * time.Second)
	for !assigned("u1") || !assigned("u2") {
		if time.Now().After(deadline) {
			t.Fatalf("u1's and u2's tickets not matched within 30 s of the promotion (told %d and %d times)", told("u1"), told("u2"))
		}
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		b.Round(rctx)
		cancel()
		time.Sleep(100 * time.Millisecond)
	}
	for _, u := range []string{"u1", "u2"} {
		rec.mu.Lock()
		got := fmt.Sprint(rec.got[u])
		rec.mu.Unlock()
		if told(u) != 1 {
			t.Errorf("%s told of %d matches for one ticket: %s", u, told(u), got)
		}
	}
}
