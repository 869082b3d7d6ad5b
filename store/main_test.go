package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/internal/invariants"
	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/internal/storetest"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/store"
)

// TestMain runs the suite and, when it ran without -run (whole, or with
// -skip as CI's second store lane runs it: scripts/test.sh), requires that
// the scripts published every room event and reason they can emit on the
// shared standalone server, each valid under the event contract
// (redistest.Main checks each): the contract test covers every emitter.
// A listing (go test -list) runs no test and checks nothing.
func TestMain(m *testing.M) {
	redistest.Main(m, func() error {
		if f := flag.Lookup("test.run"); f == nil || f.Value.String() != "" || testing.Short() {
			return nil
		}
		if f := flag.Lookup("test.list"); f != nil && f.Value.String() != "" {
			return nil
		}
		seen := redistest.EventsSeen()
		var missing []string
		for _, k := range []string{"state", "player_joined", "player_left/left", "player_left/kicked",
			"player_left/disconnected", "player_connected", "player_disconnected", "room_updated", "message",
			"room_closed/closed", "room_closed/empty", "room_closed/expired", "room_closed/finished"} {
			if seen[k] == 0 {
				missing = append(missing, k)
			}
		}
		if len(missing) > 0 {
			return fmt.Errorf("the store suite never saw these scripts' events on standalone Redis: %v (seen: %v)", missing, seen)
		}
		return nil
	})
}

// openStore opens a store on backend b with a key prefix of its own and a
// small shard count, closed when the test ends.
func openStore(tb testing.TB, b redistest.Backend) *store.Store {
	tb.Helper()
	return openStoreWith(tb, b, func(*store.Config) {})
}

// testBatch is the batching the suite runs with: natural batching, as
// realsyncd runs by default; REALSYNC_TEST_REDIS_BATCH=off runs the suite
// with every script its own round trip.
func testBatch() *store.Batching {
	if os.Getenv("REALSYNC_TEST_REDIS_BATCH") == "off" {
		return nil
	}
	return &store.Batching{}
}

// testStripes is the stripe configuration the suite runs with: K = 1
// (one shard per (mode, region)) unless REALSYNC_TEST_MODE_STRIPES gives
// one (e.g. 3), which runs the suite with every pair over K stripes.
func testStripes(tb testing.TB) store.Stripes {
	st, err := store.ParseStripes(os.Getenv("REALSYNC_TEST_MODE_STRIPES"))
	if err != nil {
		tb.Fatalf("REALSYNC_TEST_MODE_STRIPES: %v", err)
	}
	return st
}

// openStoreWith is openStore with the configuration changed by mut.
func openStoreWith(tb testing.TB, b redistest.Backend, mut func(*store.Config)) *store.Store {
	tb.Helper()
	cfg := store.Config{RedisURL: b.URL, ClusterAddrs: b.ClusterAddrs, Prefix: redistest.Prefix(tb), Shards: 8}
	cfg.Batch = testBatch()
	cfg.Stripes = testStripes(tb)
	mut(&cfg)
	s := storetest.Open(tb, cfg)
	return s
}

// freshStore opens a store on a redis-server of its own (no other data,
// for figures that read the server's totals), stopped when tb ends; and
// returns the server's address.
func freshStore(tb testing.TB, mut ...func(*store.Config)) (*store.Store, string) {
	tb.Helper()
	srv := ownServer(tb)
	return openStoreWith(tb, redistest.Backend{Name: "fresh", URL: "redis://" + srv.Addr}, func(c *store.Config) {
		for _, m := range mut {
			m(c)
		}
	}), srv.Addr
}

// ownServer starts a redis-server of tb's own (extra: its arguments), for
// a test that reconfigures or stops it; it is stopped when tb ends.
func ownServer(tb testing.TB, extra ...string) *redistest.Server {
	tb.Helper()
	srv, err := redistest.StartServer(extra...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(srv.Stop)
	return srv
}

// ownRedis starts a standalone redis-server and, unless -short, a Cluster
// of 3 masters, of tb's own (for a test that reconfigures or stops them),
// stopped when tb ends; c is nil under -short.
func ownRedis(tb testing.TB) (srv *redistest.Server, c *redistest.Cluster) {
	tb.Helper()
	srv = ownServer(tb)
	if testing.Short() {
		return srv, nil
	}
	return srv, ownCluster(tb)
}

// ownCluster starts a Cluster of 3 masters of tb's own (for a test that
// reconfigures, stops or moves slots between its nodes), stopped when tb
// ends; under -short it skips tb, as forming one takes seconds.
func ownCluster(tb testing.TB) *redistest.Cluster {
	tb.Helper()
	if testing.Short() {
		tb.Skip("starts a Cluster of its own")
	}
	c, err := redistest.StartCluster(3)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(c.Stop)
	return c
}

// ownReplicatedCluster starts a Cluster of tb's own of 3 masters with a
// replica each (for a failover test), stopped when tb ends.
func ownReplicatedCluster(tb testing.TB) *redistest.Cluster {
	tb.Helper()
	c, err := redistest.StartClusterWithReplicas(3, 1)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(c.Stop)
	return c
}

// aclServer starts a redis-server of tb's own (extra: its arguments) with
// the user name, on, password "pw", and the ACL rules rules; it returns a
// backend that connects as that user and a client of the default user.
// The server and the client end with tb.
func aclServer(tb testing.TB, extra []string, name string, rules ...string) (redistest.Backend, *redis.Client) {
	tb.Helper()
	srv := ownServer(tb, extra...)
	admin := redis.NewClient(&redis.Options{Addr: srv.Addr})
	tb.Cleanup(func() { admin.Close() })
	args := []any{"ACL", "SETUSER", name, "on", ">pw"}
	for _, r := range rules {
		args = append(args, r)
	}
	if err := admin.Do(context.Background(), args...).Err(); err != nil {
		tb.Fatal(err)
	}
	return redistest.Backend{Name: name, URL: "redis://" + name + ":pw@" + srv.Addr}, admin
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

// event is a log entry as clients will see it.
type event struct {
	Type     string          `json:"type"`
	RoomID   string          `json:"roomId"`
	Version  int64           `json:"version"`
	TS       string          `json:"ts"`
	PlayerID int             `json:"playerId"`
	Reason   string          `json:"reason"`
	Changes  map[string]any  `json:"changes"`
	Player   map[string]any  `json:"player"`
	Set      map[string]any  `json:"set"`
	Del      []string        `json:"del"`
	By       int             `json:"by"`
	StateV   int64           `json:"stateVersion"`
	Raw      json.RawMessage `json:"-"`
}

// events reads a room's log straight from Redis.
func events(tb testing.TB, s *store.Store, id string) []event {
	tb.Helper()
	entries, err := s.Client().XRange(context.Background(), s.LogKey(id), "-", "+").Result()
	if err != nil {
		tb.Fatal(err)
	}
	out := make([]event, len(entries))
	for i, e := range entries {
		raw := e.Values["d"].(string)
		if err := json.Unmarshal([]byte(raw), &out[i]); err != nil {
			tb.Fatalf("event %s: %v: %s", e.ID, err, raw)
		}
		out[i].Raw = json.RawMessage(raw)
		if want := fmt.Sprintf("%d-0", out[i].Version); e.ID != want {
			tb.Fatalf("entry id %s carries version %d", e.ID, out[i].Version)
		}
	}
	return out
}

func types(evs []event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.Type
	}
	return out
}

// checkInvariants fails the test on any inconsistency in the store's keys.
func checkInvariants(tb testing.TB, s *store.Store) {
	tb.Helper()
	bad, err := invariants.Check(context.Background(), s.Client(), s.Prefix())
	if err != nil {
		tb.Fatal(err)
	}
	for _, b := range bad {
		tb.Error("invariant: " + b)
	}
}

func mustCreate(tb testing.TB, s *store.Store, u rooms.User, r rooms.NewRoom) rooms.Joined {
	tb.Helper()
	j, err := s.Create(context.Background(), u, r)
	if err != nil {
		tb.Fatal(err)
	}
	return j
}

func mustJoin(tb testing.TB, s *store.Store, u rooms.User, id string) rooms.Joined {
	tb.Helper()
	j, err := s.Join(context.Background(), u, id)
	if err != nil {
		tb.Fatalf("join %s: %v", u.ID, err)
	}
	return j
}

func ptr[T any](v T) *T { return &v }

func wantErr(tb testing.TB, got, want error) {
	tb.Helper()
	if !errors.Is(got, want) {
		tb.Fatalf("error = %v, want %v", got, want)
	}
}

// backendsWithFlush are the backends whose script cache can be flushed.
func backendsWithFlush(tb testing.TB) []redistest.Backend {
	return redistest.Backends(tb)[:2]
}

func flushScripts(tb testing.TB, s *store.Store) {
	tb.Helper()
	ctx := context.Background()
	var err error
	if c, ok := s.Client().(*redis.ClusterClient); ok {
		err = c.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error { return n.ScriptFlush(ctx).Err() })
	} else {
		err = s.Client().ScriptFlush(ctx).Err()
	}
	if err != nil {
		tb.Fatal(err)
	}
}

func invariantsCheck(s *store.Store) ([]string, error) {
	return invariants.Check(context.Background(), s.Client(), s.Prefix())
}

// backendsForChurn are all backends; a function so a slow one can be
// singled out in one place.
func backendsForChurn(tb testing.TB) []redistest.Backend { return redistest.Backends(tb) }

// alongside runs t in parallel with the other tests that call it, after
// the serial ones (t.Parallel): only for a test whose keys are under
// prefixes of its own (or on a Cluster of its own), that flushes nothing,
// reads no server-wide figure and has no lease or timer it must beat, so
// that the slow ones overlap in CI.
func alongside(t *testing.T) { t.Parallel() }
