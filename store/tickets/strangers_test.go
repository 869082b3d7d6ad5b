package tickets_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/internal/storetest"
	"github.com/realsync/realsync/matchmaking"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/store"
	"github.com/realsync/realsync/store/tickets"
	"github.com/realsync/realsync/store/userlog"
)

// A party member's match_found from a leader the member does not follow
// is counted among the strangers' events of the member's log and never
// refused (the match stands), so tickets naming a user cannot push the
// events of the users they follow out of it: a ticket naming a member
// whose strangers' share is full is refused (rooms.ErrInboxFull), one of
// a leader the member follows is not; the member's own ticket's and a
// followed leader's match_found are not counted; the check writes nothing
// to the log (a tester's find: 250 tickets matched one after the other
// pushed a friend's messages out, with REALSYNC_PARTY_CONSENT=none).
func TestPartyMatchFoundCountsAmongStrangers(t *testing.T) {
	share := userlog.StrangersShare(userlog.MinMaxLen)
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := context.Background()
		s := storetest.Open(t, store.Config{RedisURL: b.URL, ClusterAddrs: b.ClusterAddrs, Prefix: redistest.Prefix(t), Shards: shards,
			Offline: userlog.Config{MaxLen: userlog.MinMaxLen}})
		ts := tickets.New(s.Base(), s.UserLogs(), s.Renewals()).WithFollowing(s.Sessions().FollowingKey)
		svc, err := matchmaking.NewService(matchmaking.Config{Queue: ts, Rules: mustRules(t, "modes:\n  duo:\n    teams: 1\n    teamSize: 2\n"),
			Grace: time.Minute, Inboxes: s.Sessions()})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Sessions().SetFollowing(ctx, "v", []string{"friend"}); err != nil {
			t.Fatal(err)
		}
		k := s.UserLogs().KeysOf("v")
		counted := func() int64 { return s.Client().ZCount(ctx, k.Strangers, "1", "+inf").Val() }
		found := func(leader string, n int) {
			t.Helper()
			if err := ts.MatchFound(ctx, "v", matchmaking.MatchFound{TicketID: "t", MatchID: fmt.Sprint("m-", leader, "-", n), RoomID: "r",
				Mode: "duo", Region: "eu", Leader: leader}); err != nil {
				t.Fatalf("match_found of %s's ticket: %v", leader, err)
			}
		}
		for i := range share - 1 {
			found("stranger", i)
		}
		full := func(from string) bool {
			t.Helper()
			f, err := s.Sessions().StrangersFull(ctx, "v", from)
			if err != nil {
				t.Fatal(err)
			}
			return f
		}
		if full("stranger") {
			t.Fatalf("full below the share (%d of %d)", share-1, share)
		}
		for i := share - 1; i < share+1; i++ { // past the share: counted, not refused
			found("stranger", i)
		}
		found("stranger", 0) // a repair telling again: nothing logged nor counted
		if !full("stranger") {
			t.Fatal("not full past the share")
		}
		if n, l := counted(), s.Client().XLen(ctx, k.Log).Val(); n != int64(share+1) || l != int64(share+1) {
			t.Fatalf("%d strangers' entries, a log of %d: want %d of each", n, l, share+1)
		}
		found("friend", 0)
		found("v", 0) // v's own ticket
		if n := counted(); n != int64(share+1) {
			t.Fatalf("%d strangers' entries after a followed leader's and v's own match_found, want %d", n, share+1)
		}
		for _, c := range []struct {
			from string
			full bool
		}{{"stranger", true}, {"another", true}, {"friend", false}, {"", false}} {
			if full, err := s.Sessions().StrangersFull(ctx, "v", c.from); err != nil || full != c.full {
				t.Errorf("StrangersFull(v, %q) = %v, %v; want %v", c.from, full, err, c.full)
			}
		}
		if l := s.Client().XLen(ctx, k.Log).Val(); l != int64(share+3) {
			t.Fatalf("a log of %d after the checks, want %d: a check wrote", l, share+3)
		}
		_, err = svc.Create(ctx, player("another"), matchmaking.TicketParams{Mode: "duo", Regions: []string{"eu"}, PartyUserIDs: []string{"v"}})
		if !errors.Is(err, rooms.ErrInboxFull) || !strings.Contains(err.Error(), "partyUserIds.0") {
			t.Fatalf("a stranger's ticket naming v: %v, want ErrInboxFull naming partyUserIds.0", err)
		}
		if _, err := svc.Create(ctx, player("friend"), matchmaking.TicketParams{Mode: "duo", Regions: []string{"eu"}, PartyUserIDs: []string{"v"}}); err != nil {
			t.Fatalf("a followed leader's ticket naming v: %v", err)
		}
	})
}
