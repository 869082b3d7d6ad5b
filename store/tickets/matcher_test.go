package tickets_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/realsync/realsync/internal/rediskeys"
	"github.com/realsync/realsync/internal/wait"
	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/internal/testlog"
	"github.com/realsync/realsync/matchmaking"
	"github.com/realsync/realsync/players"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/store"
)

// recorder keeps every match_found sent, then sends it on.
type recorder struct {
	next matchmaking.Notifier
	mu   sync.Mutex
	got  map[string]map[string]matchmaking.MatchFound // user → match id → event
}

func (r *recorder) MatchFound(ctx context.Context, uid string, e matchmaking.MatchFound) error {
	r.mu.Lock()
	if r.got[uid] == nil {
		r.got[uid] = map[string]matchmaking.MatchFound{}
	}
	r.got[uid][e.MatchID] = e
	r.mu.Unlock()
	return r.next.MatchFound(ctx, uid, e)
}

// dying is a RoomOpener that dies (blocks until its instance's context
// ends) at its after-th call: the instance is killed between a pass and
// its rooms, leaving a pending match.
type dying struct {
	matchmaking.RoomOpener
	after int
	kill  context.CancelFunc
	mu    sync.Mutex
	calls int
}

func (d *dying) OpenMatchRoom(ctx context.Context, m matchmaking.Match, n int, hold time.Duration) (string, error) {
	d.mu.Lock()
	d.calls++
	die := d.calls >= d.after
	d.mu.Unlock()
	if die {
		d.kill()
		<-ctx.Done()
		return "", ctx.Err()
	}
	return d.RoomOpener.OpenMatchRoom(ctx, m, n, hold)
}

// Thousands of tickets' worth of invariants, at test scale: parties,
// concurrent cancels, two matcher instances, one killed mid-match. Every
// ticket ends matched, expired or cancelled exactly once; no user is in
// two matches; teams are full; every ticket's window at match time holds
// every rating of its match; parties are whole in one team; each match's
// room holds seats for exactly its users; a cancel that succeeded never
// lost to a match.
func TestMatcherInvariants(t *testing.T) {
	rs := mustRules(t, `
modes:
  squad:
    teams: 2
    teamSize: 2
    window: {start: 30, step: 60, every: 1s, max: 400}
    ticketTTL: 5s
    seatHold: 1m
`)
	r := rs.Of("squad")
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		e := open(t, b, rs)
		rec := &recorder{next: e.tickets, got: map[string]map[string]matchmaking.MatchFound{}}
		mcfg := func(holder string, rooms matchmaking.RoomOpener) matchmaking.MatcherConfig {
			return matchmaking.MatcherConfig{Config: e.cfg, Rooms: rooms, Notifier: rec, Holder: holder,
				Interval: 50 * time.Millisecond, LeaseTTL: time.Second, RepairAfter: time.Second}
		}
		actx, killA := context.WithCancel(ctx)
		a := matchmaking.NewMatcher(mcfg("a", &dying{RoomOpener: e.rooms, after: 3, kill: killA}))
		bctx, stopB := context.WithCancel(ctx)
		bm := matchmaking.NewMatcher(mcfg("b", e.rooms))
		var wg sync.WaitGroup
		// A runs rounds itself, so it never drops its lease: killed, it
		// leaves the lease to lapse, as a dead process does
		wg.Go(func() {
			for actx.Err() == nil {
				a.Round(actx)
				time.Sleep(50 * time.Millisecond)
			}
		})
		wg.Go(func() { bm.Run(bctx) })

		type made struct {
			t        matchmaking.Ticket
			canceled bool // Cancel returned nil
			matched  bool // Cancel returned ErrTicketMatched
		}
		var mu sync.Mutex
		var all []*made
		// REALSYNC_TEST_MM_TICKETS runs it with more tickets (160 by default)
		perProducer := 40
		if n, err := strconv.Atoi(os.Getenv("REALSYNC_TEST_MM_TICKETS")); err == nil && n >= 4 {
			perProducer = n / 4
		}
		var producers sync.WaitGroup
		for w := range 4 {
			producers.Go(func() {
				rng := rand.New(rand.NewPCG(uint64(w), 7))
				for i := range perProducer {
					p := matchmaking.TicketParams{Mode: "squad", Regions: []string{"eu"}, Rating: rating(float64(1000 + rng.IntN(300)))}
					lead := fmt.Sprintf("w%d-u%d", w, i)
					if rng.IntN(3) == 0 {
						p.PartyUserIDs = []string{lead + "-m"}
					}
					tk, err := e.svc.Create(ctx, player(lead), p)
					if err != nil {
						t.Error(err)
						return
					}
					m := &made{t: tk}
					mu.Lock()
					all = append(all, m)
					mu.Unlock()
					if rng.IntN(4) == 0 { // a concurrent cancel, soon or later
						delay := time.Duration(rng.IntN(150)) * time.Millisecond
						producers.Go(func() {
							time.Sleep(delay)
							err := e.svc.Cancel(ctx, player(lead), tk.ID)
							mu.Lock()
							defer mu.Unlock()
							switch {
							case err == nil:
								m.canceled = true
							case errors.Is(err, matchmaking.ErrTicketMatched):
								m.matched = true
							default:
								t.Error(err)
							}
						})
					}
					time.Sleep(time.Duration(rng.IntN(20)) * time.Millisecond)
				}
			})
		}
		producers.Wait()
		// until every ticket is final and no match is pending (A's
		// included: B completes it once A's lease lapses)
		deadline := time.Now().Add(30 * time.Second)
		for {
			n, _ := e.tickets.Searching(ctx, "squad")
			p, _ := e.tickets.Pending(ctx, "squad")
			if n == 0 && len(p) == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("after 30 s: %d searching, %d pending", n, len(p))
			}
			time.Sleep(100 * time.Millisecond)
		}
		stopB()
		killA()
		wg.Wait()
		if actx.Err() == nil {
			t.Fatal("A was never killed: no pending match to repair")
		}

		byMatch := map[string][]matchmaking.Ticket{}
		counts := map[matchmaking.Status]int{}
		for _, m := range all {
			tk, err := e.tickets.Get(ctx, m.t.ID)
			if err != nil {
				t.Fatal(err)
			}
			counts[tk.Status]++
			switch {
			case tk.Status == matchmaking.Searching:
				t.Fatalf("%s still searching", tk.ID)
			case m.canceled && tk.Status != matchmaking.Cancelled && tk.Status != matchmaking.Expired:
				t.Fatalf("%s: cancel succeeded, ticket %s", tk.ID, tk.Status)
			case m.matched && tk.Status != matchmaking.Matched:
				t.Fatalf("%s: cancel said matched, ticket %s", tk.ID, tk.Status)
			case tk.Status == matchmaking.Matched:
				if tk.RoomID == "" {
					t.Fatalf("%s matched without a room", tk.ID)
				}
				byMatch[tk.MatchID] = append(byMatch[tk.MatchID], tk)
			}
		}
		if len(byMatch) < 5 {
			t.Fatalf("only %d matches (%v): the test checks little", len(byMatch), counts)
		}
		inMatch := map[string]string{}
		for mid, ts := range byMatch {
			teams := make([]int, r.Teams)
			lo, hi := 1e18, -1e18
			room := ts[0].RoomID
			var users []string
			for _, tk := range ts {
				teams[tk.Team] += tk.Size()
				lo, hi = min(lo, tk.Rating), max(hi, tk.Rating)
				if tk.RoomID != room {
					t.Fatalf("match %s in rooms %s and %s", mid, room, tk.RoomID)
				}
				for _, uid := range tk.Users() {
					if other, ok := inMatch[uid]; ok {
						t.Fatalf("%s in matches %s and %s", uid, other, mid)
					}
					inMatch[uid] = mid
					users = append(users, uid)
					if len(rec.got[uid]) != 1 || rec.got[uid][mid].Team != tk.Team || rec.got[uid][mid].RoomID != room || rec.got[uid][mid].Leader != tk.UserID {
						t.Fatalf("%s got match_found %v, want match %s team %d, its ticket's leader %s", uid, rec.got[uid], mid, tk.Team, tk.UserID)
					}
				}
			}
			for _, tk := range ts {
				if w := r.WindowAt(tk.MatchedAt.Sub(tk.CreatedAt)); hi-lo > w {
					t.Fatalf("match %s spread %v past %s's window %v", mid, hi-lo, tk.ID, w)
				}
			}
			for _, n := range teams {
				if n != r.TeamSize {
					t.Fatalf("match %s teams %v", mid, teams)
				}
			}
			rm, _, err := e.rooms.Get(ctx, room, false)
			if err != nil {
				t.Fatal(err)
			}
			if len(rm.Players) != 1 || rm.Players[0].UserID != users[0] && !contains(users, rm.Players[0].UserID) ||
				rm.ReservedSeats != len(users)-1 || rm.MaxPlayers != r.Size() || rm.Mode != "squad" {
				t.Fatalf("match %s room: %d players, %d reserved, max %d, for %d users", mid, len(rm.Players), rm.ReservedSeats, rm.MaxPlayers, len(users))
			}
		}
		for uid, ms := range rec.got {
			if _, ok := inMatch[uid]; !ok || len(ms) != 1 {
				t.Fatalf("%s told of matches %v, in %q", uid, ms, inMatch[uid])
			}
		}
		t.Logf("%s: %v over %d matches", b.Name, counts, len(byMatch))
	})
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// Every key a ticket made goes once its tickets are final and their grace
// passed: the queue, schedule, records, pending matches, leases, claims.
func TestTicketKeysGo(t *testing.T) {
	rs := mustRules(t, "modes:\n  duel:\n    ticketTTL: 1s\n")
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := context.Background()
		e := open(t, b, rs, func(c *matchmaking.Config) { c.Grace = 500 * time.Millisecond })
		m := matchmaking.NewMatcher(matchmaking.MatcherConfig{Config: e.cfg, Rooms: e.rooms, Notifier: e.tickets,
			Holder: "a", LeaseTTL: 500 * time.Millisecond})
		for i := range 5 { // two matches and one left to expire, one cancelled
			tk, err := e.svc.Create(ctx, player(fmt.Sprintf("u%d", i)), matchmaking.TicketParams{Mode: "duel", Regions: []string{"eu"}})
			if err != nil {
				t.Fatal(err)
			}
			if i == 4 {
				if err := e.svc.Cancel(ctx, player("u4"), tk.ID); err != nil {
					t.Fatal(err)
				}
			}
		}
		m.Round(ctx)
		if keys := mmKeys(t, e); len(keys) == 0 {
			t.Fatal("no matchmaking keys while tickets live: the scan finds nothing")
		}
		roundsUntilKeysGo(t, m, func() []string { return mmKeys(t, e) })
	})
}

// A lone ticket that expires in a quiet mode, swept late (its grace runs
// from the sweep), still goes with every key: the mode stays listed until
// a pass after its grace (a tester's find: the mode's listing lapsed just
// before the expired ticket's grace ended, so no pass ever dropped it and
// its record and schedule entry stayed forever).
func TestExpiredTicketGoesAfterALateSweep(t *testing.T) {
	rs := mustRules(t, "modes:\n  quiet:\n    ticketTTL: 1s\n")
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := context.Background()
		e := open(t, b, rs, func(c *matchmaking.Config) { c.Grace = 500 * time.Millisecond })
		m := matchmaking.NewMatcher(matchmaking.MatcherConfig{Config: e.cfg, Rooms: e.rooms, Notifier: e.tickets,
			Holder: "a", LeaseTTL: 500 * time.Millisecond})
		if _, err := e.svc.Create(ctx, player("lone"), matchmaking.TicketParams{Mode: "quiet", Regions: []string{"eu"}}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(1400 * time.Millisecond) // past the TTL, no pass yet: a busy or restarting matcher
		roundsUntilKeysGo(t, m, func() []string { return mmKeys(t, e) })
	})
}

// mmKeys lists e's matchmaking keys.
func mmKeys(t *testing.T, e env) []string {
	t.Helper()
	keys, err := rediskeys.Scan(context.Background(), e.rooms.Client(), "*"+e.rooms.Base().Prefix+"*:mm:*")
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

// roundsUntilKeysGo runs m's rounds until keys lists nothing (15 s at most).
func roundsUntilKeysGo(t *testing.T, m *matchmaking.Matcher, keys func() []string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		m.Round(context.Background())
		left := keys()
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("keys left: %v", left)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// A ticket's create lists its mode in its shard's list until the ticket's
// grace could end, never earlier than a later ticket listed it (GT). A
// mode an instance from before the per-shard lists put on shard 0's list
// (every mode's then) is listed too, and a pass finding it empty forgets
// it there once its time is past (kept while it is ahead).
func TestCreateListsItsMode(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := context.Background()
		e := open(t, b, mustRules(t, "modes:\n  duel: {}\n"))
		c := e.rooms.Client()
		tk, err := e.svc.Create(ctx, player("l1"), matchmaking.TicketParams{Mode: "duel", Regions: []string{"eu"}})
		if err != nil {
			t.Fatal(err)
		}
		listed := func(key, mode string) float64 {
			t.Helper()
			at, err := c.ZScore(ctx, key, mode).Result()
			if err != nil {
				t.Fatalf("%s in %s: %v", mode, key, err)
			}
			return at
		}
		want := float64(tk.ExpiresAt.Add(e.cfg.Grace).UnixMilli())
		if at := listed(e.tickets.ModesKey("duel"), "duel"); at != want {
			t.Fatalf("duel listed until %v, want its ticket's expiry and grace, %v", at, want)
		}
		short := matchmaking.Ticket{ID: e.tickets.NewID("duel", ""), Mode: "duel", Regions: []string{"eu"}, UserID: "l2"}
		if _, err := e.tickets.Add(ctx, short, matchmaking.GroupKey{Size: 1, Regions: short.Regions, Users: []string{"l2"}},
			time.Second, 0, 100); err != nil {
			t.Fatal(err)
		}
		if at := listed(e.tickets.ModesKey("duel"), "duel"); at != want {
			t.Fatalf("duel listed until %v after a shorter ticket, want %v still", at, want)
		}

		// old instances' listings, on shard 0's list
		var old []string
		for i := 0; len(old) < 2; i++ {
			if mode := fmt.Sprintf("old%d", i); e.tickets.ModeShard(mode) != 0 {
				old = append(old, mode)
			}
		}
		past, future := time.Now().Add(-time.Hour), time.Now().Add(time.Hour)
		if err := c.ZAdd(ctx, e.tickets.ShardModesKey(0), redis.Z{Score: float64(past.UnixMilli()), Member: old[0]},
			redis.Z{Score: float64(future.UnixMilli()), Member: old[1]}).Err(); err != nil {
			t.Fatal(err)
		}
		if modes, err := e.tickets.Modes(ctx); err != nil || !slices.Equal(modes, slices.Sorted(slices.Values(append([]string{"duel"}, old...)))) {
			t.Fatalf("modes %v %v, want duel and %v", modes, err, old)
		}
		if until, err := e.tickets.Forget(ctx, old[0]); err != nil || !until.IsZero() {
			t.Fatalf("Forget of %s, its time past: %v %v, want it gone", old[0], until, err)
		}
		if until, err := e.tickets.Forget(ctx, old[1]); err != nil || until.UnixMilli() != future.UnixMilli() {
			t.Fatalf("Forget of %s, its time ahead: %v %v, want kept until %v", old[1], until, err, future)
		}
		if modes, err := e.tickets.Modes(ctx); err != nil || !slices.Equal(modes, []string{"duel", old[1]}) {
			t.Fatalf("modes after the Forgets: %v %v, want duel and %s", modes, err, old[1])
		}
		// WithModes (REALSYNC_MODES): the lists of those modes' shards and
		// shard 0's are read, no other
		other := ""
		for i := 0; other == ""; i++ {
			if m := fmt.Sprintf("z%d", i); e.tickets.ModeShard(m) != 0 && e.tickets.ModeShard(m) != e.tickets.ModeShard("duel") {
				other = m
			}
		}
		if err := c.ZAdd(ctx, e.tickets.ModesKey(other), redis.Z{Score: float64(future.UnixMilli()), Member: other}).Err(); err != nil {
			t.Fatal(err)
		}
		if modes, err := e.tickets.WithModes([]string{"duel"}).Modes(ctx); err != nil || !slices.Equal(modes, []string{"duel", old[1]}) {
			t.Fatalf("modes of duel's shard and shard 0: %v %v, want duel and %s", modes, err, old[1])
		}
		// every shard's all the same once a minute (a mode taken out of
		// REALSYNC_MODES with tickets left), and the shard found with a
		// mode at every read until one finds it without, then narrowed
		// again
		e.tickets.ListAllDue()
		for i, want := range [][]string{{"duel", old[1], other}, {"duel", old[1], other}} {
			if modes, err := e.tickets.Modes(ctx); err != nil || !slices.Equal(modes, want) {
				t.Fatalf("read %d once a minute was due: %v %v, want %v", i+1, modes, err, want)
			}
		}
		if err := c.ZRem(ctx, e.tickets.ModesKey(other), other).Err(); err != nil {
			t.Fatal(err)
		}
		for i := range 2 {
			if modes, err := e.tickets.Modes(ctx); err != nil || !slices.Equal(modes, []string{"duel", old[1]}) {
				t.Fatalf("read %d after %s left its list: %v %v, want duel and %s", i+1, other, modes, err, old[1])
			}
			if err := c.ZAdd(ctx, e.tickets.ModesKey(other), redis.Z{Score: float64(future.UnixMilli()), Member: other}).Err(); err != nil {
				t.Fatal(err)
			}
		}
		if modes, err := e.tickets.WithModes(nil).Modes(ctx); err != nil || !slices.Equal(modes, []string{"duel", old[1], other}) {
			t.Fatalf("modes of every shard: %v %v, want duel, %s and %s", modes, err, old[1], other)
		}
	})
}

// Modes reads every shard's list of modes at each tick. The reads bound for
// one node leave together, as pipelines of reads the batcher takes (each
// on its own it was a round trip per shard, at every tick of every
// instance): with a batch window all of one node's lists go out at once.
func TestModesReadTogether(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := context.Background()
		e := openStore(t, b, store.Config{Batch: &store.Batching{Window: 100 * time.Millisecond}}, mustRules(t, "modes:\n  duel: {}\n"))
		c, future := e.rooms.Client(), float64(time.Now().Add(time.Hour).UnixMilli())
		var want []string
		for shard := range shards {
			mode := ""
			for i := 0; mode == ""; i++ {
				if m := fmt.Sprintf("m%d", i); e.tickets.ModeShard(m) == shard {
					mode = m
				}
			}
			if err := c.ZAdd(ctx, e.tickets.ModesKey(mode), redis.Z{Score: future, Member: mode}).Err(); err != nil {
				t.Fatal(err)
			}
			want = append(want, mode)
		}
		var sends atomic.Int64 // what reached the wire with a list of modes in it
		c.AddHook(redistest.Around(func(_ context.Context, cmds []redis.Cmder, send func() error) error {
			if slices.ContainsFunc(cmds, func(cmd redis.Cmder) bool { return strings.Contains(fmt.Sprint(cmd.Args()...), ":mm:modes") }) {
				sends.Add(1)
			}
			return send()
		}))
		e.tickets.ListAllDue()
		modes, err := e.tickets.Modes(ctx)
		if slices.Sort(want); err != nil || !slices.Equal(modes, want) {
			t.Fatalf("modes %v %v, want one of each shard's: %v", modes, err, want)
		}
		if n := sends.Load(); n == 0 || n >= int64(len(want)) {
			t.Fatalf("the %d shards' lists reached Redis in %d sends, want them together (one a node)", len(want), n)
		}
	})
}

// A mode stays listed while it has tickets or pending matches, however
// long since its last ticket was created (an outage longer than a
// ticket's TTL and grace: its Cluster master down): its pending match is
// repaired and its tickets end. A mode a pass finds empty leaves the list
// once its time is past. A chaos test's 14-minute pause of a master left
// a mode's time past: the listing dropped it, and its pending matches
// (told some of their users) and searching tickets sat until a new
// ticket of the mode came.
func TestModeListedWhileItHasTickets(t *testing.T) {
	rs := mustRules(t, "modes:\n  duel: {}\n")
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := context.Background()
		e := open(t, b, rs)
		ids := duelPair(t, e, "duel", "o0", "o1")
		crash := &crashing{RoomOpener: e.rooms}
		matchmaking.NewMatcher(matchmaking.MatcherConfig{Config: e.cfg, Rooms: crash, Notifier: e.tickets, Holder: "a"}).Round(ctx)
		if p, err := e.tickets.Pending(ctx, "duel"); err != nil || len(p) != 1 {
			t.Fatalf("pending after the crash: %+v %v", p, err)
		}
		past := float64(time.Now().Add(-time.Hour).UnixMilli())
		future := float64(time.Now().Add(time.Hour).UnixMilli())
		c := e.rooms.Client()
		for mode, at := range map[string]float64{"duel": past, "ghost": past, "fresh": future} {
			if err := c.ZAdd(ctx, e.tickets.ModesKey(mode), redis.Z{Score: at, Member: mode}).Err(); err != nil {
				t.Fatal(err)
			}
		}
		e.tickets.ListAllDue() // listed as by another instance: read at the next tick
		takeLease(t, e, "duel", "a", "b")
		m := matchmaking.NewMatcher(matchmaking.MatcherConfig{Config: e.cfg, Rooms: e.rooms, Notifier: e.tickets, Holder: "b",
			RepairAfter: time.Millisecond})
		m.Round(ctx)
		if p, err := e.tickets.Pending(ctx, "duel"); err != nil || len(p) != 0 {
			t.Fatalf("pending after b's round: %+v %v, want the match repaired", p, err)
		}
		for _, id := range ids {
			if tk, err := e.tickets.Get(ctx, id); err != nil || tk.Status != matchmaking.Matched || tk.RoomID == "" {
				t.Fatalf("ticket %s after b's round: %+v %v, want matched into its room", id, tk, err)
			}
		}
		modes, err := e.tickets.Modes(ctx)
		if err != nil || !slices.Equal(modes, []string{"duel", "fresh"}) {
			t.Fatalf("modes listed: %v %v, want duel (its tickets in their grace) and fresh (its time ahead), not ghost", modes, err)
		}
	})
}

// closing opens a match's room and deletes it at once, then fails as a
// matcher that crashed after opening it: the room was made and is gone
// before the match was completed.
type closing struct {
	matchmaking.RoomOpener
	rooms *store.Store
	ids   []string
}

func (c *closing) OpenMatchRoom(ctx context.Context, m matchmaking.Match, n int, hold time.Duration) (string, error) {
	id, err := c.RoomOpener.OpenMatchRoom(ctx, m, n, hold)
	if err != nil {
		return "", err
	}
	c.ids = append(c.ids, id)
	if _, err := c.rooms.Delete(ctx, player(m.Users()[0]), id); err != nil {
		return "", err
	}
	return "", errors.New("crashed after opening the room")
}

// A match whose room was made and closed before the match was completed
// (a crash, then the players gone) is put back in the queue by the
// repair, not sent to a room that no longer is: and no room is made again
// at its id (the closed room's log keeps it), which started a second room
// on the old log (a reviewer's find).
func TestRepairOfAMatchWhoseRoomClosedRequeues(t *testing.T) {
	rs := mustRules(t, "modes:\n  duel: {}\n")
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := context.Background()
		e := open(t, b, rs)
		var ids []string
		for i := range 2 {
			tk, err := e.svc.Create(ctx, player(fmt.Sprintf("c%d", i)), matchmaking.TicketParams{Mode: "duel", Regions: []string{"eu"}})
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, tk.ID)
		}
		rec := &recorder{next: e.tickets, got: map[string]map[string]matchmaking.MatchFound{}}
		crash := &closing{RoomOpener: e.rooms, rooms: e.rooms}
		// a never repairs (its own pass would repair the match it left
		// pending once 100 ms old, as on a loaded machine: CI 2026-11-30);
		// b repairs what is 100 ms old. A lease of 1 s: each lease call is
		// bounded by a third of the TTL, and with 200 ms (67 ms a call) a's
		// confirmation before its pass failed once on a loaded machine
		// (CI 2026-12-02, Cluster, under -race): no pass, no room
		mcfg := func(holder string, rooms matchmaking.RoomOpener, repairAfter time.Duration) matchmaking.MatcherConfig {
			return matchmaking.MatcherConfig{Config: e.cfg, Rooms: rooms, Notifier: rec, Holder: holder,
				LeaseTTL: time.Second, RepairAfter: repairAfter}
		}
		matchmaking.NewMatcher(mcfg("a", crash, time.Hour)).Round(ctx)
		if len(crash.ids) != 1 {
			t.Fatalf("rooms opened: %v, want one", crash.ids)
		}
		if p, _ := e.tickets.Pending(ctx, "duel"); len(p) != 1 {
			t.Fatalf("%d pending matches after the crash, want 1", len(p))
		}
		time.Sleep(1100 * time.Millisecond) // a's lease lapses, the match is old enough to repair
		// three rounds of b (a repair, then the requeued tickets matched
		// again), and more until the match is repaired: a round on a
		// stalled machine may find a's lease not lapsed yet, or its own
		// lease call cut by its bound (a third of the TTL)
		bm := matchmaking.NewMatcher(mcfg("b", e.rooms, 100*time.Millisecond))
		for range 3 {
			bm.Round(ctx)
		}
		wait.Within(t, 15*time.Second, "the pending match repaired by b's rounds", func() bool {
			if p, err := e.tickets.Pending(ctx, "duel"); err == nil && len(p) == 0 {
				return true
			}
			bm.Round(ctx)
			return false
		})
		if _, _, err := e.rooms.Get(ctx, crash.ids[0], false); !errors.Is(err, rooms.ErrRoomNotFound) {
			t.Fatalf("the closed match room %s: %v, want not found (never made again)", crash.ids[0], err)
		}
		for _, id := range ids {
			tk, err := e.tickets.Get(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if tk.Status == matchmaking.Matched && tk.RoomID == crash.ids[0] {
				t.Fatalf("ticket %s matched into the closed room %s", id, tk.RoomID)
			}
			if tk.Status == matchmaking.Matched {
				if _, _, err := e.rooms.Get(ctx, tk.RoomID, false); err != nil {
					t.Fatalf("ticket %s matched again into room %s: %v", id, tk.RoomID, err)
				}
			}
		}
		for uid, ms := range rec.got {
			for _, m := range ms {
				if m.RoomID == crash.ids[0] {
					t.Fatalf("%s told of the closed room", uid)
				}
			}
		}
		// of the closed room only its log is left (no hash, players or
		// users of a second room on it)
		keys, err := rediskeys.Scan(ctx, e.rooms.Client(), "*"+crash.ids[0]+"*")
		if err != nil {
			t.Fatal(err)
		}
		if len(keys) != 1 {
			t.Fatalf("keys of the closed match room: %v, want its log alone", keys)
		}
	})
}

// crashing is a RoomOpener whose instance dies right after opening a
// match's room, before it tells the users: the match stays pending, for
// a repair. ids are the rooms it opened.
type crashing struct {
	matchmaking.RoomOpener
	ids []string
}

func (c *crashing) OpenMatchRoom(ctx context.Context, m matchmaking.Match, n int, hold time.Duration) (string, error) {
	id, err := c.RoomOpener.OpenMatchRoom(ctx, m, n, hold)
	if err != nil {
		return "", err
	}
	c.ids = append(c.ids, id)
	return "", errors.New("crashed after opening the room")
}

// failsOnce is a Notifier whose first match_found fails (the instance
// dying as it tells the users: the match's others may be told, at once).
type failsOnce struct {
	matchmaking.Notifier
	mu sync.Mutex
	n  int
}

func (f *failsOnce) MatchFound(ctx context.Context, uid string, e matchmaking.MatchFound) error {
	f.mu.Lock()
	f.n++
	first := f.n == 1
	f.mu.Unlock()
	if first {
		return errors.New("died before telling them")
	}
	return f.Notifier.MatchFound(ctx, uid, e)
}

// The repair of a match whose room was made before its instance died, and
// whose room banned some of its users since, refuses them as a backfill
// does: each ticket holding a banned user (a party whole) goes back to the
// queue, searching, barred from the room, and its users are not told of
// it; the other tickets keep their match, told and recorded, their seats
// held. The owner (the first ticket's leader, the room's creator) is
// refused too once the server banned them; a room that refused every
// other ticket is its owner's match alone; and a repair that dies after
// putting the refused tickets back leaves the pending record to the
// others, completed by the next repair. A ticket one of whose users is in
// the room keeps the match, its banned user unable to join (as before the
// refusals): sent back, the party would be matched again while that user
// plays in this room, in two matches (a reviewer's find); a party whose
// banned member is the one who joined has nobody in the room and goes
// back. Whatever the case, the next round matches no user of the room
// into another.
func TestRepairOfAMatchRoomThatBannedSomeUsers(t *testing.T) {
	rs := mustRules(t, "modes:\n  ffa:\n    minPlayers: 3\n    maxPlayers: 4\n    backfill: true\n")
	r := rs.Of("ffa")
	admin := rooms.User{ID: rooms.ServerUserPrefix + "gs", Name: "gs", Server: true, Scopes: rooms.ScopeAdmin}
	type party struct {
		leader  string
		members []string
	}
	cases := []struct {
		name    string
		tickets []party  // the first ticket's leader owns the room
		joined  []string // who takes their seat before the bans
		banBy   rooms.User
		banned  []string // banned by banBy
		refused []string // the leaders whose tickets go back to the queue
		dies    bool     // the repair dies after putting the refused back
	}{
		{name: "a user", tickets: []party{{"u1", nil}, {"u2", nil}, {"u3", nil}},
			joined: []string{"u2"}, banBy: player("u1"), banned: []string{"u2"}, refused: []string{"u2"}},
		{name: "a party member who joined", tickets: []party{{"u1", nil}, {"u2", []string{"u3"}}, {"u4", nil}},
			joined: []string{"u3"}, banBy: player("u1"), banned: []string{"u3"}, refused: []string{"u2"}},
		{name: "a party member, another in the room", tickets: []party{{"u1", nil}, {"u2", []string{"u3"}}, {"u4", nil}},
			joined: []string{"u3", "u2"}, banBy: player("u1"), banned: []string{"u2"}},
		{name: "a party member, another in the room, a third not", tickets: []party{{"u1", nil}, {"u2", []string{"u3", "u4"}}},
			joined: []string{"u3", "u2"}, banBy: player("u1"), banned: []string{"u2"}},
		{name: "the owner, a party member in the room", tickets: []party{{"u1", []string{"u4"}}, {"u2", nil}, {"u3", nil}},
			joined: []string{"u4"}, banBy: admin, banned: []string{"u1"}},
		{name: "the owner", tickets: []party{{"u1", nil}, {"u2", nil}, {"u3", nil}},
			joined: []string{"u3"}, banBy: admin, banned: []string{"u1"}, refused: []string{"u1"}},
		{name: "all but the owner", tickets: []party{{"u1", nil}, {"u2", nil}, {"u3", nil}},
			joined: []string{"u2", "u3"}, banBy: player("u1"), banned: []string{"u2", "u3"}, refused: []string{"u2", "u3"}},
		{name: "a repair that dies", tickets: []party{{"u1", nil}, {"u2", nil}, {"u3", nil}},
			joined: []string{"u2"}, banBy: player("u1"), banned: []string{"u2"}, refused: []string{"u2"}, dies: true},
	}
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				ctx := context.Background()
				e := open(t, b, rs)
				var parties [][]string
				for _, p := range c.tickets {
					parties = append(parties, append([]string{p.leader}, p.members...))
				}
				ids := queueParties(t, e, parties...) // leader → ticket id
				rec := &recorder{next: e.tickets, got: map[string]map[string]matchmaking.MatchFound{}}
				crash := &crashing{RoomOpener: e.rooms}
				mcfg := matchmaking.MatcherConfig{Config: e.cfg, Rooms: crash, Notifier: rec, Holder: "a"}
				matchmaking.NewMatcher(mcfg).Round(ctx)
				pending, err := e.tickets.Pending(ctx, "ffa")
				if err != nil || len(pending) != 1 || len(pending[0].Tickets) != len(c.tickets) || len(crash.ids) != 1 {
					t.Fatalf("pending after the crash: %+v %v, rooms %v, want the match of every ticket and its room", pending, err, crash.ids)
				}
				room := crash.ids[0]
				match := pending[0]
				if match.Tickets[0].ID != ids["u1"] {
					t.Fatalf("match %+v: u1's ticket is not the first (the owner's)", match)
				}
				pids := map[string]int{"u1": 1} // the creator
				for _, uid := range c.joined {
					j, err := e.rooms.Join(ctx, player(uid), room)
					if err != nil {
						t.Fatal(err)
					}
					pids[uid] = j.PlayerID
				}
				for _, uid := range c.banned {
					if err := e.rooms.Ban(ctx, c.banBy, room, pids[uid]); err != nil {
						t.Fatal(err)
					}
				}
				// the repair
				mcfg.Rooms, mcfg.Holder = e.rooms, "b"
				if c.dies {
					mcfg.Notifier = &failsOnce{Notifier: rec}
					if err := matchmaking.NewMatcher(mcfg).Complete(ctx, match, r); err == nil {
						t.Fatal("the repair that dies did not fail")
					}
					left, err := e.tickets.Pending(ctx, "ffa")
					if err != nil || len(left) != 1 || len(left[0].Tickets) != len(c.tickets)-len(c.refused) {
						t.Fatalf("pending after the refused went back: %+v %v, want the others' match", left, err)
					}
					match = left[0]
				}
				if err := matchmaking.NewMatcher(mcfg).Complete(ctx, match, r); err != nil {
					t.Fatal(err)
				}
				if p, _ := e.tickets.Pending(ctx, "ffa"); len(p) != 0 {
					t.Fatalf("pending after the repair: %+v", p)
				}
				for _, p := range c.tickets {
					tk, err := e.tickets.Get(ctx, ids[p.leader])
					if err != nil {
						t.Fatal(err)
					}
					barred, err := e.tickets.Barred(ctx, "ffa", tk.ID)
					if err != nil {
						t.Fatal(err)
					}
					users := append([]string{p.leader}, p.members...)
					if slices.Contains(c.refused, p.leader) {
						if tk.Status != matchmaking.Searching || tk.MatchID != "" || !slices.Equal(barred, []string{room}) {
							t.Fatalf("refused %s's ticket: %s in match %q, barred from %v, want searching, barred from %s", p.leader, tk.Status, tk.MatchID, barred, room)
						}
						for _, uid := range users {
							if ev, told := rec.got[uid][match.ID]; told {
								t.Fatalf("refused %s told %+v", uid, ev)
							}
						}
						continue
					}
					if tk.Status != matchmaking.Matched || tk.RoomID != room || len(barred) != 0 {
						t.Fatalf("%s's ticket: %s in %q, barred from %v, want matched into %s", p.leader, tk.Status, tk.RoomID, barred, room)
					}
					for _, uid := range users {
						if ev := rec.got[uid][match.ID]; ev.RoomID != room || ev.TicketID != tk.ID {
							t.Fatalf("%s told %+v, want room %s", uid, rec.got[uid], room)
						}
						if slices.Contains(c.banned, uid) {
							continue // their party's match, which they cannot join
						}
						if _, err := e.rooms.Join(ctx, player(uid), room); err != nil { // a member, or their seat
							t.Fatalf("%s joins the room: %v", uid, err)
						}
					}
				}
				for _, uid := range c.banned {
					if _, err := e.rooms.Join(ctx, player(uid), room); err == nil {
						t.Fatalf("banned %s joined the room", uid)
					}
				}
				// the next round, with two new tickets: no member of the room
				// is matched into another
				for _, uid := range []string{"u8", "u9"} {
					if _, err := e.svc.Create(ctx, player(uid), matchmaking.TicketParams{Mode: "ffa", Regions: []string{"eu"}, Rating: rating(1000)}); err != nil {
						t.Fatal(err)
					}
				}
				mcfg.Holder = "a"
				matchmaking.NewMatcher(mcfg).Round(ctx)
				for _, p := range c.tickets {
					tk, err := e.tickets.Get(ctx, ids[p.leader])
					if err != nil {
						t.Fatal(err)
					}
					if tk.Status != matchmaking.Matched || tk.RoomID == room {
						continue
					}
					for _, uid := range append([]string{p.leader}, p.members...) {
						in, _, err := e.rooms.MyRooms(ctx, player(uid), nil, rooms.MaxMyRooms)
						if err != nil || slices.ContainsFunc(in, func(j rooms.Joined) bool { return j.Room.ID == room }) {
							t.Fatalf("%s, in room %s (%v), matched again into %s", uid, room, err, tk.RoomID)
						}
					}
				}
			})
		}
	})
}

// diesTelling is a Notifier whose instance dies having told a match's
// users but untold (a match's users are told at once, in no order): the
// call for untold fails.
type diesTelling struct {
	matchmaking.Notifier
	untold string
}

func (d diesTelling) MatchFound(ctx context.Context, uid string, e matchmaking.MatchFound) error {
	if uid == d.untold {
		return errors.New("died while telling them")
	}
	return d.Notifier.MatchFound(ctx, uid, e)
}

// The repair of a match room that banned a party's member (who had
// joined) after its first completion died: died before telling anyone,
// the party's ticket goes back to the queue and the seat held for its
// other member is released (taken, it would put him in a match his
// ticket left, and the next round in a second one; a reviewer's find);
// died telling (the match committed, its users told but u4), the match
// stands as it would have had the completion lived: the party keeps it,
// its other member his seat, and the banned member cannot join (before
// the commit, the repair put the party back, its members told of the
// room, and the next round matched them again). The other tickets' seats
// are held again.
func TestRepairOfAMatchRoomThatBannedAPartyMember(t *testing.T) {
	rs := mustRules(t, "modes:\n  ffa:\n    minPlayers: 3\n    maxPlayers: 4\n    backfill: true\n")
	r := rs.Of("ffa")
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		for _, told := range []bool{false, true} {
			t.Run(fmt.Sprintf("told=%v", told), func(t *testing.T) {
				ctx := context.Background()
				e := open(t, b, rs)
				ids := queueParties(t, e, []string{"u1"}, []string{"u2", "u3"}, []string{"u4"})
				rec := &recorder{next: e.tickets, got: map[string]map[string]matchmaking.MatchFound{}}
				crash := &crashing{RoomOpener: e.rooms}
				mcfg := matchmaking.MatcherConfig{Config: e.cfg, Rooms: crash, Notifier: rec, Holder: "a"}
				if told { // it tells u1, u2 and u3, and dies before u4
					mcfg.Rooms, mcfg.Notifier = e.rooms, diesTelling{Notifier: rec, untold: "u4"}
				}
				matchmaking.NewMatcher(mcfg).Round(ctx)
				pending, err := e.tickets.Pending(ctx, "ffa")
				if err != nil || len(pending) != 1 || (pending[0].Told != "") != told {
					t.Fatalf("pending after the crash: %+v %v, want the match, committed: %v", pending, err, told)
				}
				room := pending[0].Told
				if !told {
					room = crash.ids[0]
				} else if rec.got["u3"][pending[0].ID].RoomID != room {
					t.Fatalf("u3 not told of %s: %+v", room, rec.got)
				}
				j, err := e.rooms.Join(ctx, player("u2"), room)
				if err != nil {
					t.Fatal(err)
				}
				if err := e.rooms.Ban(ctx, player("u1"), room, j.PlayerID); err != nil {
					t.Fatal(err)
				}
				mcfg.Rooms, mcfg.Notifier, mcfg.Holder = e.rooms, rec, "b"
				if err := matchmaking.NewMatcher(mcfg).Complete(ctx, pending[0], r); err != nil {
					t.Fatal(err)
				}
				tk, err := e.tickets.Get(ctx, ids["u2"])
				if err != nil {
					t.Fatal(err)
				}
				rm, _, err := e.rooms.Get(ctx, room, false)
				if err != nil {
					t.Fatal(err)
				}
				_, u3Joins := e.rooms.Join(ctx, player("u3"), room)
				if told {
					if tk.Status != matchmaking.Matched || tk.RoomID != room || rm.ReservedSeats != 2 || u3Joins != nil {
						t.Fatalf("the party's ticket: %s in %q, %d seats held, u3 joins: %v; want it matched in %s, u3 and u4 holding seats",
							tk.Status, tk.RoomID, rm.ReservedSeats, u3Joins, room)
					}
				} else if tk.Status != matchmaking.Searching || rm.ReservedSeats != 1 || !errors.Is(u3Joins, rooms.ErrRoomNotFound) {
					t.Fatalf("the refused party's ticket: %s, %d seats held, u3 joins: %v; want searching, u4's seat alone, u3 not found",
						tk.Status, rm.ReservedSeats, u3Joins)
				}
				if _, err := e.rooms.Join(ctx, player("u4"), room); err != nil {
					t.Fatalf("u4 joins the room: %v", err)
				}
				if _, err := e.rooms.Join(ctx, player("u2"), room); err == nil {
					t.Fatal("banned u2 joined the room")
				}
				if p, _ := e.tickets.Pending(ctx, "ffa"); len(p) != 0 {
					t.Fatalf("pending after the repair: %+v", p)
				}
			})
		}
	})
}

// The repair of a match room that banned a user of the match and then
// started refuses that user's ticket as a waiting room's repair does: it
// goes back to the queue, searching, barred from the room, and its user is
// not told; the others keep the match. The repair checked the room's
// status before its bans, took the started room's ROOM_NOT_JOINABLE for
// success, and told the banned user match_found, their ticket matched (a
// reviewer's find).
func TestRepairOfAStartedMatchRoomThatBannedAUser(t *testing.T) {
	rs := mustRules(t, "modes:\n  ffa:\n    minPlayers: 3\n    maxPlayers: 4\n    backfill: true\n")
	r := rs.Of("ffa")
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := context.Background()
		e := open(t, b, rs)
		ids := queueParties(t, e, []string{"u1"}, []string{"u2"}, []string{"u3"})
		rec := &recorder{next: e.tickets, got: map[string]map[string]matchmaking.MatchFound{}}
		crash := &crashing{RoomOpener: e.rooms}
		mcfg := matchmaking.MatcherConfig{Config: e.cfg, Rooms: crash, Notifier: rec, Holder: "a"}
		matchmaking.NewMatcher(mcfg).Round(ctx)
		pending, err := e.tickets.Pending(ctx, "ffa")
		if err != nil || len(pending) != 1 || len(crash.ids) != 1 {
			t.Fatalf("pending after the crash: %+v %v, rooms %v, want the match and its room", pending, err, crash.ids)
		}
		room, match := crash.ids[0], pending[0]
		if _, err := e.rooms.Join(ctx, player("u3"), room); err != nil {
			t.Fatal(err)
		}
		j, err := e.rooms.Join(ctx, player("u2"), room)
		if err != nil {
			t.Fatal(err)
		}
		if err := e.rooms.Ban(ctx, player("u1"), room, j.PlayerID); err != nil {
			t.Fatal(err)
		}
		playing := rooms.Playing
		if _, err := e.rooms.Update(ctx, player("u1"), room, rooms.UpdateParams{Status: &playing}); err != nil {
			t.Fatal(err)
		}
		mcfg.Rooms, mcfg.Holder = e.rooms, "b"
		if err := matchmaking.NewMatcher(mcfg).Complete(ctx, match, r); err != nil {
			t.Fatal(err)
		}
		tk, err := e.tickets.Get(ctx, ids["u2"])
		if err != nil {
			t.Fatal(err)
		}
		barred, err := e.tickets.Barred(ctx, "ffa", tk.ID)
		if err != nil || tk.Status != matchmaking.Searching || !slices.Equal(barred, []string{room}) {
			t.Fatalf("banned u2's ticket: %s in %q, barred from %v (%v), want searching, barred from %s", tk.Status, tk.RoomID, barred, err, room)
		}
		if ev, told := rec.got["u2"][match.ID]; told {
			t.Fatalf("banned u2 told %+v", ev)
		}
		for _, uid := range []string{"u1", "u3"} {
			tk, err := e.tickets.Get(ctx, ids[uid])
			if err != nil || tk.Status != matchmaking.Matched || tk.RoomID != room || rec.got[uid][match.ID].RoomID != room {
				t.Fatalf("%s's ticket: %+v (%v), told %+v: want matched into %s, told", uid, tk, err, rec.got[uid], room)
			}
		}
	})
}

// A round whose context ended (the instance shutting down) logs nothing:
// its errors are the shutdown's own, not Redis'.
func TestCanceledRoundLogsNothing(t *testing.T) {
	rs := mustRules(t, "modes:\n  duel: {}\n")
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		e := open(t, b, rs)
		if _, err := e.svc.Create(context.Background(), player("c0"), matchmaking.TicketParams{Mode: "duel", Regions: []string{"eu"}}); err != nil {
			t.Fatal(err)
		}
		var logs testlog.Buffer
		m := matchmaking.NewMatcher(matchmaking.MatcherConfig{Config: e.cfg, Rooms: e.rooms, Notifier: e.tickets, Holder: "a",
			Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if held := m.Round(ctx); len(held) != 0 {
			t.Fatalf("a canceled round held %v", held)
		}
		if strings.Contains(logs.String(), "level=WARN") || strings.Contains(logs.String(), "level=ERROR") {
			t.Fatalf("a canceled round logged:\n%s", logs.String())
		}
	})
}

// stalling is a RoomOpener whose first OpenMatchRoom (of mode, when set)
// waits until release is closed (entered closed as it starts) or its ctx
// ends: a completion that takes long, as a pass of hundreds of matches
// does on a busy machine.
type stalling struct {
	matchmaking.RoomOpener
	mode             string
	entered, release chan struct{}
	once             sync.Once
}

func newStalling(r matchmaking.RoomOpener) *stalling {
	return &stalling{RoomOpener: r, entered: make(chan struct{}), release: make(chan struct{})}
}

// waitEntered waits until s holds its first OpenMatchRoom, failing tb
// after a minute: a round that ended, or stalled, before it opened the
// room would leave the test waiting forever.
func (s *stalling) waitEntered(tb testing.TB) {
	tb.Helper()
	select {
	case <-s.entered:
	case <-time.After(time.Minute):
		tb.Fatal("no match room opened within a minute: the round ended or stalled before it")
	}
}

func (s *stalling) OpenMatchRoom(ctx context.Context, m matchmaking.Match, n int, hold time.Duration) (string, error) {
	first := false
	if s.mode == "" || m.Mode == s.mode {
		s.once.Do(func() { first = true })
	}
	if first {
		close(s.entered)
		select {
		case <-s.release:
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	return s.RoomOpener.OpenMatchRoom(ctx, m, n, hold)
}

// matchFoundLogged is how many match_found events of match id uid's
// personal log holds (of any match for id "").
func matchFoundLogged(t *testing.T, e env, uid, id string) int {
	t.Helper()
	n := 0
	for _, ev := range matchFounds(t, e, uid) {
		if id == "" || ev.MatchID == id {
			n++
		}
	}
	return n
}

// matchFounds is the match_found events uid's log holds.
func matchFounds(t *testing.T, e env, uid string) []players.MatchFoundEvent {
	t.Helper()
	xs, err := e.rooms.Client().XRange(context.Background(), e.rooms.UserLogs().KeysOf(uid).Log, "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	var found []players.MatchFoundEvent
	for _, x := range xs {
		d, _ := x.Values["d"].(string)
		var ev players.MatchFoundEvent
		if json.Unmarshal([]byte(d), &ev) == nil && ev.Type == players.EventMatchFound {
			found = append(found, ev)
		}
	}
	return found
}

// queueParties queues a ticket of mode ffa in eu for each party (its
// leader first), rated 1000, 1001, ... in order, and returns each
// leader's ticket id.
func queueParties(t *testing.T, e env, parties ...[]string) map[string]string {
	t.Helper()
	ids := map[string]string{}
	for i, p := range parties {
		tk, err := e.svc.Create(context.Background(), player(p[0]), matchmaking.TicketParams{Mode: "ffa",
			Regions: []string{"eu"}, Rating: rating(float64(1000 + i)), PartyUserIDs: p[1:]})
		if err != nil {
			t.Fatal(err)
		}
		ids[p[0]] = tk.ID
	}
	return ids
}

// duelPair queues two tickets of mode for users u0 and u1 and returns
// their ids.
func duelPair(t *testing.T, e env, mode, u0, u1 string) []string {
	t.Helper()
	var ids []string
	for _, u := range []string{u0, u1} {
		tk, err := e.svc.Create(context.Background(), player(u), matchmaking.TicketParams{Mode: mode, Regions: []string{"eu"}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, tk.ID)
	}
	return ids
}

// A repair that races the first completion of the same match (its
// instance paused past its lease: another holder repairs the match while
// it still completes it) tells each user once: match_found is sent once
// per user and match id (the personal log remembers the match's key), so
// both completions make the one room and log one match_found each. A
// tester's kill-storm found 528 and 808 users told twice, the two copies
// 144 ms apart. Another match of the same user is still told.
func TestRepairRacingACompletionTellsOnce(t *testing.T) {
	rs := mustRules(t, "modes:\n  duel: {}\n")
	r := rs.Of("duel")
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := context.Background()
		e := open(t, b, rs)
		ids := duelPair(t, e, "duel", "p0", "p1")
		stall := newStalling(e.rooms)
		mcfg := func(holder string, rooms matchmaking.RoomOpener) matchmaking.MatcherConfig {
			return matchmaking.MatcherConfig{Config: e.cfg, Rooms: rooms, Notifier: e.tickets, Holder: holder,
				LeaseTTL: time.Second, RepairAfter: time.Second}
		}
		finish := roundStalled(t, ctx, matchmaking.NewMatcher(mcfg("a", stall)), stall) // a's pass matched them; its completion is under way
		pending, err := e.tickets.Pending(ctx, "duel")
		if err != nil || len(pending) != 1 {
			t.Fatalf("pending while a completes: %+v %v, want the match", pending, err)
		}
		if err := matchmaking.NewMatcher(mcfg("b", e.rooms)).Complete(ctx, pending[0], r); err != nil {
			t.Fatal(err)
		}
		finish()
		mid := pending[0].ID
		for i, u := range []string{"p0", "p1"} {
			if n := matchFoundLogged(t, e, u, mid); n != 1 {
				t.Errorf("%s's log holds %d match_found of %s, want 1", u, n, mid)
			}
			if tk, err := e.tickets.Get(ctx, ids[i]); err != nil || tk.Status != matchmaking.Matched || tk.RoomID == "" {
				t.Errorf("%s's ticket: %+v %v, want matched with its room", u, tk, err)
			}
		}
		if p, _ := e.tickets.Pending(ctx, "duel"); len(p) != 0 {
			t.Errorf("%d pending after both completions", len(p))
		}
		if err := e.tickets.MatchFound(ctx, "p0", matchmaking.MatchFound{MatchID: "duel-other-1", RoomID: "x", Mode: "duel"}); err != nil {
			t.Fatal(err)
		}
		if n := matchFoundLogged(t, e, "p0", "duel-other-1"); n != 1 {
			t.Errorf("p0's log holds %d match_found of another match, want 1", n)
		}
	})
}

// A round whose completion outlasts the lease (hundreds of matches of one
// pass on a busy machine) keeps renewing its mode's lease: another
// instance takes no lease meanwhile, so it neither passes the mode nor
// repairs the matches the first is still completing (a tester's
// kill-storm: the restarted instance took the lease of the other's long
// round and repaired its pending matches while it still told their
// users). The match is told once.
func TestSlowRoundKeepsItsLease(t *testing.T) {
	rs := mustRules(t, "modes:\n  duel: {}\n")
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := context.Background()
		e := open(t, b, rs)
		duelPair(t, e, "duel", "s0", "s1")
		stall := newStalling(e.rooms)
		// 2 s: a's renewals must outlast a loaded machine's stall (1 s,
		// renewed every 333 ms, left it little room)
		const ttl = 2 * time.Second
		recB := &recorder{next: e.tickets, got: map[string]map[string]matchmaking.MatchFound{}}
		a := matchmaking.NewMatcher(matchmaking.MatcherConfig{Config: e.cfg, Rooms: stall, Notifier: e.tickets, Holder: "a",
			LeaseTTL: ttl, RepairAfter: ttl})
		bm := matchmaking.NewMatcher(matchmaking.MatcherConfig{Config: e.cfg, Rooms: e.rooms, Notifier: recB, Holder: "b",
			LeaseTTL: ttl, RepairAfter: ttl})
		finish := roundStalled(t, ctx, a, stall)
		pending, err := e.tickets.Pending(ctx, "duel")
		if err != nil || len(pending) != 1 {
			t.Fatalf("pending while a completes: %+v %v, want the match", pending, err)
		}
		// b's rounds until a's round is past its lease's TTL and its match
		// past RepairAfter, twice over
		for until := time.Now().Add(5 * ttl / 2); time.Now().Before(until); time.Sleep(100 * time.Millisecond) {
			if held := bm.Round(ctx); len(held) > 0 {
				t.Errorf("b took the lease of %v while a's round was still completing its match", held)
				break
			}
		}
		finish()
		if len(recB.got) > 0 {
			t.Errorf("b told %v of a match a was still completing", recB.got)
		}
		for _, u := range []string{"s0", "s1"} {
			if n := matchFoundLogged(t, e, u, pending[0].ID); n != 1 {
				t.Errorf("%s's log holds %d match_found of %s, want 1", u, n, pending[0].ID)
			}
		}
	})
}

// A pass stuck on a call (a completion that does not return) is cut at
// PassTimeout, its lease's renewals with it: the mode passes to another
// instance, which repairs the match left pending, its users told once.
// Kept renewed for as long as the pass ran, the lease held the mode
// forever.
func TestStuckPassGivesUpItsLease(t *testing.T) {
	rs := mustRules(t, "modes:\n  duel: {}\n")
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := context.Background()
		e := open(t, b, rs)
		duelPair(t, e, "duel", "s0", "s1")
		stall := newStalling(e.rooms) // released only as the test ends
		// each lease call is bounded by a third of the TTL: 1 s, not less,
		// so that a's confirmation before its pass holds on a loaded
		// Cluster under -race (see TestRepairOfAMatchWhoseRoomClosedRequeues)
		const ttl = time.Second
		a := matchmaking.NewMatcher(matchmaking.MatcherConfig{Config: e.cfg, Rooms: stall, Notifier: e.tickets, Holder: "a",
			LeaseTTL: ttl, RepairAfter: ttl, PassTimeout: time.Second})
		bm := matchmaking.NewMatcher(matchmaking.MatcherConfig{Config: e.cfg, Rooms: e.rooms, Notifier: e.tickets, Holder: "b",
			LeaseTTL: ttl, RepairAfter: ttl})
		roundStalled(t, ctx, a, stall) // released as the test ends
		pending, err := e.tickets.Pending(ctx, "duel")
		if err != nil || len(pending) != 1 {
			t.Fatalf("pending while a completes: %+v %v, want the match", pending, err)
		}
		// b's first pass may come before the match is RepairAfter old (a's
		// pass, cut a PassTimeout after it began, recorded the match a
		// little after it began): b repairs it at a later round
		took := false
		for began := time.Now(); ; time.Sleep(100 * time.Millisecond) {
			took = len(bm.Round(ctx)) > 0 || took
			left, err := e.tickets.Pending(ctx, "duel")
			if took && err == nil && len(left) == 0 {
				break
			}
			if time.Since(began) > 5*time.Second {
				t.Fatalf("within 5 s b took a lease of duel: %v; pending %+v %v, want the lease taken and the match repaired (a's stuck pass kept the lease)",
					took, left, err)
			}
		}
		for _, u := range []string{"s0", "s1"} {
			if n := matchFoundLogged(t, e, u, pending[0].ID); n != 1 {
				t.Errorf("%s's log holds %d match_found of %s, want 1", u, n, pending[0].ID)
			}
		}
	})
}

// A round whose own context ends while its pass completes (a tool's or a
// test's deadline, far under PassTimeout) does not count the pass as cut:
// the mode stays held, its lease as it was, and the next round passes it
// at once (its match repaired, told once). Read as cut, the mode was let
// go and left alone for PassTimeout (a CI run's red: a loaded round with
// a master paused held nothing).
func TestRoundEndedByItsDeadlineKeepsItsMode(t *testing.T) {
	rs := mustRules(t, "modes:\n  duel: {}\n")
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := context.Background()
		e := open(t, b, rs)
		ids := duelPair(t, e, "duel", "s0", "s1")
		stall := newStalling(e.rooms)
		defer close(stall.release)
		m := matchmaking.NewMatcher(matchmaking.MatcherConfig{Config: e.cfg, Rooms: stall, Notifier: e.tickets, Holder: "a",
			LeaseTTL: 3 * time.Second, RepairAfter: time.Second})
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		held := m.Round(rctx) // its completion stalls until rctx ends
		cancel()
		if !slices.Equal(held, []string{"duel"}) {
			t.Fatalf("a round ended by its deadline held %v, want duel", held)
		}
		// the next round (the match past RepairAfter) passes the mode:
		// not left alone for PassTimeout
		time.Sleep(time.Second)
		rctx, cancel = context.WithTimeout(ctx, 10*time.Second)
		m.Round(rctx)
		cancel()
		if left, err := e.tickets.Pending(ctx, "duel"); err != nil || len(left) != 0 {
			t.Fatalf("pending after the next round: %+v %v, want the match completed", left, err)
		}
		for i, u := range []string{"s0", "s1"} {
			if tk, err := e.tickets.Get(ctx, ids[i]); err != nil || tk.Status != matchmaking.Matched || tk.RoomID == "" {
				t.Errorf("%s's ticket: %+v %v, want matched with its room", u, tk, err)
			}
		}
	})
}

// barrier lets callers through once n of them have arrived, or fails
// them after 15 s, and every caller after that: calls that must be under
// way at once.
type barrier struct {
	mu      sync.Mutex
	n       int
	broken  bool
	arrived chan struct{}
}

func newBarrier(n int) *barrier { return &barrier{n: n, arrived: make(chan struct{})} }

func (b *barrier) arrive(ctx context.Context) error {
	b.mu.Lock()
	if b.broken {
		b.mu.Unlock()
		return errors.New("the barrier broke")
	}
	if b.n--; b.n == 0 {
		close(b.arrived)
	}
	b.mu.Unlock()
	select {
	case <-b.arrived:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(15 * time.Second): // long: a loaded CI runner
		b.mu.Lock()
		b.broken = true
		b.mu.Unlock()
		return errors.New("alone at the barrier for 15 s")
	}
}

// openingTogether is a RoomOpener whose calls wait at a barrier first.
type openingTogether struct {
	matchmaking.RoomOpener
	b *barrier
}

func (o openingTogether) OpenMatchRoom(ctx context.Context, m matchmaking.Match, n int, hold time.Duration) (string, error) {
	if err := o.b.arrive(ctx); err != nil {
		return "", err
	}
	return o.RoomOpener.OpenMatchRoom(ctx, m, n, hold)
}

// tellingTogether is a Notifier whose calls wait at a barrier first.
type tellingTogether struct {
	matchmaking.Notifier
	b *barrier
}

func (tt tellingTogether) MatchFound(ctx context.Context, uid string, e matchmaking.MatchFound) error {
	if err := tt.b.arrive(ctx); err != nil {
		return err
	}
	return tt.Notifier.MatchFound(ctx, uid, e)
}

// A round passes its modes at once, and a match's users are told at
// once: one mode at a time, a round lasted as long as every mode's pass
// and its completions together, and a burst of 100 000 tickets over 4
// modes waited 19 s at the median (docs/PERFORMANCE-HISTORY.md,
// "Modes passed at once"). Each mode's match is opened only while the
// other's is being opened too, and each user told only while the other
// users of the match are being told: done one after the other, the
// first waits at its barrier alone and fails.
func TestRoundPassesModesAndTellsUsersAtOnce(t *testing.T) {
	rs := mustRules(t, "modes:\n  duel: {}\n  joust: {}\n")
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := context.Background()
		e := open(t, b, rs)
		ids := map[string]string{}
		for _, p := range [][]string{{"duel", "d0", "d1"}, {"joust", "j0", "j1"}} {
			for i, id := range duelPair(t, e, p[0], p[1], p[2]) {
				ids[p[1+i]] = id
			}
		}
		users := newBarrier(4) // both modes' users: each mode's two at once, the modes at once
		m := matchmaking.NewMatcher(matchmaking.MatcherConfig{Config: e.cfg, Holder: "a", RepairAfter: time.Hour,
			Rooms:    openingTogether{RoomOpener: e.rooms, b: newBarrier(2)},
			Notifier: tellingTogether{Notifier: e.tickets, b: users}})
		if held := m.Round(ctx); !slices.Equal(held, []string{"duel", "joust"}) {
			t.Fatalf("the round held %v, want both modes", held)
		}
		for _, mode := range []string{"duel", "joust"} {
			if p, err := e.tickets.Pending(ctx, mode); err != nil || len(p) != 0 {
				t.Errorf("%s: %d matches pending after the round (%v), want every one completed", mode, len(p), err)
			}
		}
		for u, id := range ids {
			tk, err := e.tickets.Get(ctx, id)
			if err != nil || tk.Status != matchmaking.Matched || tk.RoomID == "" {
				t.Fatalf("%s's ticket: %+v %v, want matched with its room", u, tk, err)
			}
			if n := matchFoundLogged(t, e, u, tk.MatchID); n != 1 {
				t.Errorf("%s's log holds %d match_found of %s, want 1", u, n, tk.MatchID)
			}
		}
	})
}

// A round keeps renewing every lease it holds until it ends, not only
// the leases of the passes under way: a mode whose pass is over while
// another mode's pass runs past the lease's TTL stays this live
// instance's. Renewed only while its own pass ran, it lapsed and another
// instance took it (a reviewer's find: the round waits for its slowest
// pass).
func TestRoundKeepsEveryLeaseItHolds(t *testing.T) {
	rs := mustRules(t, "modes:\n  duel: {}\n  joust: {}\n")
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := context.Background()
		e := open(t, b, rs)
		duelPair(t, e, "duel", "d0", "d1")
		jousts := duelPair(t, e, "joust", "j0", "j1")
		// 2 s: with 1 s, joust's lease lapsed once on embedded in CI at load
		// 9 (a held mode not passing is renewed while a listing within the
		// TTL named it, each listing bounded by a third of it)
		const ttl = 2 * time.Second
		stall := newStalling(e.rooms)
		stall.mode = "duel"
		a := matchmaking.NewMatcher(matchmaking.MatcherConfig{Config: e.cfg, Rooms: stall, Notifier: e.tickets, Holder: "a",
			LeaseTTL: ttl, RepairAfter: time.Hour})
		bm := matchmaking.NewMatcher(matchmaking.MatcherConfig{Config: e.cfg, Rooms: e.rooms, Notifier: e.tickets, Holder: "b",
			LeaseTTL: ttl, RepairAfter: time.Hour})
		done := make(chan []string, 1)
		go func() { done <- a.Round(ctx) }()
		stall.waitEntered(t)
		// joust's pass is over (its match made: a took its lease, which
		// under load it may not have done yet when duel's pass stalled);
		// duel's stalls past the TTL
		wait.Within(t, 20*time.Second, "joust's pair matched", func() bool {
			for _, id := range jousts {
				if tk, err := e.tickets.Get(ctx, id); err != nil || tk.RoomID == "" {
					return false
				}
			}
			return true
		})
		for until := time.Now().Add(5 * ttl / 2); time.Now().Before(until); time.Sleep(100 * time.Millisecond) {
			if held := bm.Round(ctx); len(held) > 0 {
				t.Errorf("b took %v while a, alive, held them in its round", held)
				break
			}
		}
		close(stall.release)
		if held := <-done; !slices.Equal(held, []string{"duel", "joust"}) {
			t.Errorf("a's round holds %v at its end, want duel and joust", held)
		}
	})
}

// A round whose lease another instance took (this one paused past it)
// ends that mode's pass at once: the holder completes and repairs its
// matches. The pass went on completing them, its users told by two
// instances at a time (a reviewer's find).
func TestLostLeaseEndsThePass(t *testing.T) {
	rs := mustRules(t, "modes:\n  duel: {}\n")
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := context.Background()
		e := open(t, b, rs)
		duelPair(t, e, "duel", "s0", "s1")
		stall := newStalling(e.rooms)
		// a TTL of 3 s: a pass that finds no slot within a third of it gives
		// its lease up, and 100 ms (a TTL of 300 ms) ran out under CI's load,
		// the round ending before its pass opened the room
		a := matchmaking.NewMatcher(matchmaking.MatcherConfig{Config: e.cfg, Rooms: stall, Notifier: e.tickets, Holder: "a",
			LeaseTTL: 3 * time.Second, RepairAfter: time.Hour})
		done := make(chan []string, 1)
		go func() { done <- a.Round(ctx) }()
		defer close(stall.release)
		stall.waitEntered(t)
		takeLease(t, e, "duel", "a", "b")
		select {
		case held := <-done:
			if len(held) != 0 {
				t.Errorf("a's round holds %v, want none: b took duel", held)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a's pass still completing its match 10 s after b took the lease")
		}
	})
}

// A pass cut at PassTimeout (stuck on a call) gives its lease up, and
// its instance leaves the mode alone for PassTimeout: another instance
// takes it at once and repairs the match. The cut pass's lease was kept
// to its TTL, and renewed by the instance's next round: an instance whose
// calls for a mode hang kept the mode for as long as it ran (a
// reviewer's find).
func TestCutPassLeavesItsModeToAnother(t *testing.T) {
	rs := mustRules(t, "modes:\n  duel: {}\n")
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := context.Background()
		e := open(t, b, rs)
		duelPair(t, e, "duel", "s0", "s1")
		stall := newStalling(e.rooms)
		defer close(stall.release)
		a := matchmaking.NewMatcher(matchmaking.MatcherConfig{Config: e.cfg, Rooms: stall, Notifier: e.tickets, Holder: "a",
			LeaseTTL: time.Minute, RepairAfter: 0, PassTimeout: time.Second})
		bm := matchmaking.NewMatcher(matchmaking.MatcherConfig{Config: e.cfg, Rooms: e.rooms, Notifier: e.tickets, Holder: "b",
			LeaseTTL: time.Minute, RepairAfter: time.Millisecond})
		if held := a.Round(ctx); len(held) != 0 {
			t.Fatalf("a's round, its pass cut, holds %v", held)
		}
		if held := a.Round(ctx); len(held) != 0 {
			t.Fatalf("a's next round holds %v: it took the cut mode back", held)
		}
		if held := bm.Round(ctx); !slices.Equal(held, []string{"duel"}) {
			t.Fatalf("b's round holds %v, want duel at once (a gave it up)", held)
		}
		if left, err := e.tickets.Pending(ctx, "duel"); err != nil || len(left) != 0 {
			t.Fatalf("pending after b's round: %+v %v, want the match repaired", left, err)
		}
	})
}

// A running matcher whose pass of one mode stalls (a Cluster master of its
// slot failing over, say) goes on passing its other modes, and keeps the
// stalled mode's lease while the pass is under way: another instance
// takes neither. Rounds waited for their slowest pass, so one mode's
// stall held every mode of the instance up to PassTimeout (30 s).
func TestStalledPassHoldsUpNoOtherMode(t *testing.T) {
	rs := mustRules(t, "modes:\n  duel: {}\n  joust: {}\n")
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := context.Background()
		e := open(t, b, rs)
		duelPair(t, e, "duel", "d0", "d1")
		// 2 s: a's renewals (every third of it, each bounded by a third)
		// must outlast a loaded machine's stall
		const ttl = 2 * time.Second
		stall := newStalling(e.rooms)
		stall.mode = "duel"
		defer close(stall.release)
		a := matchmaking.NewMatcher(matchmaking.MatcherConfig{Config: e.cfg, Rooms: stall, Notifier: e.tickets, Holder: "a",
			LeaseTTL: ttl, RepairAfter: time.Hour, Interval: 50 * time.Millisecond})
		running(t, a)
		stall.waitEntered(t)
		ids := duelPair(t, e, "joust", "j0", "j1")
		wait.Within(t, 20*time.Second, "joust matched while duel's pass stalls", func() bool {
			tk, err := e.tickets.Get(ctx, ids[0])
			return err == nil && tk.Status == matchmaking.Matched && tk.RoomID != ""
		})
		time.Sleep(3 * ttl / 2)
		bm := matchmaking.NewMatcher(matchmaking.MatcherConfig{Config: e.cfg, Rooms: e.rooms, Notifier: e.tickets, Holder: "b",
			LeaseTTL: ttl, RepairAfter: time.Hour})
		if held := bm.Round(ctx); len(held) > 0 {
			t.Errorf("b took %v while a, alive, held them", held)
		}
	})
}

// A stale completion never takes a told user's seat: the pass's
// completion pauses before its room; a repair completes the whole match
// (room, commit, everyone told, recorded); the owner bans party member
// u2, who joined; the first completion wakes, and its hold refuses u2's
// party. Its refusal released u3's seat at once, before finding the
// match recorded, and u3, told and matched into the room, could never
// join it (a reviewer's find); the seats now go only once the ticket went
// back to the queue.
func TestStaleCompletionKeepsAToldUsersSeat(t *testing.T) {
	rs := mustRules(t, "modes:\n  ffa:\n    minPlayers: 3\n    maxPlayers: 4\n    backfill: true\n")
	r := rs.Of("ffa")
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := context.Background()
		e := open(t, b, rs)
		ids := queueParties(t, e, []string{"u1"}, []string{"u2", "u3"}, []string{"u4"})
		stall := newStalling(e.rooms)
		fcfg := matchmaking.MatcherConfig{Config: e.cfg, Rooms: stall, Notifier: e.tickets, Holder: "a"}
		finish := roundStalled(t, ctx, matchmaking.NewMatcher(fcfg), stall)
		pending, err := e.tickets.Pending(ctx, "ffa")
		if err != nil || len(pending) != 1 {
			t.Fatalf("pending: %+v %v", pending, err)
		}
		mid := pending[0].ID
		rcfg := matchmaking.MatcherConfig{Config: e.cfg, Rooms: e.rooms, Notifier: e.tickets, Holder: "b"}
		if err := matchmaking.NewMatcher(rcfg).Complete(ctx, pending[0], r); err != nil {
			t.Fatal(err)
		}
		tk, _ := e.tickets.Get(ctx, ids["u2"])
		room := tk.RoomID
		if room == "" || matchFoundLogged(t, e, "u3", mid) != 1 {
			t.Fatalf("repair did not complete: %+v", tk)
		}
		j, err := e.rooms.Join(ctx, player("u2"), room)
		if err != nil {
			t.Fatal(err)
		}
		if err := e.rooms.Ban(ctx, player("u1"), room, j.PlayerID); err != nil {
			t.Fatal(err)
		}
		finish()
		tk, _ = e.tickets.Get(ctx, ids["u2"])
		if tk.Status != matchmaking.Matched || tk.RoomID != room || matchFoundLogged(t, e, "u3", mid) != 1 {
			t.Fatalf("the party's ticket after the stale completion: %s in %q, u3 told %d times; want matched in %s, told once",
				tk.Status, tk.RoomID, matchFoundLogged(t, e, "u3", mid), room)
		}
		if _, err := e.rooms.Join(ctx, player("u3"), room); err != nil {
			t.Fatalf("u3, told of %s and matched into it, cannot join: %v", room, err)
		}
	})
}

// A committed match (u1 and u2 told, its completion died before u3) whose
// room became full (u2 joined and left, the owner lowered maxPlayers)
// stands: the repair tells u3 and records the room. Every repair failed
// with ROOM_FULL, the match pending and u3 untold until the room closed (a
// reviewer's find).
func TestCommittedMatchRoomGoneFullStands(t *testing.T) {
	rs := mustRules(t, "modes:\n  ffa:\n    minPlayers: 3\n    maxPlayers: 4\n")
	r := rs.Of("ffa")
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := context.Background()
		e := open(t, b, rs)
		ids := queueParties(t, e, []string{"u1"}, []string{"u2"}, []string{"u3"})
		cfg := matchmaking.MatcherConfig{Config: e.cfg, Rooms: e.rooms, Notifier: diesTelling{Notifier: e.tickets, untold: "u3"}, Holder: "a"}
		matchmaking.NewMatcher(cfg).Round(ctx)
		pending, err := e.tickets.Pending(ctx, "ffa")
		if err != nil || len(pending) != 1 || pending[0].Told == "" {
			t.Fatalf("pending %+v %v, want committed", pending, err)
		}
		room := pending[0].Told
		if _, err := e.rooms.Join(ctx, player("u2"), room); err != nil {
			t.Fatal(err)
		}
		if err := e.rooms.Leave(ctx, player("u2"), room); err != nil {
			t.Fatal(err)
		}
		two := 2
		if _, err := e.rooms.Update(ctx, player("u1"), room, rooms.UpdateParams{MaxPlayers: &two}); err != nil {
			t.Fatal(err)
		}
		cfg.Notifier, cfg.Holder = e.tickets, "b"
		for i := range 3 {
			if err := matchmaking.NewMatcher(cfg).Complete(ctx, pending[0], r); err != nil {
				t.Errorf("repair %d of a committed match: %v", i, err)
			}
		}
		p, _ := e.tickets.Pending(ctx, "ffa")
		tk, _ := e.tickets.Get(ctx, ids["u3"])
		if len(p) != 0 || matchFoundLogged(t, e, "u3", pending[0].ID) != 1 || tk.RoomID != room {
			t.Fatalf("after the repairs: %d pending, u3 told %d, u3's ticket %s in %q: want the match to stand",
				len(p), matchFoundLogged(t, e, "u3", pending[0].ID), tk.Status, tk.RoomID)
		}
	})
}

// A running matcher passes a mode whose pass made matches again at once,
// not at its next tick: five pairs, a pass walking two tickets, are all
// matched within 30 s of a run ticking every minute, where the ticks
// alone would take four minutes (two seconds of a run ticking every 5 s
// were too few on a loaded CI, 2.9 s on embedded). A burst's passes
// came an Interval apart, and a burst of 100 000 tickets waited 0.34 s at
// the median, not 0.11 (docs/PERFORMANCE-HISTORY.md, "Passes apart from
// the ticks").
func TestBusyModeIsPassedAgainAtOnce(t *testing.T) {
	rs := mustRules(t, "modes:\n  duel: {}\n")
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := context.Background()
		e := open(t, b, rs)
		var ids []string
		for i := range 5 {
			ids = append(ids, duelPair(t, e, "duel", fmt.Sprintf("b%da", i), fmt.Sprintf("b%db", i))...)
		}
		running(t, matchmaking.NewMatcher(matchmaking.MatcherConfig{Config: e.cfg, Rooms: e.rooms, Notifier: e.tickets,
			Holder: "a", Interval: time.Minute, Walk: 2}))
		wait.Within(t, 30*time.Second, "every pair matched", func() bool {
			for _, id := range ids {
				if tk, err := e.tickets.Get(ctx, id); err != nil || tk.RoomID == "" {
					return false
				}
			}
			return true
		})
	})
}

// An instance with nothing queued reads the lists of the shards without a
// mode once a second (listAllIdle), not at each of its matcher's ticks (4
// a second: at 1 296 shards, half an idle instance's upkeep). In between,
// Modes reads the lists of the shards whose last read found a mode, or on
// which this Store's Add listed one (also when a read that began before
// the Add found the list empty); a mode listed by another instance on a
// shard without one is listed at the next read of every shard's.
func TestModesReadIdleShardsOnceASecond(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := context.Background()
		e := open(t, b, mustRules(t, "modes:\n  duel: {}\n"))
		c, future := e.rooms.Client(), float64(time.Now().Add(time.Hour).UnixMilli())
		duel := e.tickets.ModeShard("duel")
		other := ""
		for i := 0; other == ""; i++ {
			if m := fmt.Sprintf("m%d", i); e.tickets.ModeShard(m) != duel {
				other = m
			}
		}
		var mu sync.Mutex
		var read []string // the keys of the lists read
		var then func()   // called once after the next read of duel's list
		c.AddHook(redistest.Around(func(_ context.Context, cmds []redis.Cmder, send func() error) error {
			err := send()
			mu.Lock()
			var f func()
			for _, cmd := range cmds {
				if a := cmd.Args(); strings.EqualFold(fmt.Sprint(a[0]), "zrange") && strings.HasSuffix(fmt.Sprint(a[1]), ":mm:modes") {
					read = append(read, fmt.Sprint(a[1]))
					if a[1] == e.tickets.ModesKey("duel") {
						f, then = then, nil
					}
				}
			}
			mu.Unlock()
			if f != nil {
				f()
			}
			return err
		}))
		modes := func(step string, want []string, lists ...string) {
			t.Helper()
			mu.Lock()
			read = nil
			mu.Unlock()
			if len(lists) < shards {
				e.tickets.ListAllDone() // however slow the test's steps
			}
			got, err := e.tickets.Modes(ctx)
			mu.Lock()
			r := slices.Sorted(slices.Values(read))
			mu.Unlock()
			if slices.Sort(lists); err != nil || !slices.Equal(got, want) || !slices.Equal(r, lists) {
				t.Fatalf("%s: modes %v %v reading %v, want %v reading %v", step, got, err, r, want, lists)
			}
		}
		every := make([]string, shards)
		for sh := range every {
			every[sh] = e.tickets.ShardModesKey(sh)
		}
		add := func(uid string) {
			t.Helper()
			tk := matchmaking.Ticket{ID: e.tickets.NewID("duel", ""), Mode: "duel", Regions: []string{"eu"}, Rating: 1500,
				Attributes: map[string]any{}, UserID: uid}
			if _, err := e.tickets.Add(ctx, tk, matchmaking.GroupKey{Rating: 1500, Size: 1, Regions: tk.Regions, Users: []string{uid}},
				time.Minute, 0, 100); err != nil {
				t.Fatal(err)
			}
		}

		modes("the first read", []string{}, every...)
		modes("nothing listed", []string{})
		if err := c.ZAdd(ctx, e.tickets.ModesKey(other), redis.Z{Score: future, Member: other}).Err(); err != nil {
			t.Fatal(err)
		}
		modes("another instance listed "+other, []string{})
		e.tickets.ListAllDue()
		modes("every shard's, due", []string{other}, every...)
		modes("the shard found with a mode", []string{other}, e.tickets.ModesKey(other))
		if err := c.ZRem(ctx, e.tickets.ModesKey(other), other).Err(); err != nil {
			t.Fatal(err)
		}
		modes(other+"'s list found empty", []string{}, e.tickets.ModesKey(other))
		if err := c.ZAdd(ctx, e.tickets.ModesKey(other), redis.Z{Score: future, Member: other}).Err(); err != nil {
			t.Fatal(err)
		}
		modes(other+"'s no longer read", []string{})
		add("u1")
		modes("this Store listed duel", []string{"duel"}, e.tickets.ModesKey("duel"))
		e.tickets.ListAllDue()
		modes("every shard's, due", []string{"duel", other}, every...)
		modes("the shards found with a mode", []string{"duel", other}, e.tickets.ModesKey("duel"), e.tickets.ModesKey(other))

		// duel's list found empty by a read the Add came in the middle of
		if err := c.Del(ctx, e.tickets.ModesKey("duel")).Err(); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		then = func() { add("u2") }
		mu.Unlock()
		modes("duel's list read before the Add", []string{other}, e.tickets.ModesKey("duel"), e.tickets.ModesKey(other))
		modes("duel's after it", []string{"duel", other}, e.tickets.ModesKey("duel"), e.tickets.ModesKey(other))
		if err := c.Del(ctx, e.tickets.ModesKey("duel")).Err(); err != nil {
			t.Fatal(err)
		}
		modes("duel's found empty", []string{other}, e.tickets.ModesKey("duel"), e.tickets.ModesKey(other))
		modes("duel's no longer read", []string{other}, e.tickets.ModesKey(other))
	})
}

// A match's seats are held for its mode's seatHold, and each user's
// match_found says until when (seatHeldUntil): a user who joins before
// it takes the seat; one who comes after it finds the private room closed
// to them (404), as README says; the ticket says it too
// (Ticket.SeatHeldUntil). The hold was 15 s for every mode, and neither
// said it (a matchmaking tester's find).
func TestMatchSeatsHeldForTheModesHold(t *testing.T) {
	rs := mustRules(t, "modes:\n  duel: {seatHold: 1s}\n  joust: {}\n")
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := context.Background()
		e := open(t, b, rs)
		// rated apart, so that d0 and j0, the first in rating order, own
		// the rooms, and d1 and j1 get the seats
		ids := map[string]string{}
		for i, u := range []string{"d0", "d1", "j0", "j1"} {
			mode := map[byte]string{'d': "duel", 'j': "joust"}[u[0]]
			tk, err := e.svc.Create(ctx, player(u), matchmaking.TicketParams{Mode: mode, Regions: []string{"eu"}, Rating: rating(float64(1000 + i))})
			if err != nil {
				t.Fatal(err)
			}
			ids[u] = tk.ID
		}
		m := matchmaking.NewMatcher(matchmaking.MatcherConfig{Config: e.cfg, Rooms: e.rooms, Notifier: e.tickets, Holder: "a", RepairAfter: time.Hour})
		before := time.Now()
		if held := m.Round(ctx); len(held) != 2 {
			t.Fatalf("the round held %v, want both modes", held)
		}
		after := time.Now()
		until := map[string]time.Time{}
		for _, c := range []struct {
			user string
			hold time.Duration
		}{{"d1", time.Second}, {"j1", matchmaking.DefaultSeatHold}} {
			ev := loggedMatchFound(t, e, c.user)
			at, err := time.Parse(time.RFC3339Nano, ev.SeatHeldUntil)
			if err != nil || at.Before(before.Add(c.hold).Truncate(time.Millisecond)) || at.After(after.Add(c.hold)) {
				t.Fatalf("%s's match_found: seatHeldUntil %q (%v), want the mode's hold of %s after the match, between %s and %s",
					c.user, ev.SeatHeldUntil, err, c.hold, before.Add(c.hold).Format(time.RFC3339Nano), after.Add(c.hold).Format(time.RFC3339Nano))
			}
			if rm, _, err := e.rooms.Get(ctx, ev.RoomID, false); err != nil || rm.ReservedSeats != 1 {
				t.Fatalf("%s's room %s: %d seats held (%v), want 1", c.user, ev.RoomID, rm.ReservedSeats, err)
			}
			until[c.user] = at
			// the ticket says it too, once it names the room
			if tk, err := e.tickets.Get(ctx, ids[c.user]); err != nil || tk.RoomID != ev.RoomID || !tk.SeatHeldUntil.Equal(at) {
				t.Fatalf("%s's ticket %s: %s, room %q, seats held until %s (%v); want %s until %s, as match_found says", c.user, ids[c.user], tk.Status, tk.RoomID, tk.SeatHeldUntil, err, ev.RoomID, at)
			}
			if _, err := e.rooms.Join(ctx, player("nobody"), ev.RoomID); !errors.Is(err, rooms.ErrRoomNotFound) {
				t.Fatalf("a user of no match joins %s: %v, want ErrRoomNotFound", ev.RoomID, err)
			}
		}
		if _, err := e.rooms.Join(ctx, player("j1"), loggedMatchFound(t, e, "j1").RoomID); err != nil {
			t.Fatalf("j1 joins within the hold: %v", err)
		}
		// past it (the room's script held the seat a little later than
		// the matcher's clock read, by Redis' clock), the janitor's visit
		// of the room drops the hold
		time.Sleep(time.Until(until["d1"]))
		d1 := loggedMatchFound(t, e, "d1").RoomID
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			for shard := range shards {
				if _, err := e.rooms.Sweep(ctx, shard, "test", time.Millisecond); err != nil {
					t.Fatal(err)
				}
			}
			rm, _, err := e.rooms.Get(ctx, d1, false)
			if err != nil {
				t.Fatal(err)
			}
			if rm.ReservedSeats == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("d1's room %s 10 s past its hold, the janitor visiting it: %d seats held, want none", d1, rm.ReservedSeats)
			}
		}
		if _, err := e.rooms.Join(ctx, player("d1"), d1); !errors.Is(err, rooms.ErrRoomNotFound) {
			t.Fatalf("d1 joins after its seatHeldUntil: %v, want ErrRoomNotFound (the seat gone, the room private)", err)
		}
	})
}

// loggedMatchFound is the one match_found uid's log holds.
func loggedMatchFound(t *testing.T, e env, uid string) players.MatchFoundEvent {
	t.Helper()
	found := matchFounds(t, e, uid)
	if len(found) != 1 {
		t.Fatalf("%s's log holds %d match_found, want 1", uid, len(found))
	}
	return found[0]
}
