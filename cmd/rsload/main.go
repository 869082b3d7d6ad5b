// Command rsload drives running realsyncd instances and measures them.
//
// The ops scenario runs -clients players, each doing operations drawn from
// -mix as fast as answers come (create+delete, join+leave, state patches,
// listings, quick-join+leave, reads), and reports per request kind the
// throughput, latency p50/p90/p99/max and errors by code.
//
//	go run ./cmd/rsload -scenario ops -clients 64 -mix join=1,patch=1 -duration 10s
//
// With -arrival-rate R the run is an open loop: R steps of the mix start
// every second whatever the answers (a launch's players do not wait for
// each other), latencies count from each step's schedule, and it reports
// what was offered, skipped at the generator's bound, left unanswered and
// answered within -good-within (goodput): how a server behaves past its
// capacity, which a closed loop cannot show (openloop.go).
//
//	go run ./cmd/rsload -scenario ops -clients 256 -mix join=1,get=4 -arrival-rate 2000 -duration 12s
//
// With -streams N it also keeps N event streams of its players open during
// the run and reports what they received of the patches. With -cpu-pid P
// it reports the CPU time process P (a server on this machine) used per
// request during the run (cpu.go).
//
// The sse scenario opens N event streams spread over rooms and instances,
// writes state patches at a set rate through the instances, and reports
// events delivered per second and delivery latency (PATCH response to
// arrival on a stream).
//
//	go run ./cmd/rsload -urls http://127.0.0.1:8080 -streams 1000 -rooms 10 -rate 500 -duration 10s
//
// The fanout scenario is the SSE baseline: the same streams and rate
// against the minimal server's SSE fan-out (no realsyncd, no Redis).
//
//	go run ./cmd/rsload -serve-minimal 127.0.0.1:8090 &
//	go run ./cmd/rsload -scenario fanout -urls http://127.0.0.1:8090 -streams 10000 -rooms 100 -rate 500 -duration 10s
//
// With -h2c on both, the baseline of realsyncd's h2c streams (net/http's
// HTTP/2 server without RealSync): -serve-minimal ADDR -h2c, then
// -scenario fanout -h2c; add -h2-random to the server for x/net's HTTP/2
// server with the random write scheduler, the one realsyncd serves with.
//
// With -min-count N a closed-loop ops run goes on past -duration until
// every operation of the mix was answered N times: a short run on a slow
// or busy machine still measures every kind (a random draw of the mix
// may leave a rare one out).
//
//	go run ./cmd/rsload -scenario ops -clients 4 -mix join=1,get=8,quickjoin=1 -duration 2s -min-count 20
//
// Everything it does is bounded by -duration, and with -min-count or an
// open loop's -drain by -duration + -drain + 5 minutes.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/net/http2"

	"github.com/realsync/realsync/internal/redisurl"
)

// Config is one run's parameters.
type Config struct {
	Scenario string
	Clients  int
	Mix      string
	URLs     []string
	Rooms    int
	Streams  int
	Rate     int // patches per second, over all rooms
	Duration time.Duration
	JSON     bool
	RSSPid   int // sse: a local server process whose resident memory to report
	// RSSSettle (sse, with RSSPid): how long to watch the RSS, streams
	// idle, while the server gives back the memory their opening used
	RSSSettle time.Duration
	Seed      int // ops: rooms to create before the run
	CPUPid    int // ops: a local server process whose CPU per request to report
	// RedisURL: the standalone Redis behind the servers (ops) or the
	// minimal server's (-serve-minimal: serves POST /anchor); ops reports
	// Redis' own figures for the run (redisstats.go).
	RedisURL    string
	RedisSample bool // -redis-sample: SLOWLOG sample of script runs
	// RedisCluster: the Cluster masters behind the servers (ops): each
	// one's CPU and share of the run (clustercpu.go).
	RedisCluster string
	// match: tickets, modes, regions, the share of parties of 2 (%), and
	// the rules' team size (scripts/bench.sh's rules file: 2)
	Tickets, Modes, Regions, Party, TeamSize int
	TicketRate                               int // tickets per second; 0: as fast as they go
	// PartyConsent (match): "party" or "follow", each party member
	// consents that way before its leader's create, as a client accepting
	// an invite does; "": only on a 403 PARTY_CONSENT_REQUIRED
	PartyConsent string
	// ops, open loop (openloop.go): steps started per second whatever the
	// answers (0: closed loop, each client waits for its answer), at most
	// MaxOutstanding in flight, waited for Drain after Duration; a step
	// answered within GoodWithin of its schedule counts as good
	ArrivalRate, MaxOutstanding int
	Drain, GoodWithin           time.Duration
	// MinCount (ops, closed loop): the run goes on past Duration until
	// every operation of the mix was answered this many times (runOps)
	MinCount int
	// cpuOf reads a process' CPU time (sse, fanout, with RSSPid); nil:
	// cpuTime (/proc). closing, when set, is called as the streams
	// begin to close. Both for tests.
	cpuOf   func(pid int) time.Duration
	closing func()
}

func main() {
	var c Config
	var urls string
	flag.StringVar(&urls, "urls", "http://127.0.0.1:8080", "comma-separated realsyncd base URLs")
	flag.StringVar(&c.Scenario, "scenario", "sse", "sse, ops, fanout (the machine's SSE baseline, against -serve-minimal), or match (matchmaking tickets)")
	flag.IntVar(&c.Clients, "clients", 64, "ops: concurrent players")
	flag.StringVar(&c.Mix, "mix", "create=1,join=4,patch=10,list=2,quickjoin=1,get=2", "ops: operation weights")
	flag.IntVar(&c.Rooms, "rooms", 10, "rooms")
	flag.IntVar(&c.Streams, "streams", 0, "SSE streams, spread over rooms and instances (sse, fanout: default 100, up to 99 players per room, several streams each; ops: streams of the clients, in their pool rooms, open during the run)")
	flag.IntVar(&c.Rate, "rate", 200, "state patches per second, over all rooms")
	flag.DurationVar(&c.Duration, "duration", 10*time.Second, "how long to write")
	flag.BoolVar(&c.JSON, "json", false, "print the report as JSON")
	flag.IntVar(&c.Seed, "seed", 0, "ops: public rooms of 8 seats to create first (the lobby's size; modes pool and quick, regions r0..r3)")
	flag.IntVar(&c.RSSPid, "rss-pid", 0, "sse, fanout: pid of the server (realsyncd, or -serve-minimal) on this machine; reports its resident memory per idle stream and its CPU time per event delivered")
	flag.DurationVar(&c.RSSSettle, "rss-settle", 0, "sse, with -rss-pid: also watch the server's RSS this long, streams idle, and report the lowest (the runtime gives back what the opening burst used after a GC; an idle server is forced to one every 2 minutes)")
	flag.IntVar(&c.CPUPid, "cpu-pid", 0, "ops: pid of the server on this machine (realsyncd or -serve-minimal); reports its CPU time per request")
	flag.StringVar(&c.RedisURL, "redis", "", "redis://host:port of the standalone Redis behind the servers: ops reports Redis' own CPU and time per request and per script; with -serve-minimal, POST /anchor runs the anchor script there")
	flag.BoolVar(&c.RedisSample, "redis-sample", false, "ops with -redis: also count script runs and the Redis calls of each from a SLOWLOG sample of the run's last quarter (inflates that quarter's Redis time)")
	flag.StringVar(&c.RedisCluster, "redis-cluster", "", "ops: host:port of every master of the Redis Cluster behind the servers, comma-separated: reports each master's CPU and share of the run (how evenly the load spreads)")
	flag.IntVar(&c.Tickets, "tickets", 10000, "match: tickets to queue")
	flag.IntVar(&c.Modes, "modes", 4, "match: modes mm0.. the tickets spread over")
	flag.IntVar(&c.Regions, "regions", 2, "match: regions r0.. the tickets spread over")
	flag.IntVar(&c.Party, "party", 20, "match: percent of tickets that are parties of 2")
	flag.IntVar(&c.TeamSize, "team-size", 2, "match: the team size of the modes' rules")
	flag.IntVar(&c.TicketRate, "ticket-rate", 0, "match: tickets created per second (0: as fast as -clients go)")
	flag.StringVar(&c.PartyConsent, "party-consent", "", "match: party or follow: each party member joins its leader's party (follows its leader) before the leader's create, as against realsyncd with REALSYNC_PARTY_CONSENT party (follow); empty: only when a create is refused 403 PARTY_CONSENT_REQUIRED")
	flag.IntVar(&c.ArrivalRate, "arrival-rate", 0, "ops: open loop: start this many steps of the mix per second, whatever the answers (the clients take them in turn and may have several in flight); 0: closed loop, each client waits for its answer")
	flag.IntVar(&c.MaxOutstanding, "max-outstanding", 20000, "ops with -arrival-rate: the generator's bound on steps in flight; a step due past it is skipped and counted")
	flag.DurationVar(&c.Drain, "drain", 30*time.Second, "ops with -arrival-rate: how long to wait for the steps in flight after -duration; those still unanswered are cut and counted")
	flag.DurationVar(&c.GoodWithin, "good-within", time.Second, "ops with -arrival-rate: a step answered without error within this of its scheduled start counts as good (goodput)")
	flag.IntVar(&c.MinCount, "min-count", 0, "ops, closed loop: go on past -duration until every operation of the mix (weight above 0) was answered at least this many times, errors included (each step ends with its undo); rsload's own bound (-duration + -drain + 5 min) still ends the run, with an error if one of them is short")
	h2c := flag.Bool("h2c", false, "speak unencrypted HTTP/2 with prior knowledge to the instances (realsyncd with REALSYNC_H2C=true): streams and requests share connections, up to the server's concurrent streams per connection (250), instead of a connection each; with -serve-minimal, serve it as well as HTTP/1.1 (the baseline of realsyncd's h2c)")
	serve := flag.String("serve-minimal", "", "serve a minimal handler (the machine's HTTP baseline) on this loopback address instead")
	h2Random := flag.Bool("h2-random", false, "with -serve-minimal -h2c: serve HTTP/2 with golang.org/x/net/http2's random write scheduler, as realsyncd does, instead of net/http's own server (round robin)")
	flag.Parse()
	if *h2c {
		client = h2cClient()
	}
	if *serve != "" {
		fmt.Fprintln(os.Stderr, serveMinimal(*serve, c.RedisURL, *h2c, *h2Random))
		os.Exit(1)
	}
	c.URLs = strings.Split(urls, ",")
	if c.Streams == 0 && c.Scenario != "ops" {
		c.Streams = 100
	}
	if c.Scenario == "match" && (c.Tickets < 1 || c.Modes < 1 || c.Regions < 1 || c.Party < 0 || c.Party > 100 || c.TeamSize < 1 ||
		c.PartyConsent != "" && c.PartyConsent != "party" && c.PartyConsent != "follow") {
		fmt.Fprintln(os.Stderr, "rsload: -tickets, -modes, -regions, -team-size must be positive, -party 0..100 and -party-consent party, follow or empty")
		os.Exit(2)
	}
	if c.ArrivalRate < 0 || c.ArrivalRate > 1_000_000 || c.MaxOutstanding < 1 || c.Drain < 0 || c.Drain > 10*time.Minute || c.GoodWithin <= 0 {
		fmt.Fprintln(os.Stderr, "rsload: -arrival-rate must be in 0..1000000, -max-outstanding positive, -drain in [0, 10m] and -good-within positive")
		os.Exit(2)
	}
	if c.MinCount < 0 || c.MinCount > 0 && c.ArrivalRate > 0 {
		fmt.Fprintln(os.Stderr, "rsload: -min-count must not be negative, and is for the closed loop (no -arrival-rate)")
		os.Exit(2)
	}
	if c.Rooms < 1 || c.Streams < 0 || c.Rate < 1 || c.Duration <= 0 || c.Duration > time.Hour {
		fmt.Fprintln(os.Stderr, "rsload: -rooms, -rate must be positive, -streams not negative and -duration in (0, 1h]")
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.Duration+c.Drain+5*time.Minute)
	defer cancel()
	if err := run(ctx, c); err != nil {
		fmt.Fprintln(os.Stderr, "rsload:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, c Config) error {
	switch c.Scenario {
	case "ops":
		mix, err := ParseMix(c.Mix)
		if err != nil {
			return err
		}
		r, err := runOps(ctx, c, mix)
		if err != nil {
			return err
		}
		if c.JSON {
			return json.NewEncoder(os.Stdout).Encode(r)
		}
		r.print(os.Stdout)
	case "match":
		r, err := runMatch(ctx, c)
		if err != nil {
			return err
		}
		if c.JSON {
			return json.NewEncoder(os.Stdout).Encode(r)
		}
		r.print(os.Stdout)
	case "sse", "fanout":
		run := runSSE
		if c.Scenario == "fanout" {
			run = runFanout
		}
		r, err := run(ctx, c)
		if err != nil {
			return err
		}
		if c.JSON {
			return json.NewEncoder(os.Stdout).Encode(r)
		}
		r.print(os.Stdout, c)
	default:
		return fmt.Errorf("-scenario must be sse, ops, fanout or match, got %q", c.Scenario)
	}
	return nil
}

// client talks to the instances; no connection limit, so every stream
// gets its own connection (over HTTP/1.1; -h2c replaces it by one that
// multiplexes).
var client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1024, MaxConnsPerHost: 0}}

// call sends a JSON request and decodes a JSON answer into out. An error
// answer is an *httpError carrying its problem code.
func call(ctx context.Context, method, url, token string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = strings.NewReader(string(b))
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := client.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode >= 300 {
		var p struct{ Code, Detail string }
		json.NewDecoder(res.Body).Decode(&p)
		return &httpError{method: method, url: url, status: res.StatusCode, code: p.Code, detail: p.Detail,
			retryAfter: res.Header.Get("Retry-After")}
	}
	if out != nil {
		return json.NewDecoder(res.Body).Decode(out)
	}
	_, err = io.Copy(io.Discard, res.Body) // keeps the connection reusable
	return err
}

// httpError is an error answer.
type httpError struct {
	method, url  string
	status       int
	code, detail string
	retryAfter   string // its Retry-After header, if any
}

// setupTries is how many times setupCall sends a request answered 503.
const setupTries = 5

// setupCall is call for a run's setup (guests, the rooms and their
// players), whose errors end the run: an answer of 503 (the instance
// overloaded, or the store slow to answer on a busy machine, as the
// contract allows) is sent again after its Retry-After (1 s without one),
// up to setupTries times in all, as a client would. Each retry is told on
// stderr, so a run's log shows a setup that needed them; they are not
// the measured window's errors. A create retried after a 503 may make a
// second room (the contract's "may have run"): a setup's lobby is then
// one room larger, which no figure reads.
func setupCall(ctx context.Context, method, url, token string, body, out any) error {
	for try := 1; ; try++ {
		err := call(ctx, method, url, token, body, out)
		var he *httpError
		if !errors.As(err, &he) || he.status != http.StatusServiceUnavailable || try == setupTries {
			return err
		}
		wait := time.Second
		if s, perr := strconv.Atoi(he.retryAfter); perr == nil && s > 0 {
			wait = time.Duration(s) * time.Second
		}
		fmt.Fprintf(os.Stderr, "rsload: setup: %v (%s), sent again in %v (try %d of %d)\n", err, he.detail, wait, try+1, setupTries)
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
	}
}

func (e *httpError) Error() string {
	return fmt.Sprintf("%s %s: %d %s", e.method, e.url, e.status, e.code)
}

func guest(ctx context.Context, base, name string) (string, error) {
	g, err := guestAccount(ctx, base, name)
	return g.Token, err
}

// account is a guest's token and user id.
type account struct{ Token, UserID string }

// guestAccount is a new guest account of name on base.
func guestAccount(ctx context.Context, base, name string) (account, error) {
	var g account
	err := setupCall(ctx, "POST", base+"/v1/auth/guest", "", map[string]any{"name": name}, &g)
	return g, err
}

// serveMinimal serves minimalHandler on a loopback address, over HTTP/1.1
// and with h2c over unencrypted HTTP/2 with prior knowledge too, as
// realsyncd with REALSYNC_H2C (net/http's own HTTP/2 server, its
// defaults: 250 streams a connection; with random, x/net's with the
// random write scheduler, as realsyncd's). With redisURL it also serves
// POST /anchor (anchor.go).
func serveMinimal(addr, redisURL string, h2c, random bool) error {
	if !strings.HasPrefix(addr, "127.0.0.1:") && !strings.HasPrefix(addr, "localhost:") {
		return fmt.Errorf("-serve-minimal listens on loopback only, got %q", addr)
	}
	var rdb *redis.Client
	if redisURL != "" {
		o, err := redisurl.Parse(redisURL)
		if err != nil {
			return fmt.Errorf("-redis: %w", err)
		}
		o.Protocol = 2
		rdb = redis.NewClient(o)
	}
	h, err := minimalHandler(context.Background(), rdb)
	if err != nil {
		return fmt.Errorf("-redis: %w", err)
	}
	if rdb != nil {
		mux := http.NewServeMux()
		mux.Handle("POST /anchor", anchorHandler(rdb))
		mux.Handle("/", h)
		h = mux
	}
	srv := &http.Server{Addr: addr, Handler: h, Protocols: minimalProtocols(h2c)}
	if h2c && random {
		//lint:ignore SA1019 realsyncd's HTTP/2 server (cmd/realsyncd/tls.go, http2Server)
		err := http2.ConfigureServer(srv, &http2.Server{NewWriteScheduler: func() http2.WriteScheduler { return http2.NewRandomWriteScheduler() }})
		if err != nil {
			return err
		}
	}
	return srv.ListenAndServe()
}

// minimalProtocols is what the minimal server speaks: HTTP/1.1, and
// unencrypted HTTP/2 with prior knowledge too with h2c.
func minimalProtocols(h2c bool) *http.Protocols {
	p := new(http.Protocols)
	p.SetHTTP1(true)
	p.SetUnencryptedHTTP2(h2c)
	return p
}

// h2cClient is -h2c's client: unencrypted HTTP/2 with prior knowledge
// only, streams and requests multiplexed over a few connections.
func h2cClient() *http.Client {
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	return &http.Client{Transport: &http.Transport{Protocols: &p, MaxIdleConnsPerHost: 1024}}
}

// minimalHandler answers every request like the API's smallest answers do:
// a guest token, a room, {"status":"ok"}, and serves the fanout scenario's
// streams. It is the baseline of what this machine's HTTP stack does
// without RealSync. With rdb the fanout scenario's events go through its
// Pub/Sub (fanout.go), subscribed until ctx ends.
func minimalHandler(ctx context.Context, rdb *redis.Client) (http.Handler, error) {
	fan := &fanoutHub{rooms: map[string]map[chan []byte]bool{}}
	if rdb != nil {
		fan.rdb = rdb
		if err := fan.subscribe(ctx); err != nil {
			return nil, err
		}
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		switch r.URL.Path {
		case "/fanout/events":
			fan.serveEvents(w, r)
			return
		case "/fanout/publish":
			fan.servePublish(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Path == "/v1/auth/guest":
			w.WriteHeader(201)
			w.Write([]byte(`{"token":"t","userId":"u","name":"n","expiresAt":"2030-01-01T00:00:00Z"}`))
		case r.Method == "POST" && r.URL.Path == "/v1/rooms":
			w.WriteHeader(201)
			w.Write([]byte(`{"room":{"id":"0aminimalroom00"},"playerId":1}`))
		default:
			w.Write([]byte(`{"status":"ok"}`))
		}
	}), nil
}
