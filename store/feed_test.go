package store_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/sse"
	"github.com/realsync/realsync/store"
)

// versionSink records the versions delivered per room.
type versionSink struct {
	mu   sync.Mutex
	got  map[string]map[int64]bool
	more chan struct{}
}

func (s *versionSink) Deliver(room string, e sse.Event) {
	s.mu.Lock()
	if s.got[room] == nil {
		s.got[room] = map[int64]bool{}
	}
	s.got[room][e.Version] = true
	s.mu.Unlock()
	select {
	case s.more <- struct{}{}:
	default:
	}
}

func (s *versionSink) Resubscribed(string)   {}
func (s *versionSink) Lobby(sse.LobbyNotice) {}
func (s *versionSink) has(room string, v int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.got[room][v]
}

// A room's channel unsubscribed and at once subscribed again: the
// unsubscription's confirmation, arriving after the new subscription was
// sent, must not count as the new one's (it once did, and the real
// confirmation then closed the waiter a second time: a panic under stream
// churn). Every Subscribe returns only once events reach the feed.
func TestFeedResubscribeRightAfterUnsubscribe(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		sink := &versionSink{got: map[string]map[int64]bool{}, more: make(chan struct{}, 1)}
		feed := s.Feed(sink)
		defer feed.Close()
		r := mustCreate(t, s, alice, newRoom()).Room
		other := mustCreate(t, s, bob, newRoom()).Room
		// another channel keeps the shard's connection open, so unsubscribing
		// the room sends UNSUBSCRIBE instead of closing the connection
		if err := feed.Subscribe(ctx, other.ID); err != nil {
			t.Fatal(err)
		}
		for i := range 100 {
			if err := feed.Subscribe(ctx, r.ID); err != nil {
				t.Fatalf("round %d: %v", i, err)
			}
			v, err := s.PatchState(ctx, alice, r.ID, rooms.StatePatch{Set: rooms.State{"i": []byte("1")}, IfMatch: rooms.NoIfMatch})
			if err != nil {
				t.Fatal(err)
			}
			deadline := time.After(5 * time.Second)
			for !sink.has(r.ID, v.Version) {
				select {
				case <-sink.more:
				case <-deadline:
					t.Fatalf("round %d: version %d not delivered after Subscribe returned", i, v.Version)
				}
			}
			feed.Unsubscribe(r.ID)
		}
	})
}

// A feed keeps nothing of the channels it unsubscribed: each confirmed
// unsubscription left an entry (its count at 0) for as long as the shard's
// connection stayed open, which on a busy instance is as long as it runs:
// one per room and user whose stream the instance ever served.
func TestFeedForgetsUnsubscribedChannels(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		feed := s.Feed(&versionSink{got: map[string]map[int64]bool{}, more: make(chan struct{}, 1)})
		defer feed.Close()
		// another channel of the shard (newRoom's rooms share their mode's
		// home shard) keeps its connection open, so each unsubscription is
		// sent and confirmed on it
		keeper := mustCreate(t, s, alice, newRoom()).Room
		if err := feed.Subscribe(ctx, keeper.ID); err != nil {
			t.Fatal(err)
		}
		for i := range 50 {
			r := mustCreate(t, s, bob, newRoom()).Room
			if err := feed.Subscribe(ctx, r.ID); err != nil {
				t.Fatalf("room %d: %v", i, err)
			}
			feed.Unsubscribe(r.ID)
			if _, err := s.Delete(ctx, bob, r.ID); err != nil {
				t.Fatal(err)
			}
		}
		// the keeper's subscription confirmed after the others' unsubscriptions
		if err := feed.Subscribe(ctx, mustCreate(t, s, carol, newRoom()).Room.ID); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(5 * time.Second)
		for store.FeedTracked(feed) != 2 {
			if time.Now().After(deadline) {
				t.Fatalf("the feed keeps %d entries for 2 channels subscribed after 50 were unsubscribed", store.FeedTracked(feed))
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
}

// A subscription while Redis refuses connections fails at once with
// rooms.ErrUnavailable, the refusal's error; it does not wait for a
// confirmation that cannot come (subscribeTimeout, 5 s: a room stream's
// opening took that long to be turned away, while REST calls failed in
// milliseconds).
func TestFeedSubscribeRefusedConnection(t *testing.T) {
	srv, err := redistest.StartServer()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	s := openStore(t, redistest.Backend{Name: "refusing", URL: "redis://" + srv.Addr})
	id := mustCreate(t, s, alice, newRoom()).Room.ID
	feed := s.Feed(&versionSink{got: map[string]map[int64]bool{}, more: make(chan struct{}, 1)})
	defer feed.Close()
	srv.Kill() // its port now refuses connections
	err = feed.Subscribe(context.Background(), id)
	wantErr(t, err, rooms.ErrUnavailable)
	if !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("subscription refused: %v, want the dial's error (not a confirmation's wait)", err)
	}
}
