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
	if _, err := e.tickets.Cancel(ctx, gone, time.Millisecond); err != nil {
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
