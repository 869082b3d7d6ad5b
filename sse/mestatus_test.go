package sse_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/internal/wait"
	"github.com/realsync/realsync/players"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/sse"
	"github.com/realsync/realsync/store"
)

// countedUsers counts the Statuses reads of a UserSource (of at least a
// user: the store reads nothing for none).
type countedUsers struct {
	sse.UserSource
	mu    sync.Mutex
	reads []int // the users of each read
}

func (u *countedUsers) Statuses(ctx context.Context, uids []string) ([]players.Status, error) {
	u.mu.Lock()
	if len(uids) > 0 {
		u.reads = append(u.reads, len(uids))
	}
	u.mu.Unlock()
	return u.UserSource.Statuses(ctx, uids)
}

func (u *countedUsers) taken() []int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]int(nil), u.reads...)
}

// statusSignals counts the status resubscriptions a feed tells its sink.
type statusSignals struct {
	sse.Sink
	n *atomic.Int64
}

func (s statusSignals) ResubscribedUser(uid string) { s.Sink.(sse.UserSink).ResubscribedUser(uid) }
func (s statusSignals) ResubscribedStatus(uid string) {
	s.Sink.(sse.UserSink).ResubscribedStatus(uid)
	s.n.Add(1)
}
func (s statusSignals) DeliverUser(uid string, e sse.UserEvent) {
	s.Sink.(sse.UserSink).DeliverUser(uid, e)
}
func (s statusSignals) DeliverStatus(st players.Status) { s.Sink.(sse.UserSink).DeliverStatus(st) }

// presenceView is the last status a personal stream's client was sent of
// each user: user id → its version and whether online.
func presenceView(t *testing.T, cl *client) map[string]string {
	t.Helper()
	view := map[string]string{}
	for _, f := range cl.all() {
		if f.Type != players.EventPresence {
			continue
		}
		var p players.PresenceEvent
		if err := json.Unmarshal([]byte(f.Data), &p); err != nil {
			t.Fatalf("presence %s: %v", f.Data, err)
		}
		view[p.UserID] = fmt.Sprintf("%d %v", p.Version, p.Online)
	}
	return view
}

// One Pub/Sub blip has the followed users' statuses read again for the
// personal streams in a read or two, not a read per followed user,
// signal and stream: a reconnect resubscribes each followed user's
// status channel, then tells it resubscribed again once its shard's
// probe comes back, and each signal had each following stream read that
// one status (20 follows: 40 reads a stream, as many for every other
// follower). Each stream still ends up showing every followed user's
// status, one that changed during the blip included.
//
// The bound: the blip's signals come in two waves (the resubscriptions,
// then the probes' echoes), each read at the reload loop's next tick; a
// wave split over two ticks costs one read more: at most 4 reads for both
// streams.
func TestMeBlipReloadsFollowedStatusesInAFewReads(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		if b.URL == "" && b.ClusterAddrs == nil {
			t.Skip("the embedded store's Pub/Sub has no connection to cut")
		}
		const follows, most = 20, 4
		var signals atomic.Int64
		users := &countedUsers{}
		var st *store.Store
		e := newEnvShards(t, b, 16, func(c *sse.Config) {
			st = c.Source.(*store.Store)
			users.UserSource = st.Sessions()
			c.Users = users
			feed := c.Feed
			c.Feed = func(s sse.Sink) sse.Feed { return feed(statusSignals{Sink: s, n: &signals}) }
		})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		ids := make([]string, follows)
		for i := range ids {
			ids[i] = fmt.Sprintf("u-friend%d", i)
		}
		followers := []*client{newClient(), newClient()}
		for i, u := range []string{bob.ID, carol.ID} {
			if err := st.Sessions().SetFollowing(ctx, u, ids); err != nil {
				t.Fatal(err)
			}
			go e.hub.ServeMe(ctx, followers[i], []rooms.User{bob, carol}[i], "web", sse.Cursor{})
		}
		for _, cl := range followers {
			wait.Until(t, "the followed users' statuses at the opening", func() bool { return len(presenceView(t, cl)) == follows })
		}
		opened := len(users.taken())

		killPubSub(t, b)
		// a status that changes during the blip, its message perhaps lost
		if _, err := st.Sessions().OpenSession(ctx, sse.Session{UserID: ids[0], Platform: "web", ID: "friend0-web"}, sse.Cursor{}, 10); err != nil {
			t.Fatal(err)
		}
		wait.Until(t, "the status channels' resubscriptions and echoes", func() bool { return signals.Load() >= 2*follows })
		wait.Until(t, "the reloads handed on", func() bool { return !sse.StatusReloadDue(e.hub) })
		reads := users.taken()[opened:]
		if len(reads) > most {
			t.Errorf("%d status reads after one blip (of %v users), want at most %d", len(reads), reads, most)
		}
		truth := func() map[string]string {
			ss, err := st.Sessions().Statuses(ctx, ids)
			if err != nil {
				t.Fatal(err)
			}
			out := map[string]string{}
			for _, s := range ss {
				out[s.UserID] = fmt.Sprintf("%d %v", s.Version, s.Online)
			}
			return out
		}
		for i, cl := range followers {
			var want map[string]string
			wait.Until(t, "each follower showing every status", func() bool {
				want = truth()
				return maps.Equal(presenceView(t, cl), want)
			})
			if !strings.HasSuffix(want[ids[0]], "true") {
				t.Fatalf("follower %d: %s online during the blip reads %s", i, ids[0], want[ids[0]])
			}
		}
		t.Logf("%d status signals; status reads after the blip (users each): %v", signals.Load(), reads)
	})
}
