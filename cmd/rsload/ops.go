package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
)

// Mix weighs the operations of the ops scenario.
type Mix map[string]int

// opNames are the operations a mix may name: create (then delete), join
// (then leave), patch (a state patch in a room the client is in), list (a
// joinable fill-order page of one mode), quickjoin (then leave), get,
// anchor (POST /anchor of the minimal server with -redis: one run of the
// anchor script).
var opNames = []string{"create", "join", "patch", "list", "quickjoin", "get", "healthz", "anchor"}

// ParseMix reads "join=4,patch=10".
func ParseMix(s string) (Mix, error) {
	m := Mix{}
	for _, part := range strings.Split(s, ",") {
		name, w, ok := strings.Cut(strings.TrimSpace(part), "=")
		n, err := strconv.Atoi(w)
		if !ok || err != nil || n < 0 || !slices.Contains(opNames, name) {
			return nil, fmt.Errorf("bad mix entry %q: want <op>=<weight>, op one of %s", part, strings.Join(opNames, ", "))
		}
		m[name] = n
	}
	return m, nil
}

// OpStats is what one kind of request measured.
type OpStats struct {
	Count      int            `json:"count"`
	PerSecond  float64        `json:"perSecond"`
	P50ms      float64        `json:"p50ms"`
	P90ms      float64        `json:"p90ms"`
	P99ms      float64        `json:"p99ms"`
	Maxms      float64        `json:"maxms"`
	ErrorCodes map[string]int `json:"errors,omitempty"`
}

// OpsReport is the ops scenario's result, by request kind, and with
// -streams what the open streams received of the patches.
type OpsReport struct {
	Clients int                 `json:"clients"`
	Seconds float64             `json:"seconds"`
	Ops     map[string]*OpStats `json:"ops"`
	Streams *Report             `json:"streams,omitempty"`
	// ServerCPU, with -cpu-pid: the server's CPU per request (cpu.go).
	ServerCPU *ServerCPU   `json:"serverCPU,omitempty"`
	Redis     *RedisReport `json:"redis,omitempty"`
	// Cluster, with -redis-cluster: each master's CPU and share.
	Cluster *ClusterReport `json:"cluster,omitempty"`
	// Open, with -arrival-rate: what the open loop offered (openloop.go).
	Open *OpenLoop `json:"openLoop,omitempty"`
}

type recorder struct {
	mu   sync.Mutex
	lat  map[string][]time.Duration
	errs map[string]map[string]int
	// cut counts requests the run's end cut before their answer (an open
	// loop's unanswered; a closed loop's last ones, not reported)
	cut atomic.Int64
}

func (r *recorder) add(op string, d time.Duration, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err == nil {
		r.lat[op] = append(r.lat[op], d)
		return
	}
	if r.errs[op] == nil {
		r.errs[op] = map[string]int{}
	}
	r.errs[op][errCode(err)]++
}

// answered is how many times op was answered, errors included.
func (r *recorder) answered(op string) int {
	n := len(r.lat[op])
	for _, e := range r.errs[op] {
		n += e
	}
	return n
}

// reached reports whether each of ops was answered at least n times.
func (r *recorder) reached(ops []string, n int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, op := range ops {
		if r.answered(op) < n {
			return false
		}
	}
	return true
}

// counts says how many times each of ops was answered: "get 3, join 0".
func (r *recorder) counts(ops []string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, len(ops))
	for i, op := range ops {
		out[i] = fmt.Sprintf("%s %d", op, r.answered(op))
	}
	return strings.Join(out, ", ")
}

// errCode is the problem+json code of an error answer, else its kind.
func errCode(err error) string {
	var he *httpError
	if errors.As(err, &he) {
		return he.code
	}
	return "NETWORK"
}

// opsClient is one simulated player.
type opsClient struct {
	base, token string
	home        *room // a pool room it is in, for patches
	rng         *rand.Rand
}

// do sends a request as this player.
func (c *opsClient) do(ctx context.Context, method, path string, body, out any) error {
	return call(ctx, method, c.base+path, c.token, body, out)
}

// runOps runs c.Clients players doing the mix for c.Duration; with
// c.MinCount (closed loop only) for as long as it takes every operation
// of the mix (weight above 0) to be answered that many times, errors
// included, at least c.Duration, and bounded by ctx: a step is not cut at
// c.Duration then, and each step runs to its undo. Its error, when ctx
// ends first, says each operation's count.
func runOps(ctx context.Context, c Config, mix Mix) (*OpsReport, error) {
	if c.MinCount > 0 && c.ArrivalRate > 0 {
		return nil, errors.New("-min-count is for the closed loop (no -arrival-rate)")
	}
	if c.MinCount > 0 && mix["join"] > 0 && c.Rooms < 2 {
		// a client joins a pool room not its own: with one, join never runs
		return nil, errors.New("-min-count with join in the mix needs -rooms 2 or more")
	}
	if err := seedRooms(ctx, c); err != nil {
		return nil, fmt.Errorf("seeding rooms: %w", err)
	}
	pool, err := opsPool(ctx, c)
	if err != nil {
		return nil, err
	}
	var clients []*opsClient
	for i := range c.Clients {
		base := c.URLs[i%len(c.URLs)]
		tok, err := guest(ctx, base, fmt.Sprint("load", i))
		if err != nil {
			return nil, err
		}
		cl := &opsClient{base: base, token: tok, home: pool[i%len(pool)], rng: rand.New(rand.NewPCG(uint64(i), 1))}
		if err := cl.do(ctx, "POST", "/v1/rooms/"+cl.home.id+"/join", nil, nil); err != nil {
			return nil, fmt.Errorf("joining the pool: %w", err)
		}
		clients = append(clients, cl)
	}
	// stream i is client i's (round-robin), in its pool room
	streams := openStreams(ctx, c.Streams, func(i int) (url, token string, r *room) {
		cl := clients[i%len(clients)]
		return cl.base + "/v1/rooms/" + cl.home.id + "/events", cl.token, cl.home
	})
	defer streams.stop()
	var ops, kinds []string
	for _, name := range opNames {
		for range mix[name] {
			ops = append(ops, name)
		}
		if mix[name] > 0 {
			kinds = append(kinds, name)
		}
	}
	if len(ops) == 0 {
		return nil, errors.New("the mix is empty")
	}
	rec := &recorder{lat: map[string][]time.Duration{}, errs: map[string]map[string]int{}}
	var probe *redisProbe
	sampled := make(chan struct{})
	if c.RedisURL == "" || !c.RedisSample {
		close(sampled)
	}
	if c.RedisURL != "" {
		if probe, err = newRedisProbe(c.RedisURL); err != nil {
			return nil, err
		}
		defer probe.Close()
		if err := probe.start(ctx); err != nil {
			return nil, fmt.Errorf("-redis: %w", err)
		}
	}
	var masters *clusterProbe
	if c.RedisCluster != "" {
		if masters, err = newClusterProbe(c.RedisCluster); err != nil {
			return nil, err
		}
		defer masters.Close()
		if err := masters.start(ctx); err != nil {
			return nil, err
		}
	}
	runCtx, cancel := context.WithTimeout(ctx, c.Duration)
	defer cancel()
	cpu, err := startCPU(c.CPUPid)
	if err != nil {
		return nil, err
	}
	if probe != nil && c.RedisSample {
		// the SLOWLOG sample over the last quarter only: logging every
		// command costs Redis time
		go func() {
			defer close(sampled)
			select {
			case <-time.After(c.Duration * 3 / 4):
				probe.startSample(ctx)
			case <-runCtx.Done():
			}
		}()
	}
	start := time.Now()
	var open *OpenLoop
	if c.ArrivalRate > 0 {
		open = runOpen(ctx, c, clients, ops, pool, rec)
	} else {
		// with a minimum count, steps are bounded by ctx, not cut at the
		// run's duration
		stepCtx, more := runCtx, func() bool { return true }
		if c.MinCount > 0 {
			stepCtx = ctx
			more = func() bool { return time.Since(start) < c.Duration || !rec.reached(kinds, c.MinCount) }
		}
		var wg sync.WaitGroup
		for _, cl := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for stepCtx.Err() == nil && more() {
					cl.step(stepCtx, ops[cl.rng.IntN(len(ops))], pool, rec, time.Now(), cl.rng)
				}
			}()
		}
		wg.Wait()
		if c.MinCount > 0 && !rec.reached(kinds, c.MinCount) {
			return nil, fmt.Errorf("-min-count %d not reached within the run's bound: %s", c.MinCount, rec.counts(kinds))
		}
	}
	took := time.Since(start)
	rep := rec.report(c.Clients, took)
	rep.Open = open
	if rep.ServerCPU, err = cpu.stop(rep.requests(), took.Seconds()); err != nil {
		return nil, err
	}
	<-sampled
	if probe != nil {
		n := 0
		for _, s := range rep.Ops {
			n += s.Count
		}
		if rep.Redis, err = probe.stop(ctx, n); err != nil {
			return nil, fmt.Errorf("-redis: %w", err)
		}
	}
	if masters != nil {
		n := 0
		for _, s := range rep.Ops {
			n += s.Count
		}
		if rep.Cluster, err = masters.stop(ctx, n); err != nil {
			return nil, err
		}
	}
	if c.Streams > 0 {
		var ok int64
		for _, r := range pool {
			ok += int64(len(r.sent))
		}
		streams.lastEvents()
		rep.Streams = streams.close(c, pool, ok, 0, took)
	}
	return rep, nil
}

// seedRooms creates c.Seed public rooms of 8 seats with their owner in
// them, half of mode "pool" (what list pages read), half of mode "quick"
// (what quick-join picks from), over regions r0..r3, 32 at a time: the
// lobby's size for a run.
func seedRooms(ctx context.Context, c Config) error {
	var g errgroup.Group
	var next atomic.Int64
	for w := range 32 {
		base := c.URLs[w%len(c.URLs)]
		g.Go(func() error {
			tok, err := guest(ctx, base, "seeder")
			if err != nil {
				return err
			}
			for i := next.Add(1); i <= int64(c.Seed); i = next.Add(1) {
				mode := [2]string{"pool", "quick"}[i%2]
				if err := setupCall(ctx, "POST", base+"/v1/rooms", tok, map[string]any{"name": fmt.Sprint("seed ", i),
					"mode": mode, "region": fmt.Sprint("r", (i/2)%4), "maxPlayers": 8}, nil); err != nil {
					return err
				}
			}
			return nil
		})
	}
	return g.Wait()
}

// opsPool creates the rooms that joins and patches go to: open state, 100
// seats.
func opsPool(ctx context.Context, c Config) ([]*room, error) {
	var out []*room
	for i := range c.Rooms {
		base := c.URLs[i%len(c.URLs)]
		owner, err := guest(ctx, base, "pool")
		if err != nil {
			return nil, err
		}
		var created struct{ Room struct{ ID string } }
		if err := setupCall(ctx, "POST", base+"/v1/rooms", owner, map[string]any{"name": fmt.Sprint("pool ", i),
			"mode": "pool", "region": fmt.Sprint("r", i%4), "maxPlayers": 100, "statePolicy": "open"}, &created); err != nil {
			return nil, err
		}
		out = append(out, &room{id: created.Room.ID, sent: map[int64]time.Time{}})
	}
	return out, nil
}

// step does one operation (and its undo, timed apart) and records it,
// drawing what it needs from rng. The operation's latency counts from
// sched (its scheduled start in an open loop), its undo's from its own
// start; ok and took are the operation's (not the undo's) outcome.
func (c *opsClient) step(ctx context.Context, op string, pool []*room, rec *recorder, sched time.Time, rng *rand.Rand) (ok bool, took time.Duration) {
	first := true
	timed := func(name string, f func() error) error {
		t := time.Now()
		if first {
			t, first = sched, false
		}
		err := f()
		d := time.Since(t)
		if ctx.Err() != nil {
			rec.cut.Add(1)
			return err
		}
		rec.add(name, d, err)
		if name == op {
			ok, took = err == nil, d
		}
		return err
	}
	switch op {
	case "create":
		var j struct{ Room struct{ ID string } }
		if timed("create", func() error {
			return c.do(ctx, "POST", "/v1/rooms", map[string]any{"name": "load", "mode": "churn", "region": "r0"}, &j)
		}) == nil {
			timed("delete", func() error { return c.do(ctx, "DELETE", "/v1/rooms/"+j.Room.ID, nil, nil) })
		}
	case "join":
		i := rng.IntN(len(pool))
		if pool[i] == c.home {
			if len(pool) == 1 {
				return false, 0
			}
			i = (i + 1) % len(pool) // not its own room: the next one
		}
		id := pool[i].id
		if timed("join", func() error { return c.do(ctx, "POST", "/v1/rooms/"+id+"/join", nil, nil) }) == nil {
			timed("leave", func() error { return c.do(ctx, "POST", "/v1/rooms/"+id+"/leave", nil, nil) })
		}
	case "patch":
		var v struct{ Version int64 }
		if timed("patch", func() error {
			return c.do(ctx, "PATCH", "/v1/rooms/"+c.home.id+"/state", map[string]any{"k" + strconv.Itoa(rng.IntN(8)): rng.IntN(1000)}, &v)
		}) == nil {
			c.home.record(v.Version)
		}
	case "list":
		timed("list", func() error {
			return c.do(ctx, "GET", fmt.Sprintf("/v1/rooms?joinable=true&sort=fill&mode=pool&region=r%d&limit=20", rng.IntN(4)), nil, nil)
		})
	case "get":
		timed("get", func() error { return c.do(ctx, "GET", "/v1/rooms/"+c.home.id, nil, nil) })
	case "anchor": // the minimal server's anchor script (-serve-minimal with -redis)
		timed("anchor", func() error { return c.do(ctx, "POST", "/anchor", nil, nil) })
	case "healthz": // no Redis, no auth: the HTTP round trip alone
		timed("healthz", func() error { return c.do(ctx, "GET", "/healthz", nil, nil) })
	case "quickjoin":
		var q struct{ Room struct{ ID string } }
		if timed("quickjoin", func() error {
			return c.do(ctx, "POST", "/v1/matchmaking/quick-join", map[string]any{"mode": "quick", "regions": []string{"r0"},
				"create": map[string]any{"name": "quick", "maxPlayers": 8}}, &q)
		}) == nil {
			timed("leave", func() error { return c.do(ctx, "POST", "/v1/rooms/"+q.Room.ID+"/leave", nil, nil) })
		}
	}
	return ok, took
}

func (r *recorder) report(clients int, took time.Duration) *OpsReport {
	rep := &OpsReport{Clients: clients, Seconds: took.Seconds(), Ops: map[string]*OpStats{}}
	for op, lat := range r.lat {
		slices.Sort(lat)
		rep.Ops[op] = &OpStats{Count: len(lat), PerSecond: float64(len(lat)) / took.Seconds(),
			P50ms: percentile(lat, 50), P90ms: percentile(lat, 90), P99ms: percentile(lat, 99), Maxms: percentile(lat, 100)}
	}
	for op, codes := range r.errs {
		if rep.Ops[op] == nil {
			rep.Ops[op] = &OpStats{}
		}
		rep.Ops[op].ErrorCodes = codes
	}
	return rep
}

// requests counts the requests answered in the run, errors included.
func (r *OpsReport) requests() int {
	n := 0
	for _, s := range r.Ops {
		n += s.Count
		for _, e := range s.ErrorCodes {
			n += e
		}
	}
	return n
}

func (r *OpsReport) print(w io.Writer) {
	fmt.Fprintf(w, "ops: %d clients, %.1f s\n", r.Clients, r.Seconds)
	fmt.Fprintf(w, "  %-10s %9s %9s %8s %8s %8s %8s  %s\n", "op", "count", "per s", "p50 ms", "p90 ms", "p99 ms", "max ms", "errors")
	names := make([]string, 0, len(r.Ops))
	for n := range r.Ops {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		s := r.Ops[n]
		fmt.Fprintf(w, "  %-10s %9d %9.0f %8.2f %8.2f %8.2f %8.2f  %v\n", n, s.Count, s.PerSecond, s.P50ms, s.P90ms, s.P99ms, s.Maxms, s.ErrorCodes)
	}
	if r.Open != nil {
		r.Open.print(w)
	}
	if r.Redis != nil {
		r.Redis.print(w)
	}
	if r.Cluster != nil {
		r.Cluster.print(w)
	}
	if st := r.Streams; st != nil {
		fmt.Fprintf(w, "  streams    %d open: %d of %d patch events delivered (%.0f events/s), %d reconnects; p50 %.2f ms  p99 %.2f ms  max %.2f ms (PATCH response to arrival)\n",
			st.Streams, st.Delivered, st.Expected, st.EventsPerSecond, st.StreamDrops, st.LatencyP50ms, st.LatencyP99ms, st.LatencyMaxms)
		if len(st.StreamRefusals) > 0 {
			fmt.Fprintf(w, "  refused    stream openings answered with an error, by code: %v\n", st.StreamRefusals)
		}
	}
	if r.ServerCPU != nil {
		r.ServerCPU.print(w)
	}
}
