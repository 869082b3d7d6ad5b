package tickets_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/matchmaking"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/store/internal/redisx/scripttest"
	"github.com/realsync/realsync/store/tickets"
)

func player(id string) rooms.User { return rooms.User{ID: id, Name: id} }

func rating(v float64) *float64 { return &v }

// The descriptors lay out what each script reads.
func TestScriptCallsMatchTheirLua(t *testing.T) {
	scripttest.CheckCalls(t, luaFiles, "lua", tickets.ExportedCalls(), scripttest.Prelude{})
}

func TestTicketCreateGetCancel(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := context.Background()
		e := open(t, b, matchmaking.RuleSet{})
		tk, err := e.svc.Create(ctx, player("alice"), matchmaking.TicketParams{Mode: "duel", Regions: []string{"eu", "us"}, Rating: rating(1500)})
		if err != nil {
			t.Fatal(err)
		}
		if tk.Status != matchmaking.Searching || tk.Window != 100 || tk.ExpiresAt.Sub(tk.CreatedAt) != 5*time.Minute {
			t.Fatalf("created %+v", tk)
		}
		got, err := e.svc.Get(ctx, player("alice"), tk.ID)
		if err != nil || got.Status != matchmaking.Searching || got.Rating != 1500 || len(got.Regions) != 2 {
			t.Fatalf("get %+v %v", got, err)
		}
		if _, err := e.svc.Get(ctx, player("bob"), tk.ID); !errors.Is(err, matchmaking.ErrTicketNotFound) {
			t.Fatalf("another user's get: %v, want not found", err)
		}
		if _, err := e.svc.Get(ctx, player("alice"), "zz"+tk.ID[2:]); !errors.Is(err, matchmaking.ErrTicketNotFound) {
			t.Fatalf("unknown id: %v", err)
		}
		// one active ticket
		_, err = e.svc.Create(ctx, player("alice"), matchmaking.TicketParams{Mode: "duel", Regions: []string{"eu"}})
		if !errors.Is(err, matchmaking.ErrTicketActive) {
			t.Fatalf("second ticket: %v, want ErrTicketActive", err)
		}
		if err := e.svc.Cancel(ctx, player("bob"), tk.ID); !errors.Is(err, matchmaking.ErrTicketNotFound) {
			t.Fatalf("bob cancels alice's: %v", err)
		}
		if err := e.svc.Cancel(ctx, player("alice"), tk.ID); err != nil {
			t.Fatal(err)
		}
		if got, _ := e.svc.Get(ctx, player("alice"), tk.ID); got.Status != matchmaking.Cancelled {
			t.Fatalf("after cancel: %s", got.Status)
		}
		if n, _ := e.tickets.Searching(ctx, "duel"); n != 0 {
			t.Fatalf("queue holds %d after cancel", n)
		}
		if err := e.svc.Cancel(ctx, player("alice"), tk.ID); err != nil {
			t.Fatalf("cancel again: %v, want nil", err)
		}
		// free to queue again
		if _, err := e.svc.Create(ctx, player("alice"), matchmaking.TicketParams{Mode: "duel", Regions: []string{"eu"}}); err != nil {
			t.Fatalf("after cancel: %v", err)
		}
	})
}

func TestOneActiveTicketPerPartyMember(t *testing.T) {
	rs := mustRules(t, "modes:\n  squad:\n    teams: 2\n    teamSize: 3\n")
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := context.Background()
		e := open(t, b, rs)
		lead, err := e.svc.Create(ctx, player("lead"), matchmaking.TicketParams{Mode: "squad", Regions: []string{"eu"},
			PartyUserIDs: []string{"m1", "m2"}})
		if err != nil {
			t.Fatal(err)
		}
		cases := []struct {
			name string
			user string
			p    matchmaking.TicketParams
			want error
		}{
			{"MemberAlone", "m1", matchmaking.TicketParams{Mode: "squad", Regions: []string{"eu"}}, matchmaking.ErrMemberQueuedInParty},
			{"MemberInAnotherParty", "x", matchmaking.TicketParams{Mode: "squad", Regions: []string{"eu"}, PartyUserIDs: []string{"m2"}}, matchmaking.ErrTicketActive},
			{"LeaderAgain", "lead", matchmaking.TicketParams{Mode: "duel", Regions: []string{"eu"}}, matchmaking.ErrTicketActive},
			{"PartyTooBig", "y", matchmaking.TicketParams{Mode: "squad", Regions: []string{"eu"}, PartyUserIDs: []string{"a", "b", "c"}}, rooms.ErrValidation},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				if _, err := e.svc.Create(ctx, player(c.user), c.p); !errors.Is(err, c.want) {
					t.Fatalf("err %v, want %v", err, c.want)
				}
			})
		}
		// x's refused ticket released x's claim: x may queue without m2
		if _, err := e.svc.Create(ctx, player("x"), matchmaking.TicketParams{Mode: "squad", Regions: []string{"eu"}}); err != nil {
			t.Fatalf("x after a refused party ticket: %v", err)
		}
		// a member reads the party's ticket and may cancel it
		if got, err := e.svc.Get(ctx, player("m2"), lead.ID); err != nil || got.UserID != "lead" {
			t.Fatalf("member reads: %+v %v", got, err)
		}
		if err := e.svc.Cancel(ctx, player("m2"), lead.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := e.svc.Create(ctx, player("m1"), matchmaking.TicketParams{Mode: "squad", Regions: []string{"eu"}}); err != nil {
			t.Fatalf("m1 after the party's ticket was cancelled: %v", err)
		}
	})
}

// A claim on a ticket never queued (a create on its way, or one that died
// there) holds for InFlight, then does not block the user.
func TestClaimOfATicketNeverQueued(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := context.Background()
		e := open(t, b, matchmaking.RuleSet{})
		later := open(t, b, matchmaking.RuleSet{}, func(c *matchmaking.Config) {
			c.Queue = e.tickets
			c.Now = func() time.Time { return time.Now().Add(matchmaking.InFlight) }
		})
		ghost := e.tickets.NewID("duel", "")
		if held, err := e.tickets.Claim(ctx, "alice", ghost, "", time.Minute); err != nil || held.ID != "" {
			t.Fatalf("claim %v %v", held, err)
		}
		p := matchmaking.TicketParams{Mode: "duel", Regions: []string{"eu"}}
		if _, err := e.svc.Create(ctx, player("alice"), p); !errors.Is(err, matchmaking.ErrTicketActive) {
			t.Fatalf("over a claim just made: %v, want ErrTicketActive", err)
		}
		if _, err := later.svc.Create(ctx, player("alice"), p); err != nil {
			t.Fatalf("over a claim older than InFlight: %v", err)
		}
	})
}

// An instance whose clock runs ahead of Redis' (a tester's find: 1.5 s
// was enough) takes a ticket for expired only ClockTolerance past its
// ExpiresAt, Redis' time, until which the pass still matches it: before,
// it let the ticket's user queue a second ticket at its own ExpiresAt,
// and the pass matched the user twice or against themself. A ticket a
// pass marked expired frees its user at once, whatever the clocks.
func TestTicketExpiryToleratesAClockAhead(t *testing.T) {
	rs := mustRules(t, "modes:\n  duel: {ticketTTL: 1m}\n")
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := context.Background()
		e := open(t, b, rs)
		first, err := e.svc.Create(ctx, player("alice"), matchmaking.TicketParams{Mode: "duel", Regions: []string{"eu"}})
		if err != nil {
			t.Fatal(err)
		}
		at := func(d time.Duration) env { // an instance whose clock reads first's expiry + d now
			return open(t, b, rs, func(c *matchmaking.Config) {
				c.Queue = e.tickets
				c.Now = func() time.Time { return first.ExpiresAt.Add(d) }
			})
		}
		p := matchmaking.TicketParams{Mode: "duel", Regions: []string{"eu"}}
		ahead := at(matchmaking.ClockTolerance - time.Second)
		if _, err := ahead.svc.Create(ctx, player("alice"), p); !errors.Is(err, matchmaking.ErrTicketActive) {
			t.Fatalf("a create on a clock past the expiry by less than the tolerance: %v, want ErrTicketActive", err)
		}
		if got, err := ahead.svc.Get(ctx, player("alice"), first.ID); err != nil || got.Status != matchmaking.Searching {
			t.Fatalf("read there: %s %v, want searching", got.Status, err)
		}
		if n, err := e.tickets.Searching(ctx, "duel"); err != nil || n != 1 {
			t.Fatalf("%d tickets searching (%v), want alice's one", n, err)
		}
		lapsed := at(matchmaking.ClockTolerance)
		if got, err := lapsed.svc.Get(ctx, player("alice"), first.ID); err != nil || got.Status != matchmaking.Expired {
			t.Fatalf("read past the tolerance: %s %v, want expired", got.Status, err)
		}
		// a pass on Redis' time past the expiry marks it: free at once
		if _, err := e.tickets.Pass(ctx, "duel", rs.Of("duel"), matchmaking.PassParams{Walk: 100, Sweep: 100, Grace: time.Minute,
			Now: first.ExpiresAt.Add(time.Millisecond)}); err != nil {
			t.Fatal(err)
		}
		if _, err := ahead.svc.Create(ctx, player("alice"), p); err != nil {
			t.Fatalf("a create once a pass marked the ticket expired: %v", err)
		}
	})
}

// Concurrent creates of one user, and of parties sharing a member, leave
// one searching ticket per user.
func TestConcurrentCreatesOneTicketPerUser(t *testing.T) {
	rs := mustRules(t, "modes:\n  squad:\n    teams: 2\n    teamSize: 3\n")
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := context.Background()
		e := open(t, b, rs)
		var wg sync.WaitGroup
		var mu sync.Mutex
		made := map[string]int{}
		for i := range 12 {
			wg.Go(func() {
				leader := "solo"
				p := matchmaking.TicketParams{Mode: "squad", Regions: []string{"eu"}}
				if i%2 == 1 { // leaders of their own, all with "shared" in their party
					leader = fmt.Sprintf("lead%d", i)
					p.PartyUserIDs = []string{"shared"}
				}
				tk, err := e.svc.Create(ctx, player(leader), p)
				if err != nil {
					if !errors.Is(err, matchmaking.ErrTicketActive) && !errors.Is(err, matchmaking.ErrMemberQueuedInParty) {
						t.Error(err)
					}
					return
				}
				mu.Lock()
				for _, u := range tk.Users() {
					made[u]++
				}
				mu.Unlock()
			})
		}
		wg.Wait()
		for u, n := range made {
			if n > 1 {
				t.Fatalf("%s in %d searching tickets", u, n)
			}
		}
		if made["solo"] != 1 || made["shared"] != 1 {
			t.Fatalf("tickets made: %v, want solo's and one party's", made)
		}
	})
}

// A rule set an embedder builds in code (no ParseRules) is normalized and
// checked when the service is built: unset fields take Default()'s values
// (a ticket of a mode without defaultRating panicked, a 500 on every
// create), and a bad one is an error at construction naming the field,
// not a failure per request.
func TestServiceOfRulesBuiltInCode(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := context.Background()
		t.Run("UnsetFieldsTakeTheDefaults", func(t *testing.T) {
			rs := matchmaking.RuleSet{Modes: map[string]matchmaking.Rules{"trio": {MaxPlayers: 3}}}
			e := open(t, b, rs)
			tk, err := e.svc.Create(ctx, player("alice"), matchmaking.TicketParams{Mode: "trio", Regions: []string{"eu"}})
			if err != nil {
				t.Fatal(err)
			}
			if tk.Rating != *matchmaking.Default().DefaultRating || tk.Window != 100 || tk.ExpiresAt.Sub(tk.CreatedAt) != 5*time.Minute {
				t.Fatalf("created %+v, want the default rating, window and TTL", tk)
			}
			if r := e.svc.Rules().Of("trio"); r.MinPlayers != 3 || r.Size() != 3 || r.Teams != 1 {
				t.Fatalf("the service's rules of trio: %+v, want one team of 3", r)
			}
			if rs.Modes["trio"].DefaultRating != nil {
				t.Fatal("the caller's rule set was changed")
			}
		})
		for _, c := range []struct {
			name  string
			rules matchmaking.Rules
			mode  string
			field string // what the error names
		}{
			{"ErrTeamsWithoutTeamSize", matchmaking.Rules{Teams: 2}, "ranked", "modes.ranked.teamSize"},
			{"ErrNegativeWindow", matchmaking.Rules{Window: matchmaking.Window{Start: -1}}, "duel", "modes.duel.window.start"},
			{"ErrModeName", matchmaking.Rules{}, "Bad Mode", "modes.Bad Mode"},
		} {
			t.Run(c.name, func(t *testing.T) {
				cfg := matchmaking.Config{Queue: open(t, b, matchmaking.RuleSet{}).tickets,
					Rules: matchmaking.RuleSet{Modes: map[string]matchmaking.Rules{c.mode: c.rules}}}
				svc, err := matchmaking.NewService(cfg)
				if err == nil || !strings.Contains(err.Error(), c.field+":") {
					t.Fatalf("NewService: %v %v, want an error naming %s", svc, err, c.field)
				}
				defer func() {
					if p := recover(); p == nil || !strings.Contains(fmt.Sprint(p), c.field+":") {
						t.Fatalf("NewMatcher: %v, want a panic naming %s", p, c.field)
					}
				}()
				matchmaking.NewMatcher(matchmaking.MatcherConfig{Config: cfg, Holder: "a"})
			})
		}
	})
}

// A keyed create run again (its first run's answer lost: the instance
// died, the key's claim lapsed, the client's retry ran it once more)
// answers the first run's ticket, in whatever status, and queues no
// second: the ticket's id derives from the caller and the key. A chaos
// test found users matched twice so: the first ticket was matched by
// then, and the retry queued another.
func TestKeyedCreateRunAgainAnswersItsTicket(t *testing.T) {
	rs := mustRules(t, "modes:\n  duel: {}\n")
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := context.Background()
		e := open(t, b, rs)
		keyed := func(u, key string) matchmaking.Ticket {
			t.Helper()
			tk, err := e.svc.Create(ctx, player(u), matchmaking.TicketParams{Mode: "duel", Regions: []string{"eu"}, Key: key})
			if err != nil {
				t.Fatalf("create %s under %q: %v", u, key, err)
			}
			return tk
		}
		first := keyed("k0", "key-1")
		if again := keyed("k0", "key-1"); again.ID != first.ID || again.Status != matchmaking.Searching {
			t.Fatalf("run again while searching: %s %s, want %s searching", again.ID, again.Status, first.ID)
		}
		keyed("k1", "key-1") // another caller's key: a ticket of its own
		m := matchmaking.NewMatcher(matchmaking.MatcherConfig{Config: e.cfg, Rooms: e.rooms, Notifier: e.tickets, Holder: "a"})
		m.Round(ctx)
		again := keyed("k0", "key-1")
		if again.ID != first.ID || again.Status != matchmaking.Matched || again.RoomID == "" {
			t.Fatalf("run again once matched: %s %s room %q, want %s matched with its room", again.ID, again.Status, again.RoomID, first.ID)
		}
		if n, err := e.tickets.Searching(ctx, "duel"); err != nil || n != 0 {
			t.Fatalf("%d tickets searching (%v), want none: the run again queued a second", n, err)
		}
		// the script's guard, for a run again that passed the read before
		// the first run's ticket was queued: the ticket is left as it is
		_, err := e.tickets.Add(ctx, matchmaking.Ticket{ID: first.ID, Mode: "duel", Regions: []string{"eu"}, UserID: "k0"},
			matchmaking.GroupKey{Size: 1, Regions: []string{"eu"}, Users: []string{"k0"}}, time.Minute, 0, 100)
		if !errors.Is(err, matchmaking.ErrTicketExists) {
			t.Fatalf("Add of a kept ticket's id: %v, want ErrTicketExists", err)
		}
		if got, err := e.tickets.Get(ctx, first.ID); err != nil || got.Status != matchmaking.Matched {
			t.Fatalf("after that Add: %+v %v, want it matched still", got, err)
		}
		// another body under the key is another create
		other, err := e.svc.Create(ctx, player("k0"), matchmaking.TicketParams{Mode: "duel", Regions: []string{"us"}, Key: "key-1"})
		if err != nil || other.ID == first.ID || other.Status != matchmaking.Searching {
			t.Fatalf("another body under the key: %s %s %v, want a new searching ticket", other.ID, other.Status, err)
		}
	})
}

// Two runs of one keyed create at once (the key's claim lapsed while the
// first still ran) share the ticket id and so its users' claims: one run
// failing after the other queued the ticket answers that ticket and
// releases no claim. It released them, and the user could queue a second
// ticket beside the searching one.
func TestOverlappingKeyedCreatesKeepTheClaims(t *testing.T) {
	rs := mustRules(t, "modes:\n  duel: {}\n")
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := context.Background()
		e := open(t, b, rs)
		p := matchmaking.TicketParams{Mode: "duel", Regions: []string{"eu"}, Key: "key-1"}
		var first matchmaking.Ticket
		cfg := e.cfg
		// the same key's other run, alive while this one's key claim had
		// lapsed, queues the ticket; this run's Add then fails
		cfg.Queue = &hooked{Queue: e.tickets, failAdd: true, beforeAdd: func() {
			var err error
			if first, err = e.svc.Create(ctx, player("o0"), p); err != nil {
				t.Errorf("the other run: %v", err)
			}
		}}
		svc, err := matchmaking.NewService(cfg)
		if err != nil {
			t.Fatal(err)
		}
		got, err := svc.Create(ctx, player("o0"), p)
		if err != nil || got.ID != first.ID || got.Status != matchmaking.Searching {
			t.Fatalf("the run that failed after the other queued: %+v %v, want %s searching", got, err, first.ID)
		}
		_, err = e.svc.Create(ctx, player("o0"), matchmaking.TicketParams{Mode: "duel", Regions: []string{"eu"}})
		if !errors.Is(err, matchmaking.ErrTicketActive) {
			t.Fatalf("a second ticket beside the searching one: %v, want ErrTicketActive", err)
		}
	})
}

// hooked is a Queue that lets another request act at a chosen step of a
// service's call: beforeAdd, beforeRelease and beforeCancel, when set, run
// once, before its Add, its first claim's release and its Cancel; its Add
// fails (as a full queue) when failAdd is set.
type hooked struct {
	matchmaking.Queue
	failAdd                                bool
	beforeAdd, beforeRelease, beforeCancel func()
}

// once runs *f, if set, and unsets it.
func once(f *func()) {
	if g := *f; g != nil {
		*f = nil
		g()
	}
}

func (q *hooked) Add(ctx context.Context, t matchmaking.Ticket, g matchmaking.GroupKey, ttl, grace time.Duration, maxQueue int) (matchmaking.Ticket, error) {
	once(&q.beforeAdd)
	if q.failAdd {
		return matchmaking.Ticket{}, matchmaking.ErrQueueFull
	}
	return q.Queue.Add(ctx, t, g, ttl, grace, maxQueue)
}

func (q *hooked) Release(ctx context.Context, uid, id string) error {
	once(&q.beforeRelease)
	return q.Queue.Release(ctx, uid, id)
}

func (q *hooked) Cancel(ctx context.Context, t matchmaking.Ticket, grace time.Duration) (matchmaking.Status, bool, error) {
	once(&q.beforeCancel)
	return q.Queue.Cancel(ctx, t, grace)
}

// Two runs of one keyed create at once, one failing before the other
// queued the ticket: the failed run's release of the shared claims comes
// before the other's queueing, or between the failed run's look for the
// ticket and its release. Either way the queued ticket's user holds its
// claim after: a ticket of another shard's mode is refused (the shard's
// own active-ticket field does not reach it). The failed run's release
// left the queued ticket unclaimed (a race-hunting helper's find).
func TestKeyedRunFailingBesideTheOtherLeavesItsClaims(t *testing.T) {
	rs := mustRules(t, "modes:\n  duel: {}\n  m1: {}\n  m2: {}\n  m3: {}\n  m4: {}\n  m5: {}\n")
	for _, order := range []string{"released before the other queued", "the other queued between the look and the release"} {
		t.Run(order, func(t *testing.T) {
			redistest.Each(t, func(t *testing.T, b redistest.Backend) {
				ctx := context.Background()
				e := open(t, b, rs)
				service := func(q matchmaking.Queue) *matchmaking.Service {
					cfg := e.cfg
					cfg.Queue = q
					svc, err := matchmaking.NewService(cfg)
					if err != nil {
						t.Fatal(err)
					}
					return svc
				}
				p := matchmaking.TicketParams{Mode: "duel", Regions: []string{"eu"}, Key: "key-1"}
				failing := &hooked{Queue: e.tickets, failAdd: true}
				queuing := &hooked{Queue: e.tickets}
				var queued matchmaking.Ticket
				var failed error
				if order == "released before the other queued" {
					queuing.beforeAdd = func() { _, failed = service(failing).Create(ctx, player("k0"), p) }
					var err error
					if queued, err = service(queuing).Create(ctx, player("k0"), p); err != nil {
						t.Fatal(err)
					}
					if !errors.Is(failed, matchmaking.ErrQueueFull) {
						t.Fatalf("the failing run: %v", failed)
					}
				} else {
					failing.beforeRelease = func() {
						var err error
						if queued, err = service(queuing).Create(ctx, player("k0"), p); err != nil {
							t.Error(err)
						}
					}
					got, err := service(failing).Create(ctx, player("k0"), p)
					if err != nil || got.ID != queued.ID || !got.Again {
						t.Fatalf("the failing run, the other's ticket queued meanwhile: %+v %v, want %s again", got, err, queued.ID)
					}
				}
				mode := ""
				for _, m := range []string{"m1", "m2", "m3", "m4", "m5"} {
					if e.tickets.ModesKey(m) != e.tickets.ModesKey("duel") {
						mode = m
						break
					}
				}
				if mode == "" {
					t.Fatal("no mode on another shard than duel's")
				}
				_, err := e.svc.Create(ctx, player("k0"), matchmaking.TicketParams{Mode: mode, Regions: []string{"eu"}})
				if !errors.Is(err, matchmaking.ErrTicketActive) {
					t.Fatalf("a ticket of %s beside %s searching: %v, want ErrTicketActive", mode, queued.ID, err)
				}
			})
		})
	}
}

// A user whose claim a failover lost (ForgetClaim) cannot queue a second
// ticket beside one searching, or matched without its room, in a mode of
// the same shard: the create finds the user's active-ticket field there
// (409 TICKET_ACTIVE naming the ticket), whether the user leads the new
// ticket or is a member of its party; once the first ticket is final
// (cancelled, past its expiry though no pass marked it yet, or given its
// match's room), the user queues again. The refused creates leave no
// claim.
func TestLostClaimStillOneActiveTicket(t *testing.T) {
	rs := mustRules(t, "modes:\n  ffa:\n    minPlayers: 3\n    maxPlayers: 4\n  trio:\n    minPlayers: 3\n    maxPlayers: 3\n")
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := context.Background()
		e := open(t, b, rs)
		rating := 1000.0
		create := func(uid string, party ...string) (matchmaking.Ticket, error) {
			return e.svc.Create(ctx, player(uid), matchmaking.TicketParams{Mode: "ffa", Regions: []string{"eu"}, Rating: &rating,
				PartyUserIDs: party})
		}
		first, err := create("u1", "u2")
		if err != nil {
			t.Fatal(err)
		}
		for _, step := range []struct {
			leader string
			party  []string
		}{{"u1", nil}, {"u3", []string{"u2"}}, {"u2", nil}} {
			for _, u := range append([]string{step.leader}, step.party...) {
				if err := e.tickets.ForgetClaim(ctx, u); err != nil {
					t.Fatal(err)
				}
			}
			tk, err := create(step.leader, step.party...)
			if !errors.Is(err, matchmaking.ErrTicketActive) || !strings.Contains(err.Error(), first.ID) {
				t.Fatalf("%s's create (party %v) after a lost claim: %+v %v, want TICKET_ACTIVE naming %s", step.leader, step.party, tk, err, first.ID)
			}
			if n, _ := e.tickets.Searching(ctx, "ffa"); n != 1 {
				t.Fatalf("the queue holds %d tickets, want the first alone", n)
			}
			if held, err := e.tickets.Claim(ctx, step.leader, "probe", "", time.Minute); err != nil || held.ID != "" {
				t.Fatalf("%s's claim after the refused create: %+v %v, want none", step.leader, held, err)
			}
			if err := e.tickets.Release(ctx, step.leader, "probe"); err != nil {
				t.Fatal(err)
			}
		}
		if err := e.svc.Cancel(ctx, player("u1"), first.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := create("u2"); err != nil {
			t.Fatalf("u2's create once the first ticket was cancelled: %v", err)
		}
		// past its expiry, before any pass marked it
		stale, err := create("u5")
		if err != nil {
			t.Fatal(err)
		}
		if err := e.tickets.SetExpires(ctx, "ffa", stale.ID, time.Now().Add(-time.Minute).UnixMilli()); err != nil {
			t.Fatal(err)
		}
		if err := e.tickets.ForgetClaim(ctx, "u5"); err != nil {
			t.Fatal(err)
		}
		if _, err := create("u5"); err != nil {
			t.Fatalf("u5's create beside a ticket past its expiry: %v", err)
		}
		// matched without its room, then given it
		trio := func(uid string) (matchmaking.Ticket, error) {
			return e.svc.Create(ctx, player(uid), matchmaking.TicketParams{Mode: "trio", Regions: []string{"eu"}, Rating: &rating})
		}
		for _, uid := range []string{"v1", "v2", "v3"} {
			if _, err := trio(uid); err != nil {
				t.Fatal(err)
			}
		}
		p, err := e.tickets.Pass(ctx, "trio", rs.Of("trio"), matchmaking.PassParams{Walk: 100, Sweep: 100, Grace: time.Minute})
		if err != nil || len(p.Matches) != 1 {
			t.Fatalf("pass %+v %v, want one match", p, err)
		}
		if err := e.tickets.ForgetClaim(ctx, "v1"); err != nil {
			t.Fatal(err)
		}
		if _, err := trio("v1"); !errors.Is(err, matchmaking.ErrTicketActive) {
			t.Fatalf("v1's create while matched without a room: %v, want TICKET_ACTIVE", err)
		}
		if _, err := e.tickets.Assign(ctx, p.Matches[0], "r1", time.Time{}); err != nil {
			t.Fatal(err)
		}
		if _, err := trio("v1"); err != nil {
			t.Fatalf("v1's create once its match has its room: %v", err)
		}
	})
}
