package main

import (
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/realsync/realsync/api"
	"github.com/realsync/realsync/internal/limits"
	"github.com/realsync/realsync/internal/redisurl"
	"github.com/realsync/realsync/store"

	"github.com/realsync/realsync/internal/configfile"
)

// Config is realsyncd's configuration: environment variables, mirrored by
// flags (a flag wins over its variable).
type Config struct {
	Addr           string        // REALSYNC_ADDR, default :8080: [host]:port
	RedisURL       string        // REALSYNC_REDIS_URL
	ClusterAddrs   []string      // REALSYNC_REDIS_CLUSTER_ADDRS, comma-separated host:port
	JWTSecret      string        // REALSYNC_JWT_SECRET; random per start when empty
	GuestAuth      bool          // REALSYNC_GUEST_AUTH, default true (false in production)
	Env            string        // REALSYNC_ENV: development (default) or production
	JWTKeysFile    string        // REALSYNC_JWT_KEYS_FILE: a JWKS file of studio keys; unset: none
	JWTIssuer      string        // REALSYNC_JWT_ISSUER: iss required of studio tokens; unset: not checked
	JWTAudience    string        // REALSYNC_JWT_AUDIENCE: aud required of studio tokens; unset: not checked
	JWTLeeway      time.Duration // REALSYNC_JWT_LEEWAY, default 30s: clock skew allowed on exp, nbf, iat
	Shards         int           // REALSYNC_SHARDS, default 16
	KeyPrefix      string        // REALSYNC_KEY_PREFIX, default rs
	SSEHeartbeat   time.Duration // REALSYNC_SSE_HEARTBEAT, default 15s; 1s..5m
	SSEMaxLifetime time.Duration // REALSYNC_SSE_MAX_LIFETIME, default 30m: a player's stream ends within its upper half (api.Config.StreamLifetime); 0 never, else 1m..24h
	// SSEShutdownSpread: REALSYNC_SSE_SHUTDOWN_SPREAD, default 10s or a
	// third of REALSYNC_SHUTDOWN_TIMEOUT when that is less: a shutdown ends
	// the streams at random times over it (sse.Config.ShutdownSpread); 0
	// at once, else 100ms..10m and at most half of the shutdown timeout
	SSEShutdownSpread time.Duration
	BurstRelease      bool          // REALSYNC_SSE_BURST_RELEASE, default true: a burst of stream openings has its memory given back once over (memory.go)
	GCMinHeap         uint64        // REALSYNC_GC_MIN_HEAP, default 64 MiB: the heap the collector lets grow before collecting however little is live (memory.go); 0 off; not applied with GOGC set
	TCPUserTimeout    time.Duration // REALSYNC_TCP_USER_TIMEOUT, default 30s: TCP_USER_TIMEOUT of the API's and metrics' connections (usertimeout.go); 0 the kernel's, else 1s..1h
	DisconnectGrace   time.Duration // REALSYNC_DISCONNECT_GRACE, default 30s; 0 never, else 100ms..8760h
	ConnectGrace      time.Duration // REALSYNC_CONNECT_GRACE, default 0 (never); else 100ms..8760h: a joined player who opened no stream by then is removed
	PresenceTTL       time.Duration // REALSYNC_PRESENCE_TTL, default 15s; 300ms..10m
	LogLevel          string        // REALSYNC_LOG_LEVEL: debug, info (default), warn, error
	PprofAddr         string        // REALSYNC_PPROF_ADDR: loopback address for net/http/pprof; unset: off
	MetricsAddr       string        // REALSYNC_METRICS_ADDR: own address for GET /metrics; unset: on Addr
	LogFormat         string        // REALSYNC_LOG_FORMAT: text (default) or json
	// Room lifecycle (the janitor closes rooms; 0 switches a rule off, else
	// 100ms..8760h).
	RoomIdleTimeout   time.Duration  // REALSYNC_ROOM_IDLE_TIMEOUT, default 30m
	FinishedRetention time.Duration  // REALSYNC_FINISHED_RETENTION, default 10m
	RoomMaxLifetime   time.Duration  // REALSYNC_ROOM_MAX_LIFETIME, default 0 (none)
	AdminToken        string         // REALSYNC_ADMIN_TOKEN: bearer token of /v1/admin routes, ≥ 32 characters; unset: no admin routes
	AdvertiseAddr     string         // REALSYNC_ADVERTISE_ADDR: host:port in the instance registry; unset: from the listener
	ShutdownTimeout   time.Duration  // REALSYNC_SHUTDOWN_TIMEOUT, default 30s: SIGTERM to exit, at most (and cutGrace past it when requests it cut free their Idempotency-Keys); 1s..1h
	quotaSettings                    // per-user limits and the presence debounce (config_quotas.go)
	playerSettings                   // REALSYNC_SESSION_POLICY: personal streams (config_players.go)
	webhookSettings                  // REALSYNC_WEBHOOKS_FILE, REALSYNC_WEBHOOK_MAX_ATTEMPTS, _TIMEOUT, _BACKOFF (config_webhooks.go)
	matchSettings                    // REALSYNC_MATCHMAKING_FILE (config_matchmaking.go)
	protocolSettings                 // REALSYNC_TLS_CERT, REALSYNC_TLS_KEY, REALSYNC_H2C: TLS and HTTP/2 (tls.go)
	APIKeysFile       string         // REALSYNC_API_KEYS_FILE: server credentials (api.ParseAPIKeys), reloaded on change; unset: none
	RateLimits        limits.Set     // REALSYNC_RATE_LIMITS: off, or overrides of limits.Defaults
	RateLimitLease    time.Duration  // REALSYNC_RATE_LIMIT_LEASE, default 1s: how long an instance may count requests it took from a user's or address's counter ahead; 0 never
	TrustedProxies    []netip.Prefix // REALSYNC_TRUSTED_PROXIES: peers whose X-Forwarded-For names the client
	// Hardening (hardening.go).
	Modes          []string      // REALSYNC_MODES: allowed modes; unset: any name of the documented form
	Regions        []string      // REALSYNC_REGIONS: allowed regions; unset: any name of the documented form
	CORSOrigins    []string      // REALSYNC_CORS_ORIGINS: origins allowed by CORS ("*" alone: any); unset: no CORS headers
	RequestTimeout time.Duration // REALSYNC_REQUEST_TIMEOUT, default 10s: body read and answer of every request but streams
	// ReadHeaderTimeout: REALSYNC_READ_HEADER_TIMEOUT, default 10s; 1s..5m:
	// a connection's first request's headers (TLS handshake and HTTP/2
	// preface included) within it of the accept, and each later HTTP/1.1
	// request's, else the connection is closed (headerdeadline.go)
	ReadHeaderTimeout time.Duration
	Admission         api.Admission // REALSYNC_MAX_IN_FLIGHT (0: none), REALSYNC_IN_FLIGHT_WAIT (500ms): requests in flight, then 503 OVERLOADED

	// ReplicaReads: where a Cluster's browsing reads go (store.ReplicaReads).
	ReplicaReads store.ReplicaReads // REALSYNC_REDIS_READ_FROM_REPLICAS: off (default), on, random or latency

	batchSettings // REALSYNC_REDIS_BATCH_WINDOW: script runs per node in one pipeline (config_batch.go)

	browseSettings // REALSYNC_BROWSE_CACHE_TTL: room lists and lobby stats kept a while (config_browse.go)

	stripeSettings // REALSYNC_MODE_STRIPES: a (mode, region) over K shards (config_stripes.go)

	secretGenerated bool
	guestForced     bool // REALSYNC_GUEST_AUTH=true in production
}

// Deployment environments (REALSYNC_ENV).
const (
	envDevelopment = "development"
	envProduction  = "production"
)

// minProductionSecret is the shortest REALSYNC_JWT_SECRET accepted in
// production: 32 characters of a random hex string are 128 bits.
const minProductionSecret = 32

// secretFlags are the flags whose value may hold a secret (a Redis URL
// its password, a seed given by mistake as user:password@host).
var secretFlags = []string{"jwt-secret", "admin-token", "redis-url", "redis-cluster-addrs"}

// hideSecrets keeps secretFlags' values out of the usage that -h, an
// unknown flag or a flag without its value print: each flag's default
// shown there is its variable's value (a tester's find: the JWT secret,
// the admin token and a Redis password were printed).
func hideSecrets(fs *flag.FlagSet) {
	for _, name := range secretFlags {
		if f := fs.Lookup(name); f != nil && f.DefValue != "" {
			f.DefValue = "(set, not shown)"
		}
	}
}

// ParseConfig reads the environment through getenv and the flags in args.
// Every bad value is reported, naming its variable.
func ParseConfig(getenv func(string) string, args []string) (Config, error) {
	return parseConfig(getenv, args, nil)
}

// parseConfig is ParseConfig; more, when set, adds a subcommand's own flags.
func parseConfig(getenv func(string) string, args []string, more func(*flag.FlagSet)) (Config, error) {
	env := func(k, def string) string {
		if v := getenv(k); v != "" {
			return v
		}
		return def
	}
	var c Config
	var envName, guest, leeway string
	var replicaReads string
	var cluster, shards, heartbeat, maxLifetime, spread, userTimeout, grace, connectGrace, presence, idle, retention, lifetime, burstRelease, gcMinHeap, shutdown, headerTimeout, rateLimits, rateLease, proxies string
	fs := flag.NewFlagSet("realsyncd", flag.ContinueOnError)
	fs.StringVar(&c.Addr, "addr", env("REALSYNC_ADDR", ":8080"), "listen address (REALSYNC_ADDR)")
	fs.StringVar(&c.RedisURL, "redis-url", env("REALSYNC_REDIS_URL", ""), "standalone Redis URL (REALSYNC_REDIS_URL); none: embedded store")
	fs.StringVar(&cluster, "redis-cluster-addrs", env("REALSYNC_REDIS_CLUSTER_ADDRS", ""), "Cluster seed nodes, comma-separated (REALSYNC_REDIS_CLUSTER_ADDRS)")
	fs.StringVar(&replicaReads, "redis-read-from-replicas", env("REALSYNC_REDIS_READ_FROM_REPLICAS", "off"), "Cluster only: off, on (replicas), random (master or replicas) or latency (nearest node) for list and stats reads (REALSYNC_REDIS_READ_FROM_REPLICAS)")
	fs.StringVar(&c.JWTSecret, "jwt-secret", env("REALSYNC_JWT_SECRET", ""), "HS256 secret shared by all instances (REALSYNC_JWT_SECRET)")
	fs.StringVar(&guest, "guest-auth", env("REALSYNC_GUEST_AUTH", ""), "allow guest tokens (REALSYNC_GUEST_AUTH); default true, false in production")
	fs.StringVar(&envName, "env", env("REALSYNC_ENV", envDevelopment), "development or production (REALSYNC_ENV)")
	fs.StringVar(&c.JWTKeysFile, "jwt-keys-file", env("REALSYNC_JWT_KEYS_FILE", ""), "JWKS file of the keys verifying studio tokens, reloaded on change (REALSYNC_JWT_KEYS_FILE)")
	fs.StringVar(&c.JWTIssuer, "jwt-issuer", env("REALSYNC_JWT_ISSUER", ""), "iss required of studio tokens (REALSYNC_JWT_ISSUER)")
	fs.StringVar(&c.JWTAudience, "jwt-audience", env("REALSYNC_JWT_AUDIENCE", ""), "aud required of studio tokens (REALSYNC_JWT_AUDIENCE)")
	fs.StringVar(&leeway, "jwt-leeway", env("REALSYNC_JWT_LEEWAY", "30s"), "clock skew allowed on token times (REALSYNC_JWT_LEEWAY)")
	fs.StringVar(&shards, "shards", env("REALSYNC_SHARDS", "16"), "hash-tag shards, fixed for a deployment (REALSYNC_SHARDS)")
	fs.StringVar(&c.KeyPrefix, "key-prefix", env("REALSYNC_KEY_PREFIX", "rs"), "prefix of every Redis key (REALSYNC_KEY_PREFIX)")
	fs.StringVar(&heartbeat, "sse-heartbeat", env("REALSYNC_SSE_HEARTBEAT", "15s"), "SSE comment interval (REALSYNC_SSE_HEARTBEAT)")
	fs.StringVar(&maxLifetime, "sse-max-lifetime", env("REALSYNC_SSE_MAX_LIFETIME", "30m"), "longest life of a player's event stream, each ending at a random time within its upper half (REALSYNC_SSE_MAX_LIFETIME; 0 never)")
	fs.StringVar(&spread, "sse-shutdown-spread", env("REALSYNC_SSE_SHUTDOWN_SPREAD", ""), "on SIGTERM, end the event streams at random times over this long, not at once (REALSYNC_SSE_SHUTDOWN_SPREAD; unset: 10s, or a third of the shutdown timeout when that is less; 0 at once)")
	fs.StringVar(&burstRelease, "sse-burst-release", env("REALSYNC_SSE_BURST_RELEASE", "true"), "give the memory of a burst of stream openings back to the OS once it is over (REALSYNC_SSE_BURST_RELEASE)")
	fs.StringVar(&gcMinHeap, "gc-min-heap", env("REALSYNC_GC_MIN_HEAP", "64MiB"), "heap size the garbage collector lets the heap grow to before it collects, however little is live, such as 64MiB; 0: Go's default alone; not applied when GOGC is set (REALSYNC_GC_MIN_HEAP)")
	fs.StringVar(&userTimeout, "tcp-user-timeout", env("REALSYNC_TCP_USER_TIMEOUT", "30s"), "longest time data written to a client may stay unacknowledged before its connection is dropped (Linux TCP_USER_TIMEOUT); 0: the kernel's (REALSYNC_TCP_USER_TIMEOUT)")
	fs.StringVar(&grace, "disconnect-grace", env("REALSYNC_DISCONNECT_GRACE", "30s"), "removal delay of disconnected players, 0 never (REALSYNC_DISCONNECT_GRACE)")
	fs.StringVar(&connectGrace, "connect-grace", env("REALSYNC_CONNECT_GRACE", "0"), "removal delay of joined players who never open a stream, 0 never (REALSYNC_CONNECT_GRACE)")
	fs.StringVar(&presence, "presence-ttl", env("REALSYNC_PRESENCE_TTL", "15s"), "lifetime of a stream's presence lease, renewed every third (REALSYNC_PRESENCE_TTL)")
	fs.StringVar(&idle, "room-idle-timeout", env("REALSYNC_ROOM_IDLE_TIMEOUT", "30m"), "close rooms with no mutation and no stream for this long, 0 never (REALSYNC_ROOM_IDLE_TIMEOUT)")
	fs.StringVar(&retention, "finished-retention", env("REALSYNC_FINISHED_RETENTION", "10m"), "close finished rooms this long after they finished, 0 never (REALSYNC_FINISHED_RETENTION)")
	fs.StringVar(&lifetime, "room-max-lifetime", env("REALSYNC_ROOM_MAX_LIFETIME", "0"), "close rooms this long after their creation, 0 never (REALSYNC_ROOM_MAX_LIFETIME)")
	fs.StringVar(&c.PprofAddr, "pprof-addr", env("REALSYNC_PPROF_ADDR", ""), "serve net/http/pprof on this loopback address (REALSYNC_PPROF_ADDR)")
	fs.StringVar(&c.AdminToken, "admin-token", env("REALSYNC_ADMIN_TOKEN", ""), "bearer token of the /v1/admin routes, at least 32 characters; unset: no admin routes (REALSYNC_ADMIN_TOKEN)")
	fs.StringVar(&c.AdvertiseAddr, "advertise-addr", env("REALSYNC_ADVERTISE_ADDR", ""), "host:port this instance is reached at, shown in the instance registry (REALSYNC_ADVERTISE_ADDR)")
	fs.StringVar(&c.LogLevel, "log-level", env("REALSYNC_LOG_LEVEL", "info"), "debug, info, warn or error (REALSYNC_LOG_LEVEL)")
	fs.StringVar(&c.MetricsAddr, "metrics-addr", env("REALSYNC_METRICS_ADDR", ""), "serve GET /metrics on this address instead of the API's (REALSYNC_METRICS_ADDR)")
	fs.StringVar(&c.LogFormat, "log-format", env("REALSYNC_LOG_FORMAT", "text"), "text or json (REALSYNC_LOG_FORMAT)")
	fs.StringVar(&headerTimeout, "read-header-timeout", env("REALSYNC_READ_HEADER_TIMEOUT", "10s"), "time a connection has to send its first request's headers (TLS handshake, HTTP/2 preface included), and each later HTTP/1.1 request its own, before it is closed (REALSYNC_READ_HEADER_TIMEOUT)")
	fs.StringVar(&shutdown, "shutdown-timeout", env("REALSYNC_SHUTDOWN_TIMEOUT", "30s"), "longest time from SIGTERM to exit (REALSYNC_SHUTDOWN_TIMEOUT)")
	quotas := quotaFlags(fs, env)
	protocols := protocolFlags(fs, env)
	batching := batchFlags(fs, env)
	browsing := browseFlags(fs, env)
	striping := stripeFlags(fs, env)
	playerOpts := playerFlags(fs, env)
	webhooks := webhookFlags(fs, env)
	matchmakingOpts := matchmakingFlags(fs, env)
	fs.StringVar(&c.APIKeysFile, "api-keys-file", env("REALSYNC_API_KEYS_FILE", ""), "file of API keys (id, SHA-256 hash, scopes), reloaded on change; unset: none (REALSYNC_API_KEYS_FILE)")
	fs.StringVar(&rateLimits, "rate-limits", env("REALSYNC_RATE_LIMITS", ""), "off, or overrides such as create=10/m,join.ip=20/s:burst=100 (REALSYNC_RATE_LIMITS)")
	fs.StringVar(&rateLease, "rate-limit-lease", env("REALSYNC_RATE_LIMIT_LEASE", "1s"), "how long an instance may count requests it took from a user's or address's counter ahead, 100ms to 10s; 0: every request counted in Redis (REALSYNC_RATE_LIMIT_LEASE)")
	fs.StringVar(&proxies, "trusted-proxies", env("REALSYNC_TRUSTED_PROXIES", ""), "CIDRs of proxies whose X-Forwarded-For is believed, comma-separated (REALSYNC_TRUSTED_PROXIES)")
	var h hardening
	fs.StringVar(&h.modes, "modes", env("REALSYNC_MODES", ""), "allowed modes, comma-separated; unset: any (REALSYNC_MODES)")
	fs.StringVar(&h.regions, "regions", env("REALSYNC_REGIONS", ""), "allowed regions, comma-separated; unset: any (REALSYNC_REGIONS)")
	fs.StringVar(&h.cors, "cors-origins", env("REALSYNC_CORS_ORIGINS", ""), "origins allowed by CORS, comma-separated, or *; unset: no CORS (REALSYNC_CORS_ORIGINS)")
	fs.StringVar(&h.requestTimeout, "request-timeout", env("REALSYNC_REQUEST_TIMEOUT", api.DefaultRequestTimeout.String()), "deadline of a request's body and answer, streams excepted (REALSYNC_REQUEST_TIMEOUT)")
	fs.StringVar(&h.maxInFlight, "max-in-flight", env("REALSYNC_MAX_IN_FLIGHT", "0"), "requests an instance works on at once, streams and probes excepted; past it 503 OVERLOADED; 0: no bound (REALSYNC_MAX_IN_FLIGHT)")
	fs.StringVar(&h.inFlightWait, "in-flight-wait", env("REALSYNC_IN_FLIGHT_WAIT", api.DefaultInFlightWait.String()), "how long a request past REALSYNC_MAX_IN_FLIGHT waits for a place before 503 OVERLOADED (REALSYNC_IN_FLIGHT_WAIT)")
	if more != nil {
		more(fs)
	}
	hideSecrets(fs)
	if err := fs.Parse(args); err != nil {
		return Config{}, err
	}
	var errs []string
	bad := func(name, msg string) { errs = append(errs, name+": "+msg) }
	if fs.NArg() > 0 {
		// flag stops at the first word that is not a flag: what follows
		// ("serve -shards 8") would be ignored, silently
		bad("command line", fmt.Sprintf("unexpected argument %q: realsyncd takes flags only (-name value), and migrate or apikey as the first word", fs.Arg(0)))
	}
	if !validAddr(c.Addr) {
		bad("REALSYNC_ADDR", "must be host:port or :port with a port 0..65535, such as :8080 or 127.0.0.1:8080")
	}
	c.quotaSettings = quotas(bad)
	c.protocolSettings = protocols(bad)
	c.batchSettings = batching(bad)
	c.browseSettings = browsing(bad)
	c.playerSettings = playerOpts(bad)
	c.webhookSettings = webhooks(bad)
	switch {
	case strings.Contains(cluster, "@"):
		// a user name and password given by mistake: split on "," first, a
		// "," of the password left a part of it in a seed's error (a
		// reviewer's find); none is shown
		bad("REALSYNC_REDIS_CLUSTER_ADDRS", "holds an @ (a user name or password? not shown): give host:port seeds only, comma-separated, such as redis-1:6379")
	case cluster != "":
		for _, a := range strings.Split(cluster, ",") {
			switch a = strings.TrimSpace(a); {
			case a == "":
			case !validSeed(a):
				// redacted: a URL given by mistake may hold a password
				bad("REALSYNC_REDIS_CLUSTER_ADDRS", fmt.Sprintf("%q must be host:port, such as redis-1:6379 (no redis://, no password)", redisurl.Redact(a)))
			default:
				c.ClusterAddrs = append(c.ClusterAddrs, a)
			}
		}
		if len(c.ClusterAddrs) == 0 && strings.Trim(cluster, ", \t") == "" {
			// set but naming nothing: a mistake, whatever else would serve
			bad("REALSYNC_REDIS_CLUSTER_ADDRS", "names no seed: give host:port seeds, comma-separated, such as redis-1:6379,redis-2:6379, or leave it unset")
		}
	}
	switch {
	case c.RedisURL == "":
	case !strings.HasPrefix(c.RedisURL, "redis://") && !strings.HasPrefix(c.RedisURL, "rediss://"):
		bad("REALSYNC_REDIS_URL", "must start with redis:// or rediss://")
	default:
		// never echo the password: redisurl hides the user information
		if _, err := redisurl.Parse(c.RedisURL); err != nil {
			bad("REALSYNC_REDIS_URL", err.Error())
		}
	}
	var err error
	if c.ReplicaReads, err = store.ParseReplicaReads(replicaReads); err != nil {
		bad("REALSYNC_REDIS_READ_FROM_REPLICAS", err.Error())
	} else if c.ReplicaReads != store.ReplicasOff && len(c.ClusterAddrs) == 0 {
		bad("REALSYNC_REDIS_READ_FROM_REPLICAS", "needs REALSYNC_REDIS_CLUSTER_ADDRS: replicas are read on a Redis Cluster only")
	}
	if c.BurstRelease, err = strconv.ParseBool(burstRelease); err != nil {
		bad("REALSYNC_SSE_BURST_RELEASE", "must be true or false")
	}
	if c.GCMinHeap, err = parseHeapSize(gcMinHeap); err != nil {
		bad("REALSYNC_GC_MIN_HEAP", err.Error())
	}
	c.Env = envName
	if c.Env != envDevelopment && c.Env != envProduction {
		bad("REALSYNC_ENV", "must be development or production")
	}
	c.matchSettings = matchmakingOpts(c.Env == envProduction, bad)
	switch c.GuestAuth, err = strconv.ParseBool(guest); {
	case guest == "":
		c.GuestAuth = c.Env != envProduction
	case err != nil:
		bad("REALSYNC_GUEST_AUTH", "must be true or false")
	default:
		c.guestForced = c.GuestAuth && c.Env == envProduction
	}
	if c.Env == envProduction && (len(c.JWTSecret) < minProductionSecret || distinct(c.JWTSecret) < minDistinct) {
		// never echo the value: it is a secret
		bad("REALSYNC_JWT_SECRET", fmt.Sprintf("is required in production, at least %d characters, %d of them different, the same on every instance (e.g. openssl rand -hex 32)", minProductionSecret, minDistinct))
	}
	if c.Env == envProduction && c.RedisURL == "" && len(c.ClusterAddrs) == 0 {
		// a blanked Secret or a lone comma is as good as unset: the
		// embedded store would serve, each instance apart, losing all on exit
		bad("REALSYNC_REDIS_URL or REALSYNC_REDIS_CLUSTER_ADDRS", "one is required in production (neither names a Redis): "+
			"the embedded in-memory store, used when both are unset, is for trying RealSync only (one instance, data lost on exit)")
	}
	if c.JWTLeeway, err = time.ParseDuration(leeway); err != nil || c.JWTLeeway < 0 || c.JWTLeeway > 5*time.Minute {
		bad("REALSYNC_JWT_LEEWAY", "must be a duration from 0 to 5m such as 30s")
	}
	if c.JWTKeysFile != "" {
		// Run loads it again and watches it; checked here to stop with exit
		// 2 naming the variable
		if data, err := configfile.Read(c.JWTKeysFile); err != nil {
			bad("REALSYNC_JWT_KEYS_FILE", err.Error())
		} else if _, err := api.ParseJWKS(data); err != nil {
			bad("REALSYNC_JWT_KEYS_FILE", c.JWTKeysFile+": "+err.Error())
		}
	}
	if c.JWTKeysFile == "" && (c.JWTIssuer != "" || c.JWTAudience != "") {
		bad("REALSYNC_JWT_KEYS_FILE", "is required with REALSYNC_JWT_ISSUER or REALSYNC_JWT_AUDIENCE (they apply to studio tokens)")
	}
	if c.Shards, err = strconv.Atoi(shards); err != nil || c.Shards < 1 || c.Shards > store.MaxShards {
		bad("REALSYNC_SHARDS", fmt.Sprintf("must be an integer 1..%d", store.MaxShards))
	}
	c.stripeSettings = striping(c.Shards, bad)
	// Each duration within a range: a tiny one would make a ticker panic
	// (the SSE sweep runs every heartbeat/2, the lease renewal every
	// presence TTL/3) or spin a core, or round to 0 ms in Redis, which
	// means "never" to the janitor's scripts.
	for _, d := range []struct {
		name    string
		in      string
		out     *time.Duration
		lo, hi  time.Duration
		zeroOff bool // 0 also accepted: the rule is off
	}{
		{"REALSYNC_SSE_HEARTBEAT", heartbeat, &c.SSEHeartbeat, minHeartbeat, maxHeartbeat, false},
		{"REALSYNC_SSE_MAX_LIFETIME", maxLifetime, &c.SSEMaxLifetime, minStreamLife, maxStreamLife, true},
		{"REALSYNC_TCP_USER_TIMEOUT", userTimeout, &c.TCPUserTimeout, minUserTimeout, maxUserTimeout, true},
		{"REALSYNC_PRESENCE_TTL", presence, &c.PresenceTTL, minPresenceTTL, maxPresenceTTL, false},
		{"REALSYNC_DISCONNECT_GRACE", grace, &c.DisconnectGrace, minRule, maxRule, true},
		{"REALSYNC_CONNECT_GRACE", connectGrace, &c.ConnectGrace, minRule, maxRule, true},
		{"REALSYNC_ROOM_IDLE_TIMEOUT", idle, &c.RoomIdleTimeout, minRule, maxRule, true},
		{"REALSYNC_FINISHED_RETENTION", retention, &c.FinishedRetention, minRule, maxRule, true},
		{"REALSYNC_ROOM_MAX_LIFETIME", lifetime, &c.RoomMaxLifetime, minRule, maxRule, true},
		{"REALSYNC_SHUTDOWN_TIMEOUT", shutdown, &c.ShutdownTimeout, minShutdown, maxShutdown, false},
		{"REALSYNC_READ_HEADER_TIMEOUT", headerTimeout, &c.ReadHeaderTimeout, minHeaderTimeout, maxHeaderTimeout, false},
	} {
		*d.out, err = time.ParseDuration(d.in)
		switch {
		case err == nil && *d.out == 0 && d.zeroOff:
		case err != nil || *d.out < d.lo || *d.out > d.hi:
			msg := fmt.Sprintf("must be a duration from %s to %s", fmtDuration(d.lo), fmtDuration(d.hi))
			if d.zeroOff {
				msg = "must be 0 (" + zeroMeans(d.name) + ") or a duration from " + fmtDuration(d.lo) + " to " + fmtDuration(d.hi)
			}
			bad(d.name, fmt.Sprintf("%s, such as %s; got %q", msg, durationDefaults[d.name], d.in))
		}
	}
	c.SSEShutdownSpread = shutdownSpread(spread, c.ShutdownTimeout, bad)
	if c.KeyPrefix == "" || strings.ContainsAny(c.KeyPrefix, "{}: \t\n") {
		bad("REALSYNC_KEY_PREFIX", "must be non-empty without braces, colons or spaces")
	}
	if c.PprofAddr != "" && !validLoopback(c.PprofAddr) {
		bad("REALSYNC_PPROF_ADDR", "must be a loopback address with a port 1..65535, such as 127.0.0.1:6060, [::1]:6060 or localhost:6060")
	}
	if c.AdminToken != "" && !validAdminToken(c.AdminToken) {
		// never echo the value: it is a secret
		bad("REALSYNC_ADMIN_TOKEN", fmt.Sprintf("must be at least %d visible ASCII characters without spaces, %d of them different (e.g. openssl rand -hex 32)", minAdminToken, minDistinct))
	}
	if c.AdvertiseAddr != "" && !validHostPort(c.AdvertiseAddr) {
		bad("REALSYNC_ADVERTISE_ADDR", "must be host:port such as rs-1.internal:8080")
	}
	if _, ok := logLevels[c.LogLevel]; !ok {
		bad("REALSYNC_LOG_LEVEL", "must be debug, info, warn or error")
	}
	if c.LogFormat != "text" && c.LogFormat != "json" {
		bad("REALSYNC_LOG_FORMAT", "must be text or json")
	}
	if c.MetricsAddr != "" && !validAddr(c.MetricsAddr) {
		bad("REALSYNC_METRICS_ADDR", "must be host:port or :port, such as :9090")
	}
	if c.APIKeysFile != "" {
		if data, err := configfile.Read(c.APIKeysFile); err != nil {
			bad("REALSYNC_API_KEYS_FILE", err.Error())
		} else if _, err := api.ParseAPIKeys(data); err != nil {
			bad("REALSYNC_API_KEYS_FILE", c.APIKeysFile+": "+err.Error())
		}
	}
	if c.RateLimits, err = limits.Parse(rateLimits); err != nil {
		bad("REALSYNC_RATE_LIMITS", err.Error())
	}
	if c.RateLimitLease, err = time.ParseDuration(rateLease); err != nil || c.RateLimitLease < 0 || c.RateLimitLease > 10*time.Second ||
		(c.RateLimitLease > 0 && c.RateLimitLease < 100*time.Millisecond) {
		bad("REALSYNC_RATE_LIMIT_LEASE", "must be 0 (no leases) or a duration from 100ms to 10s, such as 1s")
	}
	if c.TrustedProxies, err = parseProxies(proxies); err != nil {
		bad("REALSYNC_TRUSTED_PROXIES", err.Error())
	}
	parseHardening(h, &c, bad)
	c.checkRuleModes(bad)
	c.checkStripeModes(bad)
	if len(errs) > 0 {
		return Config{}, fmt.Errorf("bad configuration:\n  %s", strings.Join(errs, "\n  "))
	}
	if c.JWTSecret == "" {
		b := make([]byte, 32)
		rand.Read(b)
		c.JWTSecret, c.secretGenerated = hex.EncodeToString(b), true
	}
	return c, nil
}

// The ranges of the duration settings.
const (
	minHeartbeat, maxHeartbeat     = time.Second, 5 * time.Minute
	minStreamLife, maxStreamLife   = time.Minute, 24 * time.Hour
	minPresenceTTL, maxPresenceTTL = 300 * time.Millisecond, 10 * time.Minute
	// the room rules: disconnect grace, idle timeout, finished retention,
	// lifetime (0: off); a year at most
	minRule, maxRule         = 100 * time.Millisecond, 8760 * time.Hour
	minShutdown, maxShutdown = time.Second, time.Hour
	// TCP_USER_TIMEOUT: below a second a brief stall (a phone's radio
	// waking) would cut live connections
	minUserTimeout, maxUserTimeout = time.Second, time.Hour
	// the headers' deadline: a second at least for a slow mobile link's
	// TLS handshake; past minutes it defends against nothing
	minHeaderTimeout, maxHeaderTimeout = time.Second, 5 * time.Minute
)

// The shutdown's spread of the streams' ends (REALSYNC_SSE_SHUTDOWN_SPREAD).
const (
	defaultSpread        = 10 * time.Second
	minSpread, maxSpread = 100 * time.Millisecond, 10 * time.Minute
)

// shutdownSpread is REALSYNC_SSE_SHUTDOWN_SPREAD, in: as set (0, or
// minSpread..maxSpread and at most half of the shutdown's timeout, so that
// the rest of a shutdown, the streams' lease releases and the requests in
// flight, keeps the other half), or when unset defaultSpread, or a third of
// timeout when that is less (a short REALSYNC_SHUTDOWN_TIMEOUT set alone
// stays valid).
func shutdownSpread(in string, timeout time.Duration, bad func(name, msg string)) time.Duration {
	if in == "" {
		return min(defaultSpread, timeout/3)
	}
	d, err := time.ParseDuration(in)
	switch {
	case err == nil && d == 0:
	case err != nil || d < minSpread || d > maxSpread:
		bad("REALSYNC_SSE_SHUTDOWN_SPREAD", fmt.Sprintf("must be 0 (every stream ended at once) or a duration from %s to %s, such as %s; got %q",
			fmtDuration(minSpread), fmtDuration(maxSpread), fmtDuration(defaultSpread), in))
	case timeout > 0 && d > timeout/2:
		bad("REALSYNC_SSE_SHUTDOWN_SPREAD", fmt.Sprintf("%s is more than half of REALSYNC_SHUTDOWN_TIMEOUT (%s), whose other half the rest of a shutdown needs: set it to %s at most, or raise REALSYNC_SHUTDOWN_TIMEOUT",
			fmtDuration(d), fmtDuration(timeout), fmtDuration(timeout/2)))
	}
	return d
}

// zeroMeans says what 0 means for a duration setting that accepts it.
func zeroMeans(name string) string {
	if name == "REALSYNC_TCP_USER_TIMEOUT" {
		return "the kernel's"
	}
	return "never"
}

// durationDefaults are the defaults shown as examples in range errors.
var durationDefaults = map[string]string{"REALSYNC_SSE_HEARTBEAT": "15s", "REALSYNC_SSE_MAX_LIFETIME": "30m", "REALSYNC_TCP_USER_TIMEOUT": "30s", "REALSYNC_PRESENCE_TTL": "15s",
	"REALSYNC_DISCONNECT_GRACE": "30s", "REALSYNC_CONNECT_GRACE": "15s", "REALSYNC_ROOM_IDLE_TIMEOUT": "30m", "REALSYNC_FINISHED_RETENTION": "10m",
	"REALSYNC_ROOM_MAX_LIFETIME": "24h", "REALSYNC_SHUTDOWN_TIMEOUT": "30s", "REALSYNC_READ_HEADER_TIMEOUT": "10s"}

// fmtDuration writes d as an operator would: 5m, 8760h, 300ms.
func fmtDuration(d time.Duration) string {
	s := d.String() // 5m0s, 8760h0m0s
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}

// parseProxies reads comma-separated CIDRs ("10.0.0.0/8") or addresses
// (one host: /32, /128). An address with an IPv6 zone (fe80::1%eth0) is
// refused: peers are compared without theirs, so it would be believed on
// every interface (a reviewer's find: dropping the zone widened the
// trust). An IPv4-mapped IPv6 one (::ffff:10.0.0.0/104) is
// its IPv4 CIDR, as peers are compared unmapped: kept mapped it was
// accepted and never matched (an abuse tester's find: every client behind
// the proxy on the proxy's own rate limits); one shorter than /96 spans
// more than the mapped addresses and is refused.
func parseProxies(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item == "" {
			continue
		}
		p, err := netip.ParsePrefix(item)
		if err != nil {
			a, aerr := netip.ParseAddr(item)
			if aerr != nil {
				return nil, fmt.Errorf("%q is not a CIDR such as 10.0.0.0/8 or an address", item)
			}
			if a.Zone() != "" {
				return nil, fmt.Errorf("%q: a zone is not taken (peers are compared without theirs, on every interface): give the address or CIDR without it", item)
			}
			a = a.Unmap()
			p = netip.PrefixFrom(a, a.BitLen())
		}
		if p.Addr().Is4In6() {
			if p.Bits() < 96 {
				return nil, fmt.Errorf("%q: an IPv4-mapped CIDR must be /96 or longer (write the IPv4 CIDR)", item)
			}
			p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// minAdminToken is the shortest admin token accepted: 32 characters of a
// random hex string are 128 bits.
const minAdminToken = 32

// minDistinct is the fewest different bytes of a production JWT secret or
// an admin token: 32 random hex characters have about 14, and a value of
// one character repeated (32 spaces, a tester's find) passed the length
// alone.
const minDistinct = 8

// distinct counts the different bytes of s.
func distinct(s string) int {
	var seen [256]bool
	n := 0
	for i := 0; i < len(s); i++ {
		if !seen[s[i]] {
			seen[s[i]] = true
			n++
		}
	}
	return n
}

// validAdminToken: at least minAdminToken visible ASCII characters,
// minDistinct of them different (a
// bearer token's spaces would be trimmed, and other bytes garbled by
// proxies).
func validAdminToken(t string) bool {
	if len(t) < minAdminToken || distinct(t) < minDistinct {
		return false
	}
	for i := 0; i < len(t); i++ {
		if t[i] <= ' ' || t[i] > '~' {
			return false
		}
	}
	return true
}

// validSeed reports whether a is a Cluster seed node: host:port, the
// host a name or an IP (no scheme, no user information, no path).
func validSeed(a string) bool {
	host, _, err := net.SplitHostPort(a)
	return err == nil && validHostPort(a) && !strings.ContainsAny(host, "/@?#") && !strings.Contains(a, "://")
}

// validLoopback reports whether addr is host:port on a loopback
// interface: localhost, 127.0.0.0/8 or ::1, port 1..65535.
func validLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil || !validHostPort(addr) {
		return false
	}
	ip, err := netip.ParseAddr(host)
	return host == "localhost" || (err == nil && ip.IsLoopback())
}

func validHostPort(a string) bool {
	host, port, err := net.SplitHostPort(a)
	n, ok := portNumber(port)
	return err == nil && host != "" && ok && n >= 1 && n <= 65535
}

// portNumber reads a port of 1 to 5 digits alone: strconv.Atoi also takes
// a sign ("+80", "-0": a tester's find, accepted and registered as given).
func portNumber(port string) (int, bool) {
	if port == "" || len(port) > 5 || strings.TrimLeft(port, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.Atoi(port)
	return n, err == nil
}

// validAddr reports whether addr is a listen address: [host]:port.
func validAddr(addr string) bool {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	n, ok := portNumber(port)
	return ok && n >= 0 && n <= 65535
}
