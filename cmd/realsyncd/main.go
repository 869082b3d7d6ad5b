// Command realsyncd serves the RealSync API.
//
// With no Redis configured it runs on an embedded in-process store, so
// `go run ./cmd/realsyncd` works on a fresh machine (data in memory only).
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync"
	"github.com/realsync/realsync/api"
	"github.com/realsync/realsync/internal/fleet"
	"github.com/realsync/realsync/internal/metrics"
	"github.com/realsync/realsync/lobby"
	"github.com/realsync/realsync/matchmaking"
	"github.com/realsync/realsync/players"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/sse"
	"github.com/realsync/realsync/store"
	idemstore "github.com/realsync/realsync/store/idempotency"
	"github.com/realsync/realsync/store/ratelimit"
	"github.com/realsync/realsync/store/streamtokens"
	"github.com/realsync/realsync/store/userlog"
	"github.com/realsync/realsync/web"
)

var logLevels = map[string]slog.Level{"debug": slog.LevelDebug, "info": slog.LevelInfo,
	"warn": slog.LevelWarn, "error": slog.LevelError}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "migrate" {
		os.Exit(migrateMain(os.Getenv, os.Args[2:], os.Stdout, os.Stderr))
	}
	if len(os.Args) > 1 && os.Args[1] == "apikey" {
		os.Exit(apikeyMain(os.Args[2:], os.Stdout, os.Stderr))
	}
	cfg, err := ParseConfig(os.Getenv, os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "realsyncd:", err)
		os.Exit(2)
	}
	log := newLogger(os.Stderr, cfg.LogFormat, cfg.LogLevel)
	redis.SetLogger(redisLogger{log}) // go-redis' global logger: set here only
	unknown, empty := environNotes(os.Environ())
	if len(unknown) > 0 {
		log.Warn("REALSYNC_ variables no setting has, ignored (misspelt?)", "names", strings.Join(unknown, ","))
	}
	if len(empty) > 0 {
		log.Warn("REALSYNC_ variables set empty: their defaults apply, as when unset", "names", strings.Join(empty, ","))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// a second signal, during the shutdown, ends the process at once (a
	// second Ctrl-C skips the streams' spread), as a killed instance's
	go func() {
		<-ctx.Done()
		stop()
	}()
	if err := Run(ctx, cfg, log, nil); err != nil {
		log.Error("realsyncd stopped", "err", err)
		os.Exit(1)
	}
}

// logDedupInterval: a warning or error logged again within it is only
// counted (see dedupHandler).
const logDedupInterval = 10 * time.Second

// idleTimeout is how long a connection with no request in flight is kept
// (an HTTP/2 one with no stream open), for its client's next request:
// longer than the idle timeouts of the proxies and load balancers in front
// (60 s for nginx's upstream keepalive and AWS ALB), so that they, not the
// instance, close an idle connection and never send a request on one the
// instance is closing (a 502). docs/SECURITY.md has its cost.
const idleTimeout = 120 * time.Second

// errConnecting is /readyz's answer until the instance connected to Redis.
var errConnecting = errors.New("connecting to redis")

// listenWait is how long a starting instance waits for its first
// connection to the store before it opens its API port anyway (then
// serving /healthz, /readyz 503 and 503 STORE_UNAVAILABLE until it
// connects). An instance that opened its port at once answered every
// request 503 "not connected to the store yet" for the milliseconds its
// connection took, and a proxy whose checks had not seen it restart (a
// tester's HAProxy at 2 s checks, the instance back within 2 s) sent it
// a burst of requests meanwhile: 143 answered 503 in one restart. A port
// that opens connected leaves nothing for a proxy to catch; one that is
// closed meanwhile is a failed connection, which a proxy retries on
// another instance.
const listenWait = 2 * time.Second

// Run serves until ctx ends, then shuts down gracefully. When readyAddr is
// not nil it receives the listening address once the server accepts
// requests. It connects to Redis and checks the data's layout first: once
// connected it opens its port, joins the instance registry and starts the
// janitor, and only then serves, ready (GET /readyz 200, routes served);
// while Redis does not answer it opens its port after listenWait all the
// same (retrying meanwhile) and is ready once connected. A layout
// mismatch ends Run with store.ErrLayout.
func Run(ctx context.Context, cfg Config, log *slog.Logger, readyAddr chan<- string) error {
	reg, m := newRegistry()
	sc := storeConfig(cfg)
	sc.Metrics, sc.JanitorActions = m, m.JanitorAction
	sc.Offline.Dropped, sc.Offline.Expired = m.OfflineDropped, m.OfflineExpired
	st, err := store.New(sc)
	if err != nil {
		return err
	}
	// shutdown closes the store within REALSYNC_SHUTDOWN_TIMEOUT; a return
	// before it (a failed start) closes it here
	closeStore := func() { st.Close() }
	defer func() { closeStore() }()
	logStartup(log, cfg, st)
	defer startGCFloor(gcFloor(cfg.GCMinHeap, os.Getenv("GOGC"), log))()
	// connected to Redis, layout checked: until then nothing reads or
	// writes Redis, /metrics included (realsync_redis_up 0)
	var up atomic.Bool
	stats := func(ctx context.Context) (lobby.Stats, error) {
		if !up.Load() {
			return lobby.Stats{}, errConnecting
		}
		return st.Listing().Stats(ctx)
	}
	reg.MustRegister(metrics.NewShardStats(stats, 0, 0).WithInstances(func(ctx context.Context) (metrics.Fleet, error) {
		live, err := st.Fleet().Instances(ctx)
		digests := map[string]bool{}
		for _, in := range live {
			if in.Settings != "" {
				digests[in.Settings] = true
			}
		}
		return metrics.Fleet{Live: len(live), Settings: len(digests)}, err
	}).WithMasterShards(st.MasterShards))
	reg.MustRegister(metrics.NewOnlineUsers(func(ctx context.Context) (int64, error) {
		if !up.Load() {
			return 0, errConnecting
		}
		return st.Sessions().OnlineUsers(ctx)
	}))
	var apiMetrics http.Handler // /metrics on the API's address, unless it has its own
	if cfg.MetricsAddr == "" {
		apiMetrics = metricsHandler(reg, log)
	} else {
		stopMetrics, err := serveMetrics(cfg.MetricsAddr, cfg.TCPUserTimeout, metricsHandler(reg, log), log)
		if err != nil {
			return err
		}
		defer stopMetrics()
	}

	var keys *api.APIKeys
	if cfg.APIKeysFile != "" {
		if keys, err = api.LoadAPIKeys(cfg.APIKeysFile, log, m); err != nil {
			return err
		}
		go keys.Watch(ctx, api.APIKeysReload)
	}
	auth := &api.Auth{Secret: []byte(cfg.JWTSecret), GuestEnabled: cfg.GuestAuth, Issuer: cfg.JWTIssuer,
		Audience: cfg.JWTAudience, Leeway: cfg.JWTLeeway}
	if cfg.JWTKeysFile != "" {
		keys := &api.KeysFile{Path: cfg.JWTKeysFile, Auth: auth, Log: log, Reloaded: m.KeysReloaded}
		if err := keys.Load(); err != nil {
			return err
		}
		log.Info("JWT keys loaded", "path", cfg.JWTKeysFile, "keys", len(auth.Keys()))
		watch, stop := context.WithCancel(context.Background())
		defer stop()
		go keys.Watch(watch)
	}
	// the taken-over streams' hang-ups, told by the kernel (api.Hangups):
	// closed last, once the HTTP server and the hub have stopped (a
	// deferred call runs after those made later); without it each sweep
	// peeks at every stream's connection
	hangups, err := api.NewHangups()
	if err != nil {
		log.Warn("event streams: no epoll instance for their hang-ups; each sweep peeks at every connection", "err", err)
		hangups = nil
	}
	defer hangups.Close()
	hub := sse.NewHub(sse.Config{Source: st, Lobby: st.Listing(), Users: st.Sessions(), Feed: st.Feed, RoomJSON: api.RoomJSON,
		Heartbeat: cfg.SSEHeartbeat, PresenceTTL: cfg.PresenceTTL, Log: log, Metrics: m, AfterBurst: cfg.afterBurst(log),
		ShutdownSpread: cfg.SSEShutdownSpread})
	// shutdown closes the hub within REALSYNC_SHUTDOWN_TIMEOUT; a return
	// before it (a failed start, a listener that failed) closes it here,
	// within as long
	closeHub := func() {
		ctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
		defer cancel()
		_ = hub.CloseContext(ctx)
	}
	defer func() { closeHub() }()
	mm := cfg.matchmakingConfig(st, m)
	ticketService, err := matchmaking.NewService(mm)
	if err != nil {
		return err
	}
	roomService := rooms.New(rooms.Config{Store: st, Names: rooms.Names{Modes: cfg.Modes, Regions: cfg.Regions},
		Notices: players.Notices{Inbox: st.Sessions()}})
	// every request's context descends from base: a shutdown that cuts
	// the requests still running cancels it first, with api.ErrShutdown as
	// the cause, so they answer 503, not a client's hang-up (499); the
	// requests with an Idempotency-Key, which run on when their client
	// hangs up, end with it too (api.Config.Base)
	base, cut := context.WithCancelCause(context.Background())
	defer cut(nil)
	// those requests are counted while they run on: shutdown waits for
	// them before it closes the store (over HTTP/2 srv.Shutdown does not
	// wait for the handler of a stream its client reset)
	detached := new(api.Detached)
	deadLetters := cfg.webhookSettings.deadLetters(st)
	handler := api.NewHandler(api.Config{
		Rooms:   roomService,
		Direct:  players.NewDirect(st.Sessions(), roomService),
		Lobby:   lobby.New(lobby.Config{Index: st.Listing(), Names: rooms.Names{Modes: cfg.Modes, Regions: cfg.Regions}}),
		Events:  hub,
		Players: players.NewService(st.Sessions()),
		Parties: players.NewParties(st.Sessions()),
		Auth:    auth, APIKeys: keys,
		Ready: func(ctx context.Context) error {
			if !up.Load() {
				return errConnecting
			}
			return st.Ready(ctx)
		},
		Available: up.Load, Spec: realsync.OpenAPI, Demo: web.Demo(), Log: log,
		AdminToken: cfg.AdminToken, Instances: st.Fleet().Instances, DeadLetters: deadLetters,
		Metrics: m, MetricsHandler: apiMetrics,
		RateLimiter: ratelimit.New(ratelimit.Config{Client: st.Client(), Prefix: cfg.KeyPrefix,
			RoomTag:  func(id string) (string, bool) { return st.RoomTag(id) },
			LeaseTTL: cfg.RateLimitLease, Checked: m.RateLimitCheck}),
		RateLimits: cfg.RateLimits, TrustedProxies: cfg.TrustedProxies,
		CORSOrigins: cfg.CORSOrigins, RequestTimeout: cfg.RequestTimeout, Admission: cfg.Admission,
		Idempotency: idemstore.New(st.Base()), Base: base, Detached: detached,
		Tickets: ticketService, BrowseCache: api.NewBrowseCache(cfg.BrowseCacheTTL, m),
		Hangups: hangups, StreamTokens: streamtokens.New(st.Base()), StreamLifetime: cfg.SSEMaxLifetime,
	})
	// No WriteTimeout and no ReadTimeout: both would cut the long-lived
	// event streams (see api's limitBody); the API sets a read deadline on
	// each body, a context and write deadline on each request but streams,
	// and streams bound each write instead (api's streamClient.Send).
	srv := &http.Server{ReadHeaderTimeout: cfg.ReadHeaderTimeout, IdleTimeout: idleTimeout,
		MaxHeaderBytes: api.MaxHeaderBytes, BaseContext: func(net.Listener) context.Context { return base },
		ErrorLog: httpErrorLog(log)}
	if err := cfg.protocolSettings.configure(srv); err != nil {
		return err
	}
	if cfg.TLS() { // (h2c too sets a TLSConfig, of no certificate)
		certificateExpiry(reg, log, srv.TLSConfig.Certificates[0], time.Now())
	}
	// ReadHeaderTimeout does not reach HTTP/2: headerDeadline closes a
	// connection whose first request's headers did not come in time
	srv.Handler = (&headerDeadline{timeout: cfg.ReadHeaderTimeout}).install(srv, handler)
	background, stopBackground := context.WithCancel(context.Background())
	defer stopBackground()
	connected := make(chan error, 1)
	go func() { connected <- connect(background, st, log) }()
	early := false // connected before the port opened
	select {
	case err := <-connected:
		if err != nil {
			return err // a layout mismatch, Redis refusing the URL's settings: no port opens
		}
		early = true
	case <-time.After(listenWait):
	case <-ctx.Done():
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("REALSYNC_ADDR: %w", err) // as REALSYNC_METRICS_ADDR's
	}
	ln = withUserTimeout(ln, cfg.TCPUserTimeout, log) // a client that vanished: its stream ends
	ln, lastSends := gatherHTTP2(srv, ln)             // HTTP/2 connections' writes gathered
	if cfg.PprofAddr != "" {
		stopPprof, err := servePprof(cfg.PprofAddr, log)
		if err != nil {
			ln.Close()
			return err
		}
		defer stopPprof()
	}
	log.Info("listening", "addr", ln.Addr().String(), "tls", cfg.TLS(), "h2c", cfg.H2C, "demo", demoURL(cfg.scheme(), ln.Addr()))
	janitorDone, webhooksDone, matcherDone := make(chan struct{}), make(chan struct{}), make(chan struct{})
	var member *fleet.Member
	// ready joins the instance registry (the listener's address), then
	// serves the routes that need the store and starts the janitor, the
	// webhooks and the matcher
	ready := func() error {
		var err error
		if member, err = joinFleet(background, cfg, st, hub, ln, log); err != nil {
			return err
		}
		log.Info("store: layout", "shards", cfg.Shards, "schema", st.Schema(), "shardTags", st.ShardTagScheme())
		up.Store(true)
		// "ready" once requests are served: tests and scripts wait for it
		log.Info("ready")
		go func() {
			defer close(janitorDone)
			st.RunJanitor(background, hub.Instance(), min(time.Second, cfg.PresenceTTL/3), log)
		}()
		go func() {
			defer close(webhooksDone)
			runWebhooks(background, cfg.webhookSettings, st, deadLetters, hub.Instance(), m, log)
		}()
		go func() {
			defer close(matcherDone)
			runMatcher(background, mm, st, hub.Instance(), log)
		}()
		return nil
	}
	if early { // served once ready: the kernel queues the connections meanwhile
		connected = nil // a nil channel never delivers
		if err := ready(); err != nil {
			ln.Close()
			return err
		}
	}
	if readyAddr != nil {
		readyAddr <- ln.Addr().String()
	}
	served := make(chan error, 1)
	go func() { served <- cfg.serve(srv, ln) }()
wait:
	for {
		select {
		case err := <-served:
			return err
		case err := <-connected:
			if err == nil {
				err = ready()
			}
			if err != nil {
				srv.Close()
				return err
			}
			connected = nil
		case <-ctx.Done():
			break wait
		}
	}
	log.Info("shutting down", "streams", hub.Streams(), "spread", cfg.SSEShutdownSpread.Round(time.Millisecond), "timeout", cfg.ShutdownTimeout)
	stop := func(ctx context.Context) {
		// The janitor stops first, so it takes no lease again; then the
		// instance leaves the registry (the instance list drops it now),
		// and the webhook dispatcher's sends in flight end. All within
		// what is left of the shutdown's time.
		stopBackground()
		if member == nil {
			return
		}
		select {
		case <-janitorDone:
		case <-ctx.Done():
			return
		}
		if err := member.Leave(ctx); err != nil {
			log.Warn("leaving the instance registry", "err", err)
		}
		// the webhook sends in flight end and settle, and the matcher's
		// passes end and it gives its modes' leases up, before the store
		// closes (what is left then is taken over by another instance; a
		// lease not given up keeps its modes from the others for its TTL)
		for _, done := range []chan struct{}{webhooksDone, matcherDone} {
			select {
			case <-done:
			case <-ctx.Done():
				return
			}
		}
	}
	closeHub, closeStore = func() {}, func() {}
	return shutdown(srv, func() { cut(api.ErrShutdown) }, detached.Drain, lastSends, served, hub, stop, st.Close, cfg.ShutdownTimeout, log)
}

// cutGrace is how long shutdown waits past its deadline, once it cut the
// requests that ran on after their client left (api.Detached), for them
// to free their Idempotency-Keys (a Redis round trip each) before it
// closes the store.
const cutGrace = time.Second

// shutdown stops accepting connections, stops the background loops and
// leaves the instance registry, ends every event stream (over the
// hub's ShutdownSpread, each with
// a short jittered retry line, so its client resumes on another instance
// with Last-Event-ID, and its presence lease released: a player whose
// client is not back within the presence debounce is then shown
// player_disconnected, and a user whose personal stream's client is not
// back within it user_offline; one back within it shows nothing), waits for the
// requests in flight, those that run on after their client left for
// their Idempotency-Key among them (drain: srv.Shutdown does not wait for
// them over HTTP/2), the HTTP/2 connections' last writes (lastSends:
// gatherHTTP2; a closed connection sends what its server wrote last
// within a second of its close), and closes the store: all within
// timeout. Past it
// the remaining requests are cut (cutRequests cancels their contexts, so
// they answer 503, and the detached ones free their keys within
// cutGrace), then their connections, and an error says so (exit 1:
// clients saw errors). What else was left running then (the streams'
// lease releases, the registry leave, the store's calls) lapses as a
// killed instance's does: a warning names it.
func shutdown(srv *http.Server, cutRequests func(), drain func(context.Context) error, lastSends func(context.Context) bool, served <-chan error, hub streamsCloser, stopBackground func(context.Context), closeStore func() error, timeout time.Duration, log *slog.Logger) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- srv.Shutdown(ctx) }()
	<-served // Serve returns once the listener is closed
	// Both within the deadline, Redis answering or not: what they could not
	// do by then (streams' presence, the registry entry) lapses, as a
	// killed instance's does, and a warning says so.
	// The background stops (the instance leaves the registry) at once,
	// while the streams end over the hub's spread.
	background := make(chan bool, 1)
	go func() { background <- doneWithin(ctx, func() { stopBackground(ctx) }) }()
	var overran []string
	if err := hub.CloseContext(ctx); err != nil {
		overran = append(overran, "the event streams' close ("+err.Error()+"; their presence leases lapse after REALSYNC_PRESENCE_TTL)")
	}
	if !<-background {
		overran = append(overran, "the janitor's stop and the instance registry's leave")
	}
	err := <-done
	if err != nil {
		cutRequests()
		srv.Close()
	}
	if !lastSends(ctx) {
		overran = append(overran, "the HTTP/2 connections' last writes (their clients not reading)")
	}
	// The requests with an Idempotency-Key whose client left run on, their
	// handlers not waited for by srv.Shutdown over HTTP/2 (a stream the
	// client reset): the store must outlive them, or their answer is
	// neither recorded nor their key freed, and the client's retry gets
	// 409 IDEMPOTENCY_KEY_IN_USE for twice the request timeout. Past the
	// deadline they are cut, and get cutGrace to free their keys.
	cutDetached := false
	if drain(ctx) != nil {
		cutDetached = true
		cutRequests()
		grace, cancelGrace := context.WithTimeout(context.Background(), cutGrace)
		defer cancelGrace()
		if drain(grace) != nil {
			overran = append(overran, "the requests run on for their Idempotency-Key after their client left (cut; some keys held for twice REALSYNC_REQUEST_TIMEOUT)")
		} else {
			overran = append(overran, "the requests run on for their Idempotency-Key after their client left (cut; their keys freed)")
		}
	}
	// The store's close waits for the batches in flight, each up to a
	// reply timeout when Redis does not answer: not past the deadline.
	if !doneWithin(ctx, func() { closeStore() }) {
		overran = append(overran, "the store's close (calls in flight)")
	}
	left := ""
	if len(overran) > 0 {
		left = "; left running: " + strings.Join(overran, ", ")
	}
	if err == nil && cutDetached {
		err = errors.New("requests run on for their Idempotency-Key were cut") // over HTTP/2 srv.Shutdown did not wait for them
	}
	if err != nil {
		return fmt.Errorf("requests still running after REALSYNC_SHUTDOWN_TIMEOUT (%s) were cut: %w%s", timeout, err, left)
	}
	if left != "" {
		// the timeout, when it ended first; otherwise only the hub's own
		// wait for its taken-over streams' ends ran out (sse's closeWait,
		// a few seconds: clients that stopped reading), within it
		first := "REALSYNC_SHUTDOWN_TIMEOUT (" + timeout.String() + ") ended first"
		if ctx.Err() == nil {
			first = "within REALSYNC_SHUTDOWN_TIMEOUT (" + timeout.String() + "), some streams' ends were not waited for"
		}
		log.Warn("shutdown: "+first+left, "overran", len(overran))
	}
	return nil
}

// streamsCloser ends the event streams within ctx (sse.Hub.CloseContext).
type streamsCloser interface {
	CloseContext(ctx context.Context) error
}

// doneWithin runs f and reports whether it returned before ctx ended; f goes
// on in the background otherwise (until the process exits). When ctx
// ended before f started, f gets a moment (closing a store that has
// nothing in flight takes microseconds), so what finishes at once is not
// named as left running.
func doneWithin(ctx context.Context, f func()) bool {
	done := make(chan struct{})
	go func() {
		f()
		close(done)
	}()
	if ctx.Err() != nil {
		select {
		case <-done:
			return true
		case <-time.After(50 * time.Millisecond):
			return false
		}
	}
	select {
	case <-done:
		return true
	case <-ctx.Done():
		select {
		case <-done: // both ready: it did return
			return true
		default:
			return false
		}
	}
}

// storeConfig is the store's part of the configuration.
func storeConfig(cfg Config) store.Config {
	return store.Config{RedisURL: cfg.RedisURL, ClusterAddrs: cfg.ClusterAddrs, ReadFromReplicas: cfg.ReplicaReads, Batch: cfg.RedisBatch,
		Prefix: cfg.KeyPrefix, Shards: cfg.Shards, Stripes: cfg.ModeStripes, PresenceTTL: cfg.PresenceTTL, DisconnectGrace: cfg.DisconnectGrace,
		ConnectGrace:     cfg.ConnectGrace,
		PresenceDebounce: cfg.PresenceDebounce, SessionPolicy: cfg.SessionPolicy, WebhookOutboxLen: cfg.outboxLen(),
		Offline: userlog.Config{MaxLen: cfg.OfflineMax, TTL: cfg.OfflineTTL},
		Quotas:  store.Quotas{RoomsOwned: cfg.MaxRoomsOwned, RoomsJoined: cfg.MaxRoomsJoined, StreamsPerUser: cfg.MaxStreamsPerUser},
		Lifecycle: store.Lifecycle{IdleTimeout: cfg.RoomIdleTimeout, FinishedRetention: cfg.FinishedRetention,
			MaxLifetime: cfg.RoomMaxLifetime, LogIdleTrim: logIdleTrim(cfg.RoomIdleTimeout)}}
}

// logIdleTrim is when an idle room's event log is dropped: after a minute,
// or half the idle timeout when that is shorter.
func logIdleTrim(idle time.Duration) time.Duration {
	if idle > 0 && idle/2 < store.DefaultLogIdleTrim {
		return max(idle/2, time.Millisecond)
	}
	return store.DefaultLogIdleTrim
}

func logStartup(log *slog.Logger, cfg Config, st *store.Store) {
	log.Info("starting", "env", cfg.Env, "version", buildVersion())
	switch {
	case st.Embedded():
		log.Warn("no Redis configured: using the embedded in-process store; data is kept in memory only and lost on exit")
	case len(cfg.ClusterAddrs) > 0:
		log.Info("store: Redis Cluster", "seeds", len(cfg.ClusterAddrs), "shards", cfg.Shards, "readFromReplicas", cfg.ReplicaReads)
	default:
		log.Info("store: standalone Redis", "shards", cfg.Shards)
	}
	if cfg.guestForced {
		log.Warn("REALSYNC_GUEST_AUTH=true in production: anyone can get a token and create rooms")
	}
	for _, w := range productionRisks(cfg) {
		log.Warn(w)
	}
	if cfg.secretGenerated {
		log.Warn("REALSYNC_JWT_SECRET is not set: using a random secret; tokens die with this process and other instances reject them")
	}
}

// productionRisks are the settings a production instance runs with that
// leave it open to abuse, one warning each (a tester's find: only the
// guest tokens were warned of).
func productionRisks(cfg Config) []string {
	if cfg.Env != envProduction {
		return nil
	}
	var out []string
	if cfg.RateLimits.Off {
		out = append(out, "REALSYNC_RATE_LIMITS=off in production: no request is limited, a client can flood every route")
	}
	for _, p := range cfg.TrustedProxies {
		if p.Bits() == 0 {
			out = append(out, "REALSYNC_TRUSTED_PROXIES holds "+p.String()+" in production: any client's X-Forwarded-For is believed, so per-address limits and logs name whom it says")
		}
	}
	return out
}

// servePprof serves the profiler on its own loopback listener, apart from
// the API; an address it cannot listen on ends the start, as the metrics'
// does (a tester's find: it was logged, and the instance ran without it).
// stop ends it.
func servePprof(addr string, log *slog.Logger) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("REALSYNC_PPROF_ADDR: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: bodyDeadline(mux, 10*time.Second), ReadHeaderTimeout: 10 * time.Second, ErrorLog: httpErrorLog(log)}
	return serveApart("pprof", ln, srv, log), nil
}

// bodyDeadline gives a request that has a body d to send it, and closes
// its connection after the answer (net/http reads what is left of a body
// before closing, with no deadline of its own: a client that declared a
// body and sent none held the connection for good). A request without a
// body gets neither: a deadline left on the connection cancels the
// request's context when it passes, and a CPU profile runs 30 s.
func bodyDeadline(h http.Handler, d time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength != 0 {
			w.Header().Set("Connection", "close")
			http.NewResponseController(w).SetReadDeadline(time.Now().Add(d)) //nolint:errcheck // HTTP/1.1 only here
		}
		h.ServeHTTP(w, r)
	})
}

// demoURL is the demo's address to print for a listener on addr serving
// scheme (http or https): one a browser can open, so a listener on every
// interface ([::] or 0.0.0.0) is shown as localhost.
func demoURL(scheme string, addr net.Addr) string {
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return scheme + "://" + addr.String() + "/demo/"
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "localhost"
	}
	return scheme + "://" + net.JoinHostPort(host, port) + "/demo/"
}
