package store_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"

	"github.com/realsync/realsync/internal/rediskeys"
	"github.com/realsync/realsync/players"
	"github.com/realsync/realsync/store"
	"github.com/realsync/realsync/store/sessions"
)

// A user's party (store/sessions/party.go): one key in the user's slot,
// replaced by the next join, expiring with the party and deleted by a
// leave; a value that is not the store's, or past its expiry though its
// key lost its TTL, is no party (no consent).
func TestParties(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		x := s.Sessions()
		parties := players.NewParties(x)
		keys := func() []string {
			t.Helper()
			ks, err := rediskeys.Scan(ctx, s.Client(), "{"+s.Prefix()+":*}:party:*")
			if err != nil {
				t.Fatal(err)
			}
			return ks
		}
		inParty := func(leader string, want bool) {
			t.Helper()
			if ok, err := parties.Consents(ctx, "u-member", leader); ok != want || err != nil {
				t.Fatalf("consents to %s: %v %v, want %v", leader, ok, err, want)
			}
		}
		if _, ok, err := x.Party(ctx, "u-member"); ok || err != nil {
			t.Fatalf("a party before any join: %v %v", ok, err)
		}
		p, err := x.SetParty(ctx, "u-member", "u-leader", time.Hour)
		if err != nil || p.LeaderUserID != "u-leader" || time.Until(p.ExpiresAt) <= 59*time.Minute {
			t.Fatalf("joined %+v %v", p, err)
		}
		if got, ok, err := x.Party(ctx, "u-member"); !ok || err != nil || got != p {
			t.Fatalf("read %+v %v %v, want %+v", got, ok, err, p)
		}
		inParty("u-leader", true)
		ks := keys()
		if len(ks) != 1 {
			t.Fatalf("party keys %v", ks)
		}
		if ttl := s.Client().PTTL(ctx, ks[0]).Val(); ttl <= 59*time.Minute || ttl > time.Hour {
			t.Fatalf("the key expires in %s", ttl)
		}
		if _, err := x.SetParty(ctx, "u-member", "u-other", time.Hour); err != nil {
			t.Fatal(err)
		}
		inParty("u-leader", false)
		inParty("u-other", true)
		// the key without its TTL (a restore): no longer a party once its
		// expiry passed
		past := time.Now().Add(-time.Second).UnixMilli()
		if err := s.Client().Set(ctx, ks[0], strconv.FormatInt(past, 10)+" u-other", 0).Err(); err != nil {
			t.Fatal(err)
		}
		inParty("u-other", false)
		for _, bad := range []string{"u-other", "x u-other", "123", ""} {
			if err := s.Client().Set(ctx, ks[0], bad, time.Minute).Err(); err != nil {
				t.Fatal(err)
			}
			if _, ok, err := x.Party(ctx, "u-member"); ok || err != nil {
				t.Fatalf("value %q: a party (%v %v)", bad, ok, err)
			}
		}
		if err := x.LeaveParty(ctx, "u-member"); err != nil {
			t.Fatal(err)
		}
		if ks := keys(); len(ks) != 0 {
			t.Fatalf("party keys left after leaving a value not the store's: %v", ks)
		}
		// a leave keeps the left party's expiry until then, no party,
		// and a join meanwhile takes a later one
		p, err = x.SetParty(ctx, "u-member", "u-leader", time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		for range 2 { // leaving no party: the same
			if err := x.LeaveParty(ctx, "u-member"); err != nil {
				t.Fatal(err)
			}
			inParty("u-leader", false)
			if v, ttl := s.Client().Get(ctx, ks[0]).Val(), s.Client().PTTL(ctx, ks[0]).Val(); v != strconv.FormatInt(p.ExpiresAt.UnixMilli(), 10) || ttl <= 59*time.Minute || ttl > time.Hour {
				t.Fatalf("the left party's key holds %q for %s, want %d until the party's expiry", v, ttl, p.ExpiresAt.UnixMilli())
			}
		}
		if again, err := x.SetParty(ctx, "u-member", "u-leader", time.Millisecond); err != nil || again.ExpiresAt.UnixMilli() != p.ExpiresAt.UnixMilli()+1 {
			t.Fatalf("a join after the leave: %+v %v, want its expiry just past the left party's %d", again, err, p.ExpiresAt.UnixMilli())
		}
	})
}

// A leader's party members (GET /v1/me/party/members): listed the most
// recently joined first, each with its party key's expiry; a member who
// joined another leader's party or left is no longer listed there; an
// entry whose party key names another leader or none is not listed, however
// many of them top the list; at most max; the list is one key in the
// leader's slot, expiring with its latest member, kept to
// sessions.PartyMembersKept entries, and gone once its members left.
func TestPartyMembers(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		x := s.Sessions()
		lists := func() []string {
			t.Helper()
			ks, err := rediskeys.Scan(ctx, s.Client(), "{"+s.Prefix()+":*}:partymembers:*")
			if err != nil {
				t.Fatal(err)
			}
			return ks
		}
		members := func(leader string, max int, want ...string) {
			t.Helper()
			got, err := x.PartyMembers(ctx, leader, max)
			if err != nil {
				t.Fatal(err)
			}
			ids := make([]string, len(got))
			for i, m := range got {
				ids[i] = m.UserID
				if p, ok, err := x.Party(ctx, m.UserID); !ok || err != nil || p.LeaderUserID != leader || !p.ExpiresAt.Equal(m.ExpiresAt) {
					t.Fatalf("%s listed in %s's party until %s; its party: %+v %v %v", m.UserID, leader, m.ExpiresAt, p, ok, err)
				}
			}
			if !slices.Equal(ids, want) {
				t.Fatalf("%s's party members (max %d): %v, want %v", leader, max, ids, want)
			}
		}
		join := func(member, leader string) {
			t.Helper()
			if _, err := x.SetParty(ctx, member, leader, time.Hour); err != nil {
				t.Fatal(err)
			}
			time.Sleep(2 * time.Millisecond) // the next join's expiry is later
		}
		members("u-lead", players.MaxPartyListed)
		for _, m := range []string{"u-m1", "u-m2", "u-m3"} {
			join(m, "u-lead")
		}
		join("u-m4", "u-other")
		members("u-lead", players.MaxPartyListed, "u-m3", "u-m2", "u-m1")
		members("u-lead", 2, "u-m3", "u-m2")
		members("u-other", players.MaxPartyListed, "u-m4")
		join("u-m1", "u-other")
		members("u-lead", players.MaxPartyListed, "u-m3", "u-m2")
		members("u-other", players.MaxPartyListed, "u-m1", "u-m4")
		join("u-m2", "u-lead") // joining again renews: listed once, first
		members("u-lead", players.MaxPartyListed, "u-m2", "u-m3")
		if err := x.LeaveParty(ctx, "u-m3"); err != nil {
			t.Fatal(err)
		}
		members("u-lead", players.MaxPartyListed, "u-m2")

		// entries no party key stands behind, later than every member's:
		// a join whose party key was never written, one whose key names
		// another leader, one whose key is not the store's; pages of 2
		// read past them
		ks := lists()
		var leadList string
		for _, k := range ks {
			if strings.HasSuffix(k, ":u-lead") {
				leadList = k
			}
		}
		if len(ks) != 2 || leadList == "" {
			t.Fatalf("lists %v", ks)
		}
		if ttl := s.Client().PTTL(ctx, leadList).Val(); ttl <= 59*time.Minute || ttl > time.Hour {
			t.Fatalf("the list expires in %s", ttl)
		}
		later := float64(time.Now().Add(2 * time.Hour).UnixMilli())
		for i, ghost := range []string{"u-ghost", "u-m4", "u-m1"} {
			if err := s.Client().ZAdd(ctx, leadList, redis.Z{Score: later + float64(i), Member: ghost}).Err(); err != nil {
				t.Fatal(err)
			}
		}
		members("u-lead", 2, "u-m2")
		members("u-lead", 1, "u-m2")
		join("u-m5", "u-lead")
		members("u-lead", 2, "u-m5", "u-m2")

		// leaving drops the member, not another's entry: u-m1's entry in
		// u-lead's list (planted above) stays until it expires
		for _, m := range []string{"u-m1", "u-m2", "u-m4", "u-m5"} {
			if err := x.LeaveParty(ctx, m); err != nil {
				t.Fatal(err)
			}
		}
		members("u-lead", players.MaxPartyListed)
		members("u-other", players.MaxPartyListed)
		if n := s.Client().ZCard(ctx, leadList).Val(); n != 3 {
			t.Fatalf("u-lead's list holds %d entries, want the 3 planted", n)
		}
		if err := s.Client().Del(ctx, leadList).Err(); err != nil {
			t.Fatal(err)
		}
		if ks := lists(); len(ks) != 0 {
			t.Fatalf("lists left once every member left: %v", ks)
		}
	})
}

// A leader's list keeps sessions.PartyMembersKept entries: a join past it
// drops the earliest to expire, who stays in the party, unlisted.
func TestPartyMembersKept(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		x := s.Sessions()
		for i := range sessions.PartyMembersKept + 1 {
			if _, err := x.SetParty(ctx, fmt.Sprint("u-", i), "u-lead", time.Hour); err != nil {
				t.Fatal(err)
			}
		}
		ks, err := rediskeys.Scan(ctx, s.Client(), "{"+s.Prefix()+":*}:partymembers:*")
		if err != nil || len(ks) != 1 {
			t.Fatalf("lists %v %v", ks, err)
		}
		if n := s.Client().ZCard(ctx, ks[0]).Val(); n != sessions.PartyMembersKept {
			t.Fatalf("the list holds %d, want %d", n, sessions.PartyMembersKept)
		}
		got, err := x.PartyMembers(ctx, "u-lead", players.MaxPartyListed)
		if err != nil || len(got) != players.MaxPartyListed {
			t.Fatalf("%d listed %v, want %d", len(got), err, players.MaxPartyListed)
		}
		if ok, err := players.NewParties(x).Consents(ctx, "u-0", "u-lead"); !ok || err != nil {
			t.Fatalf("the member dropped from the list no longer in the party: %v %v", ok, err)
		}
	})
}

// One user's 40 joins at once, each of another leader (a tester's
// burst): every join answers (none superseded is refused: partyJoinWrites),
// and only the party the user ends in lists the user, in the lists as
// stored too (a superseded join drops its listing). Three bursts.
func TestPartyJoinBurst(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		x := s.Sessions()
		for burst := range 3 {
			var g errgroup.Group
			for i := range 40 {
				g.Go(func() error {
					_, err := x.SetParty(ctx, "u-burst", fmt.Sprint("u-l", i), time.Hour)
					return err
				})
			}
			if err := g.Wait(); err != nil {
				t.Fatalf("burst %d: %v", burst, err)
			}
			p, ok, err := x.Party(ctx, "u-burst")
			if !ok || err != nil {
				t.Fatalf("burst %d: no party (%v)", burst, err)
			}
			ks, err := rediskeys.Scan(ctx, s.Client(), "{"+s.Prefix()+":*}:partymembers:*")
			if err != nil {
				t.Fatal(err)
			}
			var holding []string
			for _, k := range ks {
				if err := s.Client().ZScore(ctx, k, "u-burst").Err(); err == nil {
					holding = append(holding, k[strings.LastIndexByte(k, ':')+1:])
				} else if err != redis.Nil {
					t.Fatal(err)
				}
			}
			if !slices.Equal(holding, []string{p.LeaderUserID}) {
				t.Fatalf("burst %d: the party is %s's, the lists of %v hold the user", burst, p.LeaderUserID, holding)
			}
		}
	})
}

// Many users moving between three leaders' parties at once, each user
// from two clients at once, then joining and leaving: every leader's list
// is exactly the users whose party names the leader.
func TestPartyMembersUnderConcurrentJoins(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		x := s.Sessions()
		leaders := []string{"u-la", "u-lb", "u-lc"}
		const users, ops = 24, 40
		check := func(phase string) {
			t.Helper()
			want := map[string][]string{}
			for u := range users {
				id := fmt.Sprint("u-", u)
				if p, ok, err := x.Party(ctx, id); err != nil {
					t.Fatal(err)
				} else if ok {
					want[p.LeaderUserID] = append(want[p.LeaderUserID], id)
				}
			}
			for _, l := range leaders {
				got, err := x.PartyMembers(ctx, l, players.MaxPartyListed)
				if err != nil {
					t.Fatal(err)
				}
				ids := make([]string, len(got))
				for i, m := range got {
					ids[i] = m.UserID
				}
				slices.Sort(ids)
				slices.Sort(want[l])
				if !slices.Equal(ids, want[l]) {
					t.Fatalf("%s: %s lists %v, its members are %v", phase, l, ids, want[l])
				}
			}
		}
		run := func(clients int, leave bool) {
			var g errgroup.Group
			for u := range users {
				for c := range clients {
					rng := rand.New(rand.NewPCG(uint64(u), uint64(c)))
					g.Go(func() error {
						for range ops {
							if leave && rng.IntN(3) == 0 {
								if err := x.LeaveParty(ctx, fmt.Sprint("u-", u)); err != nil {
									return err
								}
								continue
							}
							if _, err := x.SetParty(ctx, fmt.Sprint("u-", u), leaders[rng.IntN(len(leaders))], time.Hour); err != nil {
								return err
							}
						}
						return nil
					})
				}
			}
			if err := g.Wait(); err != nil {
				t.Fatal(err)
			}
		}
		run(2, false)
		check("two clients a user joining")
		run(1, true)
		check("a client a user joining and leaving")
	})
}
