package store_test

import (
	"context"
	"os"
	"testing"

	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/store"
)

func TestMain(m *testing.M) {
	code := m.Run()
	redistest.StopAll()
	os.Exit(code)
}

// openStore opens a store on backend b with a key prefix of its own and a
// small shard count, closed when the test ends.
func openStore(tb testing.TB, b redistest.Backend) *store.Store {
	tb.Helper()
	s, err := store.Open(context.Background(), store.Config{RedisURL: b.URL, ClusterAddrs: b.ClusterAddrs,
		Prefix: redistest.Prefix(tb), Shards: 8})
	if err != nil {
		tb.Fatalf("open store on %s: %v", b.Name, err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

// eachBackend runs f as a subtest on standalone, Cluster and embedded.
func eachBackend(t *testing.T, f func(t *testing.T, s *store.Store)) {
	for _, b := range redistest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) { f(t, openStore(t, b)) })
	}
}

var (
	alice = rooms.User{ID: "u-alice", Name: "alice"}
	bob   = rooms.User{ID: "u-bob", Name: "bob"}
	carol = rooms.User{ID: "u-carol", Name: "carol"}
)

func newRoom(mut ...func(*rooms.NewRoom)) rooms.NewRoom {
	r := rooms.NewRoom{Name: "Arena", Mode: "battle", Region: "us-west", MaxPlayers: 4,
		Visibility: rooms.Public, Attributes: map[string]any{"map": "dust2"}, State: rooms.State{},
		StatePolicy: rooms.PolicyOwner}
	for _, m := range mut {
		m(&r)
	}
	return r
}
