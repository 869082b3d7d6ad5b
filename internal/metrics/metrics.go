// Package metrics defines RealSync's Prometheus metrics and implements the
// observers the other packages declare: api.Metrics (HTTP requests),
// store.Metrics (scripts, Redis failures, janitor actions) and sse.Metrics
// (streams and events). cmd/realsyncd creates the registry and wires it;
// nothing here registers on Prometheus' global default registry.
//
// The names are fixed for the whole project (dashboards use them); README
// lists every metric with its labels and meaning.
package metrics

import (
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/realsync/realsync/internal/limits"
	"github.com/realsync/realsync/sse"
)

// Janitor action kinds known in advance; their series exist from the start
// (repair_<what> kinds appear when first counted).
var janitorKinds = []string{"expired", "finished", "lifetime", "trimmed", "presence_disconnect", "presence_debounced", "presence_removal", "presence_unconnected", "session_lapsed"}

// The starts and end reasons each stream kind can have.
var (
	sseKinds  = []string{sse.KindRoom, sse.KindLobby, sse.KindMe}
	sseStarts = map[string][]string{
		sse.KindRoom:  {sse.StartFresh, sse.StartReplay, sse.StartSnapshot},
		sse.KindLobby: {sse.StartFresh},
		sse.KindMe:    {sse.StartFresh, sse.StartReplay, sse.StartSnapshot},
	}
	sseReasons = map[string][]string{
		sse.KindRoom: {sse.EndClientGone, sse.EndShutdown, sse.EndSlow, sse.EndWriteError,
			sse.EndRoomClosed, sse.EndLeft, sse.EndStoreError, sse.EndTokenExpiry, sse.EndLifetime, sse.EndLapsed},
		sse.KindLobby: {sse.EndClientGone, sse.EndShutdown, sse.EndSlow, sse.EndWriteError, sse.EndStoreError, sse.EndTokenExpiry,
			sse.EndLifetime, sse.EndLapsed},
		sse.KindMe: {sse.EndClientGone, sse.EndShutdown, sse.EndSlow, sse.EndWriteError, sse.EndStoreError, sse.EndTokenExpiry,
			sse.EndLifetime, sse.EndLapsed, sse.EndReplaced, sse.EndGap},
	}
)

// Metrics holds the metrics of one instance. Safe for concurrent use.
type Metrics struct {
	httpRequests   *prometheus.CounterVec
	httpInFlight   prometheus.Gauge
	httpDuration   *prometheus.HistogramVec
	scriptCalls    *prometheus.CounterVec
	scriptDuration *prometheus.HistogramVec
	redisErrors    *prometheus.CounterVec
	sseStreams     *prometheus.GaugeVec
	sseEvents      *prometheus.CounterVec
	sseOpens       *prometheus.CounterVec
	sseEnds        *prometheus.CounterVec
	janitor        *prometheus.CounterVec
	apiKeys        prometheus.Gauge
	apiKeysBad     prometheus.Counter
	rateLimited    *prometheus.CounterVec
	rateChecks     *prometheus.CounterVec
	rateDecided    map[string]prometheus.Counter // rateChecks by "decided", looked up once
	jwtReloads     *prometheus.CounterVec
	batch          batchMetrics   // realsync_redis_batch_size (batch.go)
	browse         browseMetrics  // realsync_browse_cache_requests_total (browse.go)
	players        playerMetrics  // realsync_sessions… (players.go)
	webhooks       webhookMetrics // realsync_webhook_… (webhooks.go)
	matchmaking    *mmMetrics     // realsync_matchmaking_… (matchmaking.go)
	openings       openingMetrics // realsync_sse_opening… (openings.go)
	evictUnsafe    prometheus.Gauge

	// The series of the hot paths, resolved once: a lookup here costs no
	// allocation, where WithLabelValues allocates its label slice.
	httpMu   sync.RWMutex
	http     map[httpKey]httpSeries
	scriptMu sync.RWMutex
	scripts  map[scriptKey]scriptSeries
	// Fixed at New, read-only after.
	streams   map[string]prometheus.Gauge
	opens     map[[2]string]prometheus.Counter // kind, start
	ends      map[[2]string]prometheus.Counter // kind, reason
	delivered map[string]prometheus.Counter
	dropped   map[string]prometheus.Counter
}

type httpKey struct {
	route, method string
	status        int
}

type httpSeries struct {
	count    prometheus.Counter
	duration prometheus.Observer
}

type scriptKey struct{ script, outcome string }

type scriptSeries struct {
	count    prometheus.Counter
	duration prometheus.Observer
}

var _ sse.Metrics = (*Metrics)(nil)

// httpBuckets (s) reach from a cached GET (≈ 0.5 ms) to a request stuck
// behind a Redis failover.
var httpBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

// scriptBuckets (s): a script's round trip is usually 0.1–1 ms.
var scriptBuckets = []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1}

// New creates the metrics and registers them, with
// realsync_build_info{version,goversion}, on reg.
func New(reg prometheus.Registerer, version string) *Metrics {
	m := &Metrics{
		httpRequests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "realsync_http_requests_total",
			Help: "HTTP requests answered, by route pattern, method and status; event streams when they end."},
			[]string{"route", "method", "status"}),
		httpInFlight: prometheus.NewGauge(prometheus.GaugeOpts{Name: "realsync_http_in_flight",
			Help: "Requests in flight that REALSYNC_MAX_IN_FLIGHT bounds (not event streams, admin routes, probes); those refused past it are counted under route overloaded."}),
		httpDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "realsync_http_request_duration_seconds",
			Help: "Time to answer HTTP requests, by route pattern and method; event streams are left out.", Buckets: httpBuckets},
			[]string{"route", "method"}),
		scriptCalls: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "realsync_script_calls_total",
			Help: "Lua script runs, by script and outcome (the reply's status, or unavailable, redis_error, canceled)."},
			[]string{"script", "outcome"}),
		scriptDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "realsync_script_duration_seconds",
			Help: "Round trip of Lua script runs (of the whole MULTI/EXEC when the room is read with it), by script.", Buckets: scriptBuckets},
			[]string{"script"}),
		redisErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "realsync_redis_errors_total",
			Help: "Redis calls that failed for want of Redis, by command (pipeline, multi for commands sent together)."},
			[]string{"op"}),
		sseStreams: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "realsync_sse_streams",
			Help: "Open event streams, by kind (room, lobby, me)."}, []string{"kind"}),
		sseEvents: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "realsync_sse_events_total",
			Help: "Events written to stream clients (delivered) or not queued because a stream's queue was full (dropped)."},
			[]string{"kind", "result"}),
		sseOpens: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "realsync_sse_opens_total",
			Help: "Event streams opened, by kind and start: fresh (no Last-Event-ID), replay (resumed from the log), snapshot (a resume the log could not serve)."},
			[]string{"kind", "start"}),
		sseEnds: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "realsync_sse_stream_ends_total",
			Help: "Event streams ended, by kind and reason."}, []string{"kind", "reason"}),
		janitor: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "realsync_janitor_actions_total",
			Help: "Janitor actions, by kind."}, []string{"kind"}),
		rateLimited: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "realsync_rate_limited_total",
			Help: "Requests refused by a rate limit (429), by limit (route class, opens, guess, guests, messages, patches) and scope (user, ip, room)."},
			[]string{"class", "scope"}),
		rateChecks: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "realsync_rate_limit_checks_total",
			Help: "Rate-limit counters counted, by where the check was decided: instance (from requests this instance took ahead, REALSYNC_RATE_LIMIT_LEASE) or redis."},
			[]string{"decided"}),
		jwtReloads: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "realsync_jwt_keys_reloads_total",
			Help: "Loads of the JWKS file (REALSYNC_JWT_KEYS_FILE), by result: ok (keys replaced), error (file refused, old keys kept)."},
			[]string{"result"}),
		http: map[httpKey]httpSeries{}, scripts: map[scriptKey]scriptSeries{},
		streams: map[string]prometheus.Gauge{}, opens: map[[2]string]prometheus.Counter{},
		ends: map[[2]string]prometheus.Counter{}, delivered: map[string]prometheus.Counter{}, dropped: map[string]prometheus.Counter{},
	}
	m.apiKeys = prometheus.NewGauge(prometheus.GaugeOpts{Name: "realsync_api_keys",
		Help: "API keys in force, from REALSYNC_API_KEYS_FILE."})
	m.apiKeysBad = prometheus.NewCounter(prometheus.CounterOpts{Name: "realsync_api_keys_reload_errors_total",
		Help: "Changes of REALSYNC_API_KEYS_FILE that could not be used (unreadable or bad); the keys in force stayed."})
	build := prometheus.NewGauge(prometheus.GaugeOpts{Name: "realsync_build_info",
		Help:        "Always 1; the labels say which build runs.",
		ConstLabels: prometheus.Labels{"version": version, "goversion": runtime.Version()}})
	build.Set(1)
	m.evictUnsafe = prometheus.NewGauge(prometheus.GaugeOpts{Name: "realsync_redis_eviction_policy_unsafe",
		Help: "1 when a Redis master's maxmemory-policy, as the janitor last read it, evicts keys (anything but noeviction: evicted keys corrupt rooms), 0 otherwise or when CONFIG GET is refused."})
	reg.MustRegister(m.evictUnsafe)
	m.batch = newBatchMetrics(reg)
	m.browse = newBrowseMetrics(reg)
	m.players = newPlayerMetrics(reg)
	m.webhooks = newWebhookMetrics(reg)
	m.matchmaking = newMatchmakingMetrics(reg)
	m.openings = newOpeningMetrics(reg)
	reg.MustRegister(m.httpRequests, m.httpInFlight, m.httpDuration, m.scriptCalls, m.scriptDuration, m.redisErrors,
		m.sseStreams, m.sseEvents, m.sseOpens, m.sseEnds, m.janitor, m.apiKeys, m.apiKeysBad, m.rateLimited, m.rateChecks, m.jwtReloads, build)
	// Series known in advance exist from the start, at 0, so rates and
	// dashboards need not wait for the first occurrence.
	for _, k := range sseKinds {
		m.streams[k] = m.sseStreams.WithLabelValues(k)
		m.delivered[k] = m.sseEvents.WithLabelValues(k, "delivered")
		m.dropped[k] = m.sseEvents.WithLabelValues(k, "dropped")
		for _, s := range sseStarts[k] {
			m.opens[[2]string{k, s}] = m.sseOpens.WithLabelValues(k, s)
		}
		for _, r := range sseReasons[k] {
			m.ends[[2]string{k, r}] = m.sseEnds.WithLabelValues(k, r)
		}
	}
	m.jwtReloads.WithLabelValues("ok")
	m.jwtReloads.WithLabelValues("error")
	for _, k := range janitorKinds {
		m.janitor.WithLabelValues(k)
	}
	for _, name := range limits.Names() {
		for _, sc := range limits.Scopes(name) {
			m.rateLimited.WithLabelValues(name, string(sc))
		}
	}
	m.rateDecided = map[string]prometheus.Counter{
		"instance": m.rateChecks.WithLabelValues("instance"), "redis": m.rateChecks.WithLabelValues("redis")}
	return m
}

// Request records one HTTP request (api.Metrics): route is the router's
// pattern or "unmatched", status the answer's. A streamed
// answer (an event stream, counted when it ends) is left out of the
// duration histogram: its duration is the stream's life, not a latency.
// Methods other than the standard ones are labelled "other", so clients
// cannot make up series.
func (m *Metrics) Request(route, method string, status int, d time.Duration, streamed bool) {
	k := httpKey{route: route, method: methodLabel(method), status: status}
	m.httpMu.RLock()
	s, ok := m.http[k]
	m.httpMu.RUnlock()
	if !ok {
		s = httpSeries{count: m.httpRequests.WithLabelValues(k.route, k.method, strconv.Itoa(status)),
			duration: m.httpDuration.WithLabelValues(k.route, k.method)}
		m.httpMu.Lock()
		m.http[k] = s
		m.httpMu.Unlock()
	}
	s.count.Inc()
	if !streamed {
		s.duration.Observe(d.Seconds())
	}
}

// RateLimitCheck counts one counter counted (store/ratelimit's
// Config.Checked): where is "instance" or "redis".
func (m *Metrics) RateLimitCheck(where string) {
	if c, ok := m.rateDecided[where]; ok {
		c.Inc()
	}
}

// RateLimited counts a request refused by limit name in scope
// (api.Metrics). Both come from a fixed set (package limits), so clients
// cannot make up series.
func (m *Metrics) RateLimited(name, scope string) {
	m.rateLimited.WithLabelValues(name, scope).Inc()
}

// InFlight adds delta to realsync_http_in_flight (api.Metrics).
func (m *Metrics) InFlight(delta int) { m.httpInFlight.Add(float64(delta)) }

func methodLabel(method string) string {
	switch method {
	case "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS":
		return method
	}
	return "other"
}

// ScriptCall records one script run (store.Metrics).
func (m *Metrics) ScriptCall(script, outcome string, d time.Duration) {
	k := scriptKey{script, outcome}
	m.scriptMu.RLock()
	s, ok := m.scripts[k]
	m.scriptMu.RUnlock()
	if !ok {
		s = scriptSeries{count: m.scriptCalls.WithLabelValues(script, outcome), duration: m.scriptDuration.WithLabelValues(script)}
		m.scriptMu.Lock()
		m.scripts[k] = s
		m.scriptMu.Unlock()
	}
	s.count.Inc()
	s.duration.Observe(d.Seconds())
}

// RedisError records a Redis call that failed for want of Redis
// (store.Metrics).
func (m *Metrics) RedisError(op string) { m.redisErrors.WithLabelValues(op).Inc() }

// JanitorAction adds n janitor actions of kind (store.Config.JanitorActions).
func (m *Metrics) JanitorAction(kind string, n int) {
	if n > 0 {
		m.janitor.WithLabelValues(kind).Add(float64(n))
	}
}

// KeysReloaded counts a load of the JWKS file (api.KeysFile.Reloaded).
func (m *Metrics) KeysReloaded(ok bool) {
	result := "ok"
	if !ok {
		result = "error"
	}
	m.jwtReloads.WithLabelValues(result).Inc()
}

// StreamOpened implements sse.Metrics.
func (m *Metrics) StreamOpened(kind, start string) {
	m.gauge(kind).Inc()
	if c, ok := m.opens[[2]string{kind, start}]; ok {
		c.Inc()
	} else {
		m.sseOpens.WithLabelValues(kind, start).Inc()
	}
}

// StreamEnded implements sse.Metrics.
func (m *Metrics) StreamEnded(kind, reason string) {
	m.gauge(kind).Dec()
	if c, ok := m.ends[[2]string{kind, reason}]; ok {
		c.Inc()
	} else {
		m.sseEnds.WithLabelValues(kind, reason).Inc()
	}
}

func (m *Metrics) gauge(kind string) prometheus.Gauge {
	if g, ok := m.streams[kind]; ok {
		return g
	}
	return m.sseStreams.WithLabelValues(kind)
}

// Events implements sse.Metrics.
func (m *Metrics) Events(kind string, delivered, dropped int) {
	if delivered > 0 {
		m.counter(m.delivered, kind, "delivered").Add(float64(delivered))
	}
	if dropped > 0 {
		m.counter(m.dropped, kind, "dropped").Add(float64(dropped))
	}
}

func (m *Metrics) counter(by map[string]prometheus.Counter, kind, result string) prometheus.Counter {
	if c, ok := by[kind]; ok {
		return c
	}
	return m.sseEvents.WithLabelValues(kind, result)
}

// APIKeysLoaded sets the number of API keys in force (api.APIKeysMetrics).
func (m *Metrics) APIKeysLoaded(n int) { m.apiKeys.Set(float64(n)) }

// APIKeysReloadFailed counts a keys file that could not be used.
func (m *Metrics) APIKeysReloadFailed() { m.apiKeysBad.Inc() }

// RedisEvictionUnsafe implements store.GuardMetrics:
// realsync_redis_eviction_policy_unsafe.
func (m *Metrics) RedisEvictionUnsafe(unsafe bool) {
	v := 0.0
	if unsafe {
		v = 1
	}
	m.evictUnsafe.Set(v)
}
