package tickets_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/matchmaking"
)

// A full Redis (maxmemory, noeviction) lets a script that changed
// something write past maxmemory: a pass whose first change dropped a
// final ticket (an HDEL, which Redis does not refuse out of memory) then
// recorded its matches, call after call. Full, a pass drops the final
// tickets past their grace (memory back) and matches none; with memory to
// spare again the next pass matches them.
func TestFullRedisPassMatchesNone(t *testing.T) {
	srv, err := redistest.StartServer()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	ctx := context.Background()
	r := matchmaking.Rules{Teams: 2, TeamSize: 1, Window: matchmaking.Window{Start: 100}}
	e := open(t, redistest.Backend{Name: "full", URL: "redis://" + srv.Addr}, matchmaking.RuleSet{})
	a, b := addParty(t, e, "a", 1300, 1), addParty(t, e, "b", 1310, 1)
	gone, err := e.tickets.Get(ctx, addParty(t, e, "gone", 2000, 1))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.tickets.Cancel(ctx, gone, time.Millisecond); err != nil {
		t.Fatal(err)
	}
	// past the cancelled ticket's grace, before the others' expiry
	params := matchmaking.PassParams{Walk: 100, Sweep: 100, Grace: time.Minute, Now: time.Now().Add(10 * time.Second)}
	redistest.Fill(t, srv.Addr)
	p, err := e.tickets.Pass(ctx, "squad", r, params)
	if err != nil || len(p.Matches) != 0 || p.Expired != 0 {
		t.Fatalf("pass out of memory: %+v (%v), want no match", p, err)
	}
	if _, err := e.tickets.Get(ctx, gone.ID); !errors.Is(err, matchmaking.ErrTicketNotFound) {
		t.Fatalf("cancelled ticket past its grace, out of memory: %v, want it dropped", err)
	}
	for _, id := range []string{a, b} {
		if tk, err := e.tickets.Get(ctx, id); err != nil || tk.Status != matchmaking.Searching {
			t.Fatalf("ticket %s out of memory: %+v (%v), want searching", id, tk, err)
		}
	}
	redistest.Unfill(t, srv.Addr)
	if p, err := e.tickets.Pass(ctx, "squad", r, params); err != nil || len(p.Matches) != 1 {
		t.Fatalf("pass with memory to spare: %+v (%v), want one match", p, err)
	}
}

// A full Redis lets a mode's matcher take and keep its lease: the lease
// was a SET, which Redis refuses out of memory, so no matcher renewed or
// took a lease and no pass ran (no final ticket past its grace dropped)
// until Redis had room. Another holder's lease is still left alone.
func TestFullRedisMatcherKeepsItsLease(t *testing.T) {
	srv, err := redistest.StartServer()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	ctx := context.Background()
	e := open(t, redistest.Backend{Name: "full", URL: "redis://" + srv.Addr}, matchmaking.RuleSet{})
	if ok, err := e.tickets.Lease(ctx, "squad", "m1", time.Minute); err != nil || !ok {
		t.Fatalf("lease: %v (%v)", ok, err)
	}
	redistest.Fill(t, srv.Addr)
	if ok, err := e.tickets.Lease(ctx, "squad", "m1", time.Minute); err != nil || !ok {
		t.Fatalf("renewed out of memory: %v (%v), want held", ok, err)
	}
	if ok, err := e.tickets.Lease(ctx, "squad", "m2", time.Minute); err != nil || ok {
		t.Fatalf("another holder's lease out of memory: taken %v (%v), want refused", ok, err)
	}
	if err := e.tickets.DropLease(ctx, "squad", "m1"); err != nil {
		t.Fatal(err)
	}
	if ok, err := e.tickets.Lease(ctx, "squad", "m2", time.Minute); err != nil || !ok {
		t.Fatalf("a free lease taken out of memory: %v (%v), want taken", ok, err)
	}
}
