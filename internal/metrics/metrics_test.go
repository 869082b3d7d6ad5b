package metrics_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/realsync/realsync/api"
	"github.com/realsync/realsync/internal/metrics"
	"github.com/realsync/realsync/internal/promtest"
	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/internal/storetest"
	"github.com/realsync/realsync/lobby"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/store"
)

// Metrics implements every observer; these packages cannot import it (it
// would import them back in their tests), so the assertions live here.
var (
	_ api.Metrics        = (*metrics.Metrics)(nil)
	_ store.Metrics      = (*metrics.Metrics)(nil)
	_ store.BatchMetrics = (*metrics.Metrics)(nil)
	_ store.GuardMetrics = (*metrics.Metrics)(nil)
)

func TestMain(m *testing.M) { redistest.Main(m) }

// Methods a client makes up share one label; known ones keep theirs.
func TestRequestLabels(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := metrics.New(reg, "v1")
	for _, method := range []string{"GET", "BREW", "get", "PROPFIND", "DELETE"} {
		m.Request("/v1/rooms", method, 200, time.Millisecond, false)
	}
	m.Request("/v1/rooms/{roomId}/events", "GET", 200, time.Hour, true)
	want := `
# HELP realsync_http_requests_total HTTP requests answered, by route pattern, method and status; event streams when they end.
# TYPE realsync_http_requests_total counter
realsync_http_requests_total{method="DELETE",route="/v1/rooms",status="200"} 1
realsync_http_requests_total{method="GET",route="/v1/rooms",status="200"} 1
realsync_http_requests_total{method="GET",route="/v1/rooms/{roomId}/events",status="200"} 1
realsync_http_requests_total{method="other",route="/v1/rooms",status="200"} 3
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "realsync_http_requests_total"); err != nil {
		t.Error(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	observed := map[string]uint64{}
	for _, mf := range mfs {
		if mf.GetName() == "realsync_http_request_duration_seconds" {
			for _, m := range mf.GetMetric() {
				observed[m.GetLabel()[0].GetValue()+" "+m.GetLabel()[1].GetValue()] = m.GetHistogram().GetSampleCount()
			}
		}
	}
	if want := map[string]uint64{"GET /v1/rooms": 1, "other /v1/rooms": 3, "DELETE /v1/rooms": 1, "GET /v1/rooms/{roomId}/events": 0}; !maps.Equal(observed, want) {
		t.Errorf("durations observed %v, want %v (none of the stream)", observed, want)
	}
}

// The shard stats are read once per TTL however many scrapes come, and a
// Redis that went away makes a scrape say realsync_redis_up 0 within the
// read's timeout, without rooms or players.
func TestShardStats(t *testing.T) {
	srv, err := redistest.StartServer()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	ctx := context.Background()
	st := storetest.Open(t, store.Config{RedisURL: "redis://" + srv.Addr, Prefix: redistest.Prefix(t), Shards: 4})
	owner := rooms.User{ID: "u-owner", Name: "owner"}
	for range 2 {
		if _, err := st.Create(ctx, owner, rooms.NewRoom{Name: "r", Mode: "m", Region: "r", MaxPlayers: 4, Visibility: rooms.Public,
			Attributes: map[string]any{}, State: rooms.State{}, StatePolicy: rooms.PolicyOpen}); err != nil {
			t.Fatal(err)
		}
	}
	var reads atomic.Int64
	read := func(ctx context.Context) (lobby.Stats, error) { reads.Add(1); return st.Listing().Stats(ctx) }
	reg := prometheus.NewRegistry()
	reg.MustRegister(metrics.NewShardStats(read, time.Hour, 500*time.Millisecond))
	want := `
# HELP realsync_players Players in rooms in Redis (from the shard stats; every instance reports the same).
# TYPE realsync_players gauge
realsync_players 2
# HELP realsync_redis_up 1 when the last read of the shard stats succeeded, 0 when Redis could not be read.
# TYPE realsync_redis_up gauge
realsync_redis_up 1
`
	for range 5 {
		if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "realsync_players", "realsync_redis_up"); err != nil {
			t.Fatal(err)
		}
	}
	if v, _ := promtest.Sample(t, reg, "realsync_rooms", "status", "waiting"); v != 2 || reads.Load() != 1 {
		t.Errorf("rooms waiting %v after %d reads; want 2 after 1", v, reads.Load())
	}

	// A Redis that answers nothing for 3 s: the read gives up after its
	// timeout (without one the scrape would wait and then say 1).
	if err := st.Client().Do(ctx, "CLIENT", "PAUSE", 3000, "ALL").Err(); err != nil {
		t.Fatal(err)
	}
	down := `
# HELP realsync_redis_up 1 when the last read of the shard stats succeeded, 0 when Redis could not be read.
# TYPE realsync_redis_up gauge
realsync_redis_up 0
`
	reg = prometheus.NewRegistry()
	reg.MustRegister(metrics.NewShardStats(st.Listing().Stats, time.Hour, 300*time.Millisecond))
	if err := testutil.GatherAndCompare(reg, strings.NewReader(down), "realsync_redis_up", "realsync_players", "realsync_rooms"); err != nil {
		t.Errorf("Redis paused: %v", err)
	}
	srv.Stop()
	reg = prometheus.NewRegistry()
	reg.MustRegister(metrics.NewShardStats(st.Listing().Stats, time.Hour, 300*time.Millisecond))
	if err := testutil.GatherAndCompare(reg, strings.NewReader(down), "realsync_redis_up", "realsync_players", "realsync_rooms"); err != nil {
		t.Errorf("Redis stopped: %v", err)
	}
}

// Every kind of batch the store sends is counted under its own kind; a
// kind the store does not name is dropped.
func TestBatchKinds(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := metrics.New(reg, "v1")
	for kind, size := range map[string]int{"script": 3, "read": 5, "transaction": 7, "made-up": 9} {
		m.RedisBatch(kind, size)
	}
	if sums, want := histogramSums(t, reg, "realsync_redis_batch_size"), map[string]float64{"script": 3, "read": 5, "transaction": 7}; !maps.Equal(sums, want) {
		t.Errorf("batch sizes by kind %v, want %v", sums, want)
	}
}

// The openings' waits: the gauge follows what is added, the histogram
// keeps the three outcomes from the start and nothing else.
func TestOpeningWaits(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := metrics.New(reg, "v1")
	m.OpeningsWaiting(3)
	m.OpeningsWaiting(-1)
	m.OpeningWaited("opened", 2*time.Second)
	m.OpeningWaited("gone", 30*time.Millisecond)
	m.OpeningWaited("made-up", time.Second)
	want := `
# HELP realsync_sse_openings_waiting Event stream requests waiting for a place among the openings the instance runs at once (256): a storm of openings queued.
# TYPE realsync_sse_openings_waiting gauge
realsync_sse_openings_waiting 2
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "realsync_sse_openings_waiting"); err != nil {
		t.Error(err)
	}
	if sums, want := histogramSums(t, reg, "realsync_sse_opening_wait_seconds"), map[string]float64{"opened": 2, "gone": 0.03, "shutdown": 0}; !maps.Equal(sums, want) {
		t.Errorf("waits by outcome %v s, want %v", sums, want)
	}
}

// histogramSums gathers reg and returns the sums of histogram name's
// series by their first label's value.
func histogramSums(t *testing.T, reg *prometheus.Registry, name string) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sums := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, m := range mf.GetMetric() {
				sums[m.GetLabel()[0].GetValue()] = m.GetHistogram().GetSampleSum()
			}
		}
	}
	return sums
}

// Modes a client makes up (REALSYNC_MODES unset) share the label "other",
// whose queue gauge is the sum of theirs until each is released; the
// configured ones keep theirs. Each made-up mode had its own 16 series for
// as long as the instance ran (a soak's 100 modes of one match each:
// 1 600 series more, none ever removed).
func TestMatchmakingModeLabels(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := metrics.New(reg, "v1")
	m.MatchmakingModes([]string{"ranked"})
	for i := range 100 {
		mode := fmt.Sprintf("m%d", i)
		m.Searching(mode, 2)
		m.Matched(mode, []time.Duration{time.Second, time.Second})
		m.Ended(mode, "cancelled", 1)
		m.PassCut(mode)
		m.CommitNotReplicated(mode, false)
	}
	m.Searching("ranked", 7)
	m.CommitNotReplicated("ranked", true)
	m.Matched("ranked", []time.Duration{time.Second})
	count := func() int {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, mf := range mfs {
			if strings.HasPrefix(mf.GetName(), "realsync_matchmaking_") {
				n += len(mf.GetMetric())
			}
		}
		return n
	}
	// other: tickets, matches, wait, ended{cancelled}, pass_cut and
	// commits_not_replicated; ranked: the first three and the last
	if n := count(); n != 10 {
		t.Fatalf("%d matchmaking series for 100 made-up modes and a configured one, want 10", n)
	}
	sample := func(name string, labels ...string) float64 {
		v, ok := promtest.Sample(t, reg, name, labels...)
		if !ok {
			t.Fatalf("no %s %v", name, labels)
		}
		return v
	}
	if v := sample("realsync_matchmaking_tickets", "mode", "other"); v != 200 {
		t.Fatalf("other's queue %v, want the 100 modes' 2 each", v)
	}
	if v := sample("realsync_matchmaking_matches_total", "mode", "other"); v != 100 {
		t.Fatalf("other's matches %v, want 100", v)
	}
	if v := sample("realsync_matchmaking_time_to_match_seconds", "mode", "other"); v != 200 {
		t.Fatalf("other's waits observed %v, want 200", v)
	}
	if v := sample("realsync_matchmaking_pass_cut_total", "mode", "other"); v != 100 {
		t.Fatalf("other's cut passes %v, want 100", v)
	}
	if v := sample("realsync_matchmaking_commits_not_replicated_total", "mode", "other", "outcome", "held"); v != 100 {
		t.Fatalf("other's commits not replicated %v, want 100", v)
	}
	if v := sample("realsync_matchmaking_commits_not_replicated_total", "mode", "ranked", "outcome", "told"); v != 1 {
		t.Fatalf("ranked's commits not replicated %v, want 1", v)
	}
	if v := sample("realsync_matchmaking_tickets", "mode", "ranked"); v != 7 {
		t.Fatalf("ranked's queue %v, want 7", v)
	}
	m.Searching("m0", 5)
	m.Released("m1")
	m.Released("m1") // a second release changes nothing
	if v := sample("realsync_matchmaking_tickets", "mode", "other"); v != 201 {
		t.Fatalf("other's queue %v after m0 went to 5 and m1 was released, want 201", v)
	}
	for i := range 100 {
		m.Released(fmt.Sprintf("m%d", i))
	}
	if _, ok := promtest.Sample(t, reg, "realsync_matchmaking_tickets", "mode", "other"); ok {
		t.Fatal("other's queue still reported after every mode under it was released")
	}
	m.Released("ranked")
	if _, ok := promtest.Sample(t, reg, "realsync_matchmaking_tickets", "mode", "ranked"); ok {
		t.Fatal("ranked's queue still reported after its release")
	}
}

// realsync_redis_master_shards has a series per master MasterShards
// names, none without a Cluster (a nil map), and none once the read fails,
// which leaves realsync_redis_up at 1 (the stats were read).
func TestShardStatsMasterShards(t *testing.T) {
	stats := func(context.Context) (lobby.Stats, error) { return lobby.Stats{}, nil }
	tests := []struct {
		name    string
		masters map[string]int
		err     error
		want    string
	}{
		{"three masters", map[string]int{"10.0.0.1:6379": 8, "10.0.0.2:6379": 4, "10.0.0.3:6379": 0}, nil, `
# HELP realsync_redis_master_shards Shards whose hash slot each Redis Cluster master owns: the load spreads by these, not by slot counts (every instance reports the same; none without a Cluster).
# TYPE realsync_redis_master_shards gauge
realsync_redis_master_shards{master="10.0.0.1:6379"} 8
realsync_redis_master_shards{master="10.0.0.2:6379"} 4
realsync_redis_master_shards{master="10.0.0.3:6379"} 0
`},
		{"no Cluster", nil, nil, ""},
		{"read failed", nil, errors.New("CLUSTERDOWN"), ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			reg.MustRegister(metrics.NewShardStats(stats, time.Hour, time.Second).
				WithMasterShards(func(context.Context) (map[string]int, error) { return tc.masters, tc.err }))
			if err := testutil.GatherAndCompare(reg, strings.NewReader(tc.want), "realsync_redis_master_shards"); err != nil {
				t.Fatal(err)
			}
			if v, _ := promtest.Sample(t, reg, "realsync_redis_up"); v != 1 {
				t.Fatalf("realsync_redis_up %v, want 1", v)
			}
		})
	}
}
