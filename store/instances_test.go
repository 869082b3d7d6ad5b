package store_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/internal/fleet"
	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/internal/storetest"
	"github.com/realsync/realsync/store"
	"github.com/realsync/realsync/store/instances"
)

// registryTTL is the presence TTL (= registration TTL) of the registry
// tests: short, so lapses happen within the test.
const registryTTL = 400 * time.Millisecond

// openRegistry opens a store with the registry TTL on backend b under
// prefix ("" for a fresh one).
func openRegistry(tb testing.TB, b redistest.Backend, prefix string) *store.Store {
	tb.Helper()
	if prefix == "" {
		prefix = redistest.Prefix(tb)
	}
	s := storetest.Open(tb, store.Config{RedisURL: b.URL, ClusterAddrs: b.ClusterAddrs,
		Prefix: prefix, Shards: 4, PresenceTTL: registryTTL})
	return s
}

func self(id string, started time.Time) fleet.Instance {
	return fleet.Instance{ID: id, Addr: "10.0.0.1:8080", Version: "v1.2.3", StartedAt: started, Settings: "9c41d07be2aa"}
}

func heartbeat(tb testing.TB, s *store.Store, in fleet.Instance) bool {
	tb.Helper()
	renewed, err := s.Fleet().HeartbeatInstance(context.Background(), in)
	if err != nil {
		tb.Fatal(err)
	}
	return renewed
}

func listed(tb testing.TB, s *store.Store) []fleet.Instance {
	tb.Helper()
	ins, err := s.Fleet().Instances(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	return ins
}

func ids(ins []fleet.Instance) []string {
	out := make([]string, len(ins))
	for i, in := range ins {
		out[i] = in.ID
	}
	return out
}

// waitListed waits (bounded) until the listing holds exactly want.
func waitListed(tb testing.TB, s *store.Store, within time.Duration, want ...string) {
	tb.Helper()
	deadline := time.Now().Add(within)
	for {
		got := ids(listed(tb, s))
		if equal(got, want) {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("listed %v, want %v within %v", got, want, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// registryKeys counts the keys of the registry by scanning every node.
func registryKeys(tb testing.TB, s *store.Store) int {
	tb.Helper()
	ctx := context.Background()
	n := 0
	var mu sync.Mutex
	scan := func(ctx context.Context, c *redis.Client) error {
		ks, err := scanAll(ctx, c, s.InstancesPattern())
		mu.Lock()
		n += len(ks)
		mu.Unlock()
		return err
	}
	var err error
	if c, ok := s.Client().(*redis.ClusterClient); ok {
		err = c.ForEachMaster(ctx, scan)
	} else {
		err = scan(ctx, s.Client().(*redis.Client))
	}
	if err != nil {
		tb.Fatal(err)
	}
	return n
}

func scanAll(ctx context.Context, c *redis.Client, match string) ([]string, error) {
	var out []string
	var cursor uint64
	for {
		ks, next, err := c.Scan(ctx, cursor, match, 1000).Result()
		if err != nil {
			return out, err
		}
		out = append(out, ks...)
		if cursor = next; cursor == 0 {
			return out, nil
		}
	}
}

// Register, renew, list: fields as registered, heartbeatAt from Redis'
// clock, streams as of the last heartbeat, sorted by startedAt. The
// heartbeats register for a minute (a registry of their own with that
// TTL): at registryTTL, a loaded machine's 400 ms between the first
// heartbeat and the renewal made it a new registration.
func TestInstanceRegisterRenewList(t *testing.T) {
	eachRegistry(t, func(t *testing.T, s *store.Store) {
		r := instances.New(s.Base(), time.Minute, func(context.Context, []string) error { return nil })
		heartbeat := func(t *testing.T, _ *store.Store, in fleet.Instance) bool {
			t.Helper()
			renewed, err := r.HeartbeatInstance(context.Background(), in)
			if err != nil {
				t.Fatal(err)
			}
			return renewed
		}
		t.Cleanup(func() {
			for _, id := range []string{"aaaa", "bbbb"} {
				if err := s.Fleet().DeregisterInstance(context.Background(), id); err != nil {
					t.Error(err)
				}
			}
		})
		t0 := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
		later, earlier := self("bbbb", t0.Add(time.Minute)), self("aaaa", t0)
		later.Addr = "10.0.0.2:9090"
		if heartbeat(t, s, later) || heartbeat(t, s, earlier) {
			t.Fatal("a first heartbeat reports a renewal")
		}
		first := listed(t, s)
		if !equal(ids(first), []string{"aaaa", "bbbb"}) {
			t.Fatalf("listed %v, want aaaa then bbbb (by startedAt)", ids(first))
		}
		got := first[1]
		if got.Addr != "10.0.0.2:9090" || got.Version != "v1.2.3" || !got.StartedAt.Equal(later.StartedAt) || got.Streams != 0 || got.Settings != "9c41d07be2aa" {
			t.Fatalf("listed %+v, registered %+v", got, later)
		}
		if d := time.Since(got.HeartbeatAt); d < 0 || d > 5*time.Second {
			t.Fatalf("heartbeatAt %v is not now", got.HeartbeatAt)
		}
		time.Sleep(5 * time.Millisecond)
		later.Streams = 7
		if !heartbeat(t, s, later) {
			t.Fatal("a heartbeat within the TTL is not a renewal")
		}
		got = listed(t, s)[1]
		if got.Streams != 7 || !got.HeartbeatAt.After(first[1].HeartbeatAt) {
			t.Fatalf("after renewal: %+v (before %+v)", got, first[1])
		}
	})
}

// An instance that stops renewing is gone from the list within the TTL,
// the reap names it once and releases the janitor leases it held (only
// those), and a heartbeat after the lapse registers anew.
func TestInstanceLapse(t *testing.T) {
	eachRegistry(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		now := time.Now()
		heartbeat(t, s, self("dead", now))
		registerLive(t, s, self("live", now.Add(time.Millisecond)))
		// Leases far longer than the janitor's own, so only a release ends them.
		s.Client().Set(ctx, s.JanitorKey(0), "dead", time.Minute)
		s.Client().Set(ctx, s.JanitorKey(1), "live", time.Minute)
		s.Client().Set(ctx, s.JanitorKey(2), "dead", time.Minute)
		waitListed(t, s, 2*registryTTL+time.Second, "live")
		// The listing reaps before it reads, but "dead" may lapse between the
		// two (its hash expires with it): a reap now names it unless the
		// listing's did.
		if reaped, err := s.Fleet().ReapInstances(ctx); err != nil || len(reaped) > 1 || (len(reaped) == 1 && reaped[0] != "dead") {
			t.Fatalf("reap after the lapse: %v %v, want dead or nothing", reaped, err)
		}
		for shard, want := range map[int]string{0: "", 1: "live", 2: "", 3: ""} {
			if got := s.Client().Get(ctx, s.JanitorKey(shard)).Val(); got != want {
				t.Errorf("janitor lease of shard %d held by %q, want %q", shard, got, want)
			}
		}
		if reaped, err := s.Fleet().ReapInstances(ctx); err != nil || len(reaped) != 0 {
			t.Errorf("second reap: %v %v, want nothing", reaped, err)
		}
		if heartbeat(t, s, self("dead", now)) {
			t.Error("a heartbeat after the lapse reports a renewal")
		}
		if got := ids(listed(t, s)); !equal(got, []string{"dead", "live"}) {
			t.Errorf("after coming back: %v", got)
		}
	})
}

// registerLive registers in on s's deployment for a minute (through a
// registry of its own with that TTL): an instance that stays live however
// long a loaded machine makes the test's steps (one renewed every third of
// registryTTL lapsed, and was reaped, when its renewals stalled for the
// TTL). It is deregistered at the test's end.
func registerLive(tb testing.TB, s *store.Store, in fleet.Instance) {
	tb.Helper()
	r := instances.New(s.Base(), time.Minute, func(context.Context, []string) error { return nil })
	if _, err := r.HeartbeatInstance(context.Background(), in); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := s.Fleet().DeregisterInstance(context.Background(), in.ID); err != nil {
			tb.Error(err)
		}
	})
}

// A lapsed registration that nobody reaped is not listed, nor counted,
// as live.
func TestInstanceLapsedIsNotListedBeforeReap(t *testing.T) {
	eachRegistry(t, func(t *testing.T, s *store.Store) {
		heartbeat(t, s, self("gone", time.Now()))
		time.Sleep(registryTTL + 100*time.Millisecond)
		if n, err := s.Fleet().Live(context.Background()); err != nil || n != 0 {
			t.Fatalf("live %d %v after the lapse, want 0", n, err)
		}
		// The hash expired with the registration: nothing to list even
		// before a reap removes the id from the set.
		if n := registryKeys(t, s); n != 1 {
			t.Fatalf("%d registry keys after the lapse, want only the set", n)
		}
		if got := listed(t, s); len(got) != 0 {
			t.Fatalf("listed %v after the lapse", ids(got))
		}
		if n := registryKeys(t, s); n != 0 {
			t.Fatalf("%d registry keys after the listing reaped, want 0", n)
		}
	})
}

// Deregistration removes the instance at once, with its janitor leases;
// nothing of it remains in Redis.
func TestInstanceDeregister(t *testing.T) {
	eachRegistry(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		registerLive(t, s, self("one", time.Now()))
		registerLive(t, s, self("two", time.Now()))
		if n := registryKeys(t, s); n != 3 {
			t.Fatalf("%d registry keys for two instances, want 3", n)
		}
		live := func(want int) {
			t.Helper()
			if n, err := s.Fleet().Live(ctx); err != nil || n != want {
				t.Fatalf("live %d %v, want %d", n, err, want)
			}
		}
		live(2)
		s.Client().Set(ctx, s.JanitorKey(3), "one", time.Minute)
		if err := s.Fleet().DeregisterInstance(ctx, "one"); err != nil {
			t.Fatal(err)
		}
		if got := ids(listed(t, s)); !equal(got, []string{"two"}) {
			t.Fatalf("after deregistering one: %v", got)
		}
		live(1)
		if s.Client().Exists(ctx, s.JanitorKey(3)).Val() != 0 {
			t.Error("the janitor lease of the deregistered instance remains")
		}
		if err := s.Fleet().DeregisterInstance(ctx, "two"); err != nil {
			t.Fatal(err)
		}
		if n := registryKeys(t, s); n != 0 {
			t.Fatalf("%d registry keys after every instance deregistered, want 0", n)
		}
	})
}

// Two stores (instances) reap at once: each lapsed id is reaped exactly
// once, and a live one never.
func TestInstanceReapRace(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		prefix := redistest.Prefix(t)
		s1 := openRegistry(t, b, prefix)
		s2 := s1 // an embedded store is one process' own
		if b.Name != "embedded" {
			s2 = openRegistry(t, b, prefix)
		}
		const n = 150 // more than one reap batch
		for i := range n {
			heartbeat(t, s1, self("d"+string(rune('a'+i%26))+string(rune('a'+i/26)), time.Now()))
		}
		time.Sleep(registryTTL + 100*time.Millisecond)
		registerLive(t, s1, self("alive", time.Now()))
		var wg sync.WaitGroup
		got := make([][]string, 2)
		for i, s := range []*store.Store{s1, s2} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r, err := s.Fleet().ReapInstances(context.Background())
				if err != nil {
					t.Error(err)
				}
				got[i] = r
			}()
		}
		wg.Wait()
		seen := map[string]int{}
		for _, r := range got {
			for _, id := range r {
				seen[id]++
			}
		}
		if len(seen) != n || seen["alive"] != 0 {
			t.Fatalf("reaped %d distinct ids (alive: %d), want %d", len(seen), seen["alive"], n)
		}
		for id, c := range seen {
			if c != 1 {
				t.Fatalf("%s reaped %d times", id, c)
			}
		}
		if got := ids(listed(t, s2)); !equal(got, []string{"alive"}) {
			t.Fatalf("listed %v", got)
		}
	})
}

// The registry's scripts run again after the server forgot them.
func TestInstanceScriptsAfterFlush(t *testing.T) {
	for _, b := range backendsWithFlush(t) {
		t.Run(b.Name, func(t *testing.T) {
			s := openRegistry(t, b, "")
			heartbeat(t, s, self("x", time.Now()))
			flushScripts(t, s)
			if !heartbeat(t, s, self("x", time.Now())) {
				t.Fatal("no renewal after SCRIPT FLUSH")
			}
			flushScripts(t, s)
			if _, err := s.Fleet().ReapInstances(context.Background()); err != nil {
				t.Fatal(err)
			}
			flushScripts(t, s)
			s.Client().Set(context.Background(), s.JanitorKey(2), "x", time.Minute)
			if err := s.Fleet().DeregisterInstance(context.Background(), "x"); err != nil {
				t.Fatal(err)
			}
			if s.Client().Exists(context.Background(), s.JanitorKey(2)).Val() != 0 {
				t.Fatal("janitor lease not released after SCRIPT FLUSH")
			}
		})
	}
}

// eachRegistry runs f on standalone, Cluster and embedded with the
// registry TTL.
func eachRegistry(t *testing.T, f func(t *testing.T, s *store.Store)) {
	for _, b := range redistest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) { f(t, openRegistry(t, b, "")) })
	}
}
