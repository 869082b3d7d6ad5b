package sse_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/internal/wait"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/sse"
)

// lobbySignals counts the lobby resubscriptions a feed tells its sink
// (Resubscribed("")), then hands them on.
type lobbySignals struct {
	sse.Sink
	n *atomic.Int64
}

func (s lobbySignals) Resubscribed(room string) {
	s.Sink.Resubscribed(room)
	if room == "" {
		s.n.Add(1)
	}
}

// lobbyView is what a lobby client shows after its events: room id →
// version.
func lobbyView(t *testing.T, evs []lobbyEvent) map[string]int64 {
	t.Helper()
	view := map[string]int64{}
	for _, ev := range evs {
		switch ev.Type {
		case "rooms":
			clear(view)
			for _, raw := range ev.Rooms {
				var r struct {
					ID      string `json:"id"`
					Version int64  `json:"version"`
				}
				if err := json.Unmarshal(raw, &r); err != nil {
					t.Fatalf("a listed room %s: %v", raw, err)
				}
				view[r.ID] = r.Version
			}
		case "room_added", "room_updated":
			view[ev.Room.ID] = ev.Version
		case "room_removed":
			delete(view, ev.Room.ID)
		}
	}
	return view
}

// killPubSub cuts every Pub/Sub connection of the backend's servers
// (every master of a Cluster), as a network blip would.
func killPubSub(t *testing.T, b redistest.Backend) {
	t.Helper()
	addrs := b.ClusterAddrs
	if b.URL != "" {
		addrs = []string{strings.TrimPrefix(b.URL, "redis://")}
	}
	for _, a := range addrs {
		cl := redis.NewClient(&redis.Options{Addr: a})
		err := cl.Do(context.Background(), "CLIENT", "KILL", "TYPE", "pubsub").Err()
		cl.Close()
		if err != nil {
			t.Fatalf("CLIENT KILL TYPE pubsub on %s: %v", a, err)
		}
	}
}

// One Pub/Sub blip (every connection of the instance's feed cut once)
// sends each lobby stream a fresh list a couple of times, not once per
// shard and signal: each of the 16 shards' lobby channels is resubscribed,
// then told resubscribed again when its probe comes back (32 signals),
// and each signal had every stream read and send a list of its own (a
// tester's find: 32 lists a stream, about 1 500 Redis commands a stream
// for one blip). Each stream still ends up showing the rooms as they are,
// a change made during the blip included, and gets a list read after the
// last signal.
//
// The bound: the blip's signals come in two waves (the resubscriptions,
// then the probes' echoes, up to a probe interval later), each one list
// when the hub merges it; a wave split by a pause of over a coalescing
// tick (a loaded machine) costs one more list: at most 4.
func TestLobbyBlipResyncsEachStreamAFewTimes(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		if b.URL == "" && b.ClusterAddrs == nil {
			t.Skip("the embedded store's Pub/Sub has no connection to cut")
		}
		const shards, streams, joinable, most = 16, 20, 30, 4
		var signals atomic.Int64
		e := newEnvShards(t, b, shards, func(c *sse.Config) {
			feed := c.Feed
			c.Feed = func(s sse.Sink) sse.Feed { return feed(lobbySignals{Sink: s, n: &signals}) }
		})
		ctx := context.Background()
		ids := make([]string, joinable)
		for i := range ids {
			ids[i] = e.roomOf(t, rooms.User{ID: fmt.Sprintf("u-owner%d", i), Name: "owner"})
		}
		cls := make([]*client, streams)
		for i := range cls {
			cls[i] = newClient()
			sctx, cancel := context.WithCancel(ctx)
			t.Cleanup(cancel)
			go e.hub.ServeLobby(sctx, cls[i], rooms.User{ID: fmt.Sprintf("u-watcher%d", i), Name: "watcher"}, "m", "")
		}
		truth := func() map[string]int64 {
			rs, err := e.st.Listing().Joinable(ctx, "m", "", 100)
			if err != nil {
				t.Fatal(err)
			}
			out := map[string]int64{}
			for _, r := range rs {
				out[r.ID] = r.Version
			}
			return out
		}
		for i, cl := range cls {
			if first := waitLobby(t, cl, 1)[0]; first.Type != "rooms" || len(first.Rooms) != joinable {
				t.Fatalf("stream %d's first event %+v, want the %d rooms", i, first, joinable)
			}
		}
		opened := make([]int, streams) // the events before the blip
		for i, cl := range cls {
			opened[i] = len(cl.all())
		}

		killPubSub(t, b)
		// changes during the blip, whose notices may be lost: one room
		// stops being joinable, one comes
		if _, err := e.st.Update(ctx, rooms.User{ID: "u-owner0"}, ids[0], rooms.UpdateParams{Locked: ptr(true)}); err != nil {
			t.Fatal(err)
		}
		during := e.roomOf(t, rooms.User{ID: "u-during", Name: "during"})
		// every shard's lobby channel resubscribed, and its probe back
		wait.Until(t, "the lobby channels' resubscriptions and echoes", func() bool { return signals.Load() >= 2*shards })
		wait.Until(t, "the hub's last resync handed on", func() bool { return !sse.LobbyResyncDue(e.hub) })
		// a change after: once every stream shows it, each has every list
		// of the blip (lists and changes go out in the order read)
		marker := e.roomOf(t, rooms.User{ID: "u-marker", Name: "marker"})
		wait.Until(t, "the marker room on every stream", func() bool {
			for _, cl := range cls {
				if _, ok := lobbyView(t, decodeLobby(t, cl.all()))[marker]; !ok {
					return false
				}
			}
			return true
		})

		want := truth()
		if _, ok := want[during]; !ok {
			t.Fatalf("the room created during the blip is not joinable: %v", want)
		}
		counts := map[int]int{} // lists a stream → streams
		for i, cl := range cls {
			evs := decodeLobby(t, cl.all())
			lists := 0
			for _, ev := range evs[opened[i]:] {
				if ev.Type == "rooms" {
					lists++
				}
			}
			counts[lists]++
			if lists == 0 || lists > most {
				t.Errorf("stream %d got %d rooms lists for one blip, want 1 to %d", i, lists, most)
			}
			if got := lobbyView(t, evs); !maps.Equal(got, want) {
				t.Errorf("stream %d shows %v, want %v", i, got, want)
			}
		}
		t.Logf("%d lobby signals; rooms lists a stream → streams: %v", signals.Load(), counts)
	})
}
