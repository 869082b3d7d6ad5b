package metrics

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/realsync/realsync/lobby"
)

// ShardStats is a collector of realsync_rooms{status}, realsync_players
// and realsync_redis_up, read from the shard stats hashes that the scripts
// keep with every change (listing.Index.Stats: one pipeline of one small
// hash per shard), so a scrape costs Redis next to nothing whatever the
// number of rooms.
//
// A read is reused for a TTL, so many scrapes (several Prometheus servers,
// several instances reading the same Redis) cost one read per TTL; a
// scrape waits for a read at most a timeout, so a Redis outage never hangs
// a scrape: the scrape then says realsync_redis_up 0 and leaves the rooms
// and players out rather than report stale counts.
type ShardStats struct {
	read    func(context.Context) (lobby.Stats, error)
	ttl     time.Duration
	timeout time.Duration

	rooms, players, up, instances, settings, masterShards *prometheus.Desc
	// live counts the registered instances and their settings digests
	// (store.Store.Instances); nil: realsync_instances and
	// realsync_instance_settings are not reported.
	live func(context.Context) (Fleet, error)
	// masters counts each Cluster master's shards (store.Store.MasterShards;
	// nil without a Cluster); nil: realsync_redis_master_shards is not
	// reported.
	masters func(context.Context) (map[string]int, error)

	mu      sync.Mutex
	at      time.Time // of the last read; zero: none yet
	stats   lobby.Stats
	fleet   Fleet          // when live is set
	shards  map[string]int // shards by master, when masters is set
	err     error
	reading chan struct{} // closed when the read under way ends; nil: none
}

// Fleet is what the instance registry says (ShardStats.WithInstances).
type Fleet struct {
	// Live is the live registered instances.
	Live int
	// Settings is how many settings digests they report (an older
	// release's "" not counted): 1 when they agree.
	Settings int
}

// errSlow says a read of the stats took longer than the timeout.
var errSlow = errors.New("metrics: reading the shard stats timed out")

var _ prometheus.Collector = (*ShardStats)(nil)

// NewShardStats returns the collector over read (listing.Index.Stats). A
// read is reused for ttl (default 5s) and bounded by timeout (default 2s).
func NewShardStats(read func(context.Context) (lobby.Stats, error), ttl, timeout time.Duration) *ShardStats {
	if ttl <= 0 {
		ttl = 5 * time.Second
	}
	if timeout <= 0 {
		timeout = 2 * time.Second
	}
	return &ShardStats{read: read, ttl: ttl, timeout: timeout,
		rooms: prometheus.NewDesc("realsync_rooms", "Rooms in Redis, by status (from the shard stats; every instance reports the same).",
			[]string{"status"}, nil),
		players:   prometheus.NewDesc("realsync_players", "Players in rooms in Redis (from the shard stats; every instance reports the same).", nil, nil),
		up:        prometheus.NewDesc("realsync_redis_up", "1 when the last read of the shard stats succeeded, 0 when Redis could not be read.", nil, nil),
		instances: prometheus.NewDesc("realsync_instances", "Live registered instances (the instance registry; every instance reports the same).", nil, nil),
		settings: prometheus.NewDesc("realsync_instance_settings",
			"Settings digests the live instances report (GET /v1/admin/instances, settings): 1 when they share their matchmaking rules, modes, regions and party consent; more while a change rolls out, or when one was left out (every instance reports the same).", nil, nil),
		masterShards: prometheus.NewDesc("realsync_redis_master_shards",
			"Shards whose hash slot each Redis Cluster master owns: the load spreads by these, not by slot counts (every instance reports the same; none without a Cluster).",
			[]string{"master"}, nil),
	}
}

// WithInstances makes the collector also report realsync_instances and
// realsync_instance_settings, read by live with the stats (same TTL and
// timeout).
func (c *ShardStats) WithInstances(live func(context.Context) (Fleet, error)) *ShardStats {
	c.live = live
	return c
}

// WithMasterShards makes the collector also report
// realsync_redis_master_shards{master}, read by masters with the stats
// (same TTL and timeout); a nil map (no Cluster) reports none, and so does
// a failed read, which leaves realsync_redis_up to the stats.
func (c *ShardStats) WithMasterShards(masters func(context.Context) (map[string]int, error)) *ShardStats {
	c.masters = masters
	return c
}

// Describe implements prometheus.Collector.
func (c *ShardStats) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.rooms
	ch <- c.players
	ch <- c.up
	if c.live != nil {
		ch <- c.instances
		ch <- c.settings
	}
	if c.masters != nil {
		ch <- c.masterShards
	}
}

// Collect implements prometheus.Collector.
func (c *ShardStats) Collect(ch chan<- prometheus.Metric) {
	st, err := c.get()
	if err != nil {
		ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 1)
	for status, n := range st.Rooms {
		ch <- prometheus.MustNewConstMetric(c.rooms, prometheus.GaugeValue, float64(n), string(status))
	}
	ch <- prometheus.MustNewConstMetric(c.players, prometheus.GaugeValue, float64(st.Players))
	if c.live != nil {
		c.mu.Lock()
		f := c.fleet
		c.mu.Unlock()
		ch <- prometheus.MustNewConstMetric(c.instances, prometheus.GaugeValue, float64(f.Live))
		ch <- prometheus.MustNewConstMetric(c.settings, prometheus.GaugeValue, float64(f.Settings))
	}
	c.mu.Lock()
	shards := c.shards
	c.mu.Unlock()
	for m, n := range shards {
		ch <- prometheus.MustNewConstMetric(c.masterShards, prometheus.GaugeValue, float64(n), m)
	}
}

// get returns the last read when it is younger than the TTL, else reads,
// waiting at most the timeout. The read runs on its own goroutine with the
// timeout as its context's deadline (go-redis honours it on a client
// with ContextTimeoutEnabled, as the store's; else its ReadTimeout): a
// scrape stops waiting by itself all the same, and one read at most is
// under way at any time.
func (c *ShardStats) get() (lobby.Stats, error) {
	c.mu.Lock()
	if !c.at.IsZero() && time.Since(c.at) < c.ttl {
		defer c.mu.Unlock()
		return c.stats, c.err
	}
	if c.reading == nil {
		c.reading = make(chan struct{})
		go c.read1(c.reading)
	}
	reading := c.reading
	c.mu.Unlock()
	t := time.NewTimer(c.timeout)
	defer t.Stop()
	select {
	case <-reading:
	case <-t.C:
		return lobby.Stats{}, errSlow
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stats, c.err
}

// read1 reads the stats once, then closes done.
func (c *ShardStats) read1(done chan struct{}) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	st, err := c.read(ctx)
	var f Fleet
	if err == nil && c.live != nil {
		f, err = c.live(ctx)
	}
	var shards map[string]int
	if err == nil && c.masters != nil {
		// a failed read drops the series, not realsync_redis_up: the
		// layout may come from a master holding no shard
		if m, merr := c.masters(ctx); merr == nil {
			shards = m
		}
	}
	cancel()
	c.mu.Lock()
	c.stats, c.fleet, c.shards, c.err, c.at, c.reading = st, f, shards, err, time.Now(), nil
	c.mu.Unlock()
	close(done)
}
