package players_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/realsync/realsync/players"
	"github.com/realsync/realsync/rooms"
)

// memParties is a players.PartyStore in memory (expiry not kept: store's TestParties
// covers it), or err.
type memParties struct {
	m   map[string]players.Party
	err error
}

func (p *memParties) SetParty(_ context.Context, user, leader string, ttl time.Duration) (players.Party, error) {
	if p.err != nil {
		return players.Party{}, p.err
	}
	p.m[user] = players.Party{LeaderUserID: leader, ExpiresAt: time.Now().Add(ttl)}
	return p.m[user], nil
}

func (p *memParties) Party(_ context.Context, user string) (players.Party, bool, error) {
	party, ok := p.m[user]
	return party, ok, p.err
}

func (p *memParties) LeaveParty(_ context.Context, user string) error {
	delete(p.m, user)
	return p.err
}

func (p *memParties) PartyMembers(_ context.Context, leader string, max int) ([]players.PartyMember, error) {
	var out []players.PartyMember
	for u, party := range p.m {
		if party.LeaderUserID == leader && len(out) < max {
			out = append(out, players.PartyMember{UserID: u, ExpiresAt: party.ExpiresAt})
		}
	}
	return out, p.err
}

// Join takes a player's leader by id, for players.PartyTTL, and refuses anything
// else naming the field; Consents holds for that leader only, and no
// longer once the member joined another's party or left.
func TestParties(t *testing.T) {
	alice := rooms.User{ID: "alice"}
	for _, tc := range []struct {
		name   string
		u      rooms.User
		leader string
		want   error // nil: joined
	}{
		{name: "Leader", u: alice, leader: "bob"},
		{name: "Empty", u: alice, leader: "", want: &rooms.ValidationError{}},
		{name: "NotAUserID", u: alice, leader: "b b", want: &rooms.ValidationError{}},
		{name: "TooLong", u: alice, leader: strings.Repeat("b", rooms.MaxUserIDLen+1), want: &rooms.ValidationError{}},
		{name: "APIKey", u: alice, leader: rooms.ServerUserPrefix + "ops", want: &rooms.ValidationError{}},
		{name: "Self", u: alice, leader: "alice", want: &rooms.ValidationError{}},
		{name: "Server", u: rooms.User{Server: true}, leader: "bob", want: rooms.ErrScopeRequired},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := &memParties{m: map[string]players.Party{}}
			p := players.NewParties(store)
			got, err := p.Join(context.Background(), tc.u, tc.leader)
			if tc.want == nil {
				if err != nil || got.LeaderUserID != tc.leader || time.Until(got.ExpiresAt) < players.PartyTTL-time.Minute {
					t.Fatalf("joined %+v %v", got, err)
				}
				return
			}
			var ve *rooms.ValidationError
			if _, isVE := tc.want.(*rooms.ValidationError); isVE {
				if !errors.As(err, &ve) || len(ve.Fields) != 1 || ve.Fields[0].Field != "leaderUserId" {
					t.Fatalf("%v, want a validation error on leaderUserId", err)
				}
			} else if !errors.Is(err, tc.want) {
				t.Fatalf("%v, want %v", err, tc.want)
			}
			if len(store.m) != 0 {
				t.Fatalf("a refused join kept %v", store.m)
			}
		})
	}

	ctx := context.Background()
	store := &memParties{m: map[string]players.Party{}}
	p := players.NewParties(store)
	consents := func(member, leader string, want bool) {
		t.Helper()
		if ok, err := p.Consents(ctx, member, leader); ok != want || err != nil {
			t.Fatalf("Consents(%s, %s) = %v %v, want %v", member, leader, ok, err, want)
		}
	}
	if _, err := p.Of(ctx, alice); !errors.Is(err, players.ErrNotInParty) {
		t.Fatalf("Of before joining: %v", err)
	}
	consents("alice", "bob", false)
	if _, err := p.Join(ctx, alice, "bob"); err != nil {
		t.Fatal(err)
	}
	consents("alice", "bob", true)
	consents("alice", "carol", false)
	consents("bob", "alice", false)
	members := func(leader rooms.User, want ...string) {
		t.Helper()
		got, err := p.Members(ctx, leader)
		if err != nil || len(got) != len(want) {
			t.Fatalf("Members(%s) = %+v %v, want %v", leader.ID, got, err, want)
		}
		for i := range want {
			if got[i].UserID != want[i] {
				t.Fatalf("Members(%s) = %+v, want %v", leader.ID, got, want)
			}
		}
	}
	members(rooms.User{ID: "bob"}, "alice")
	members(rooms.User{ID: "carol"})
	if _, err := p.Members(ctx, rooms.User{Server: true}); !errors.Is(err, rooms.ErrScopeRequired) {
		t.Fatalf("an API key's Members: %v, want %v", err, rooms.ErrScopeRequired)
	}
	if _, err := p.Join(ctx, alice, "carol"); err != nil {
		t.Fatal(err)
	}
	consents("alice", "bob", false)
	consents("alice", "carol", true)
	if err := p.Leave(ctx, alice); err != nil {
		t.Fatal(err)
	}
	consents("alice", "carol", false)
	store.err = rooms.ErrUnavailable
	if ok, err := p.Consents(ctx, "alice", "carol"); ok || !errors.Is(err, rooms.ErrUnavailable) {
		t.Fatalf("Consents on a failing store: %v %v", ok, err)
	}
}
