package store_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/realsync/realsync/internal/rediskeys"
	"github.com/realsync/realsync/players"
	"github.com/realsync/realsync/store"
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
			ks, err := rediskeys.Scan(ctx, s.Client(), "*:party:*")
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
			t.Fatalf("party keys left after leaving: %v", ks)
		}
		if err := x.LeaveParty(ctx, "u-member"); err != nil {
			t.Fatalf("leaving no party: %v", err)
		}
	})
}
