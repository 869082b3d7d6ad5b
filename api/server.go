// Package api serves the RealSync HTTP API: the handlers behind the
// interface generated from openapi.yaml (package oapi), authentication, and
// the one table from domain errors to problem+json.
package api

import (
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"net/netip"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/realsync/realsync/api/oapi"
	"github.com/realsync/realsync/internal/fleet"
	"github.com/realsync/realsync/internal/idempotency"
	"github.com/realsync/realsync/internal/limits"
	"github.com/realsync/realsync/internal/webhook/deadletter"
	"github.com/realsync/realsync/lobby"
	"github.com/realsync/realsync/matchmaking"
	"github.com/realsync/realsync/players"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/sse"
)

// Config is what the server needs; cmd/realsyncd wires it.
type Config struct {
	Rooms *rooms.Service
	Lobby *lobby.Service
	// Events serves the room event streams.
	Events *sse.Hub
	// Players serves presence and following (the personal stream is
	// Events'); nil: those routes answer 503.
	Players *players.Service
	// Direct sends direct messages and invites (nil: 503).
	Direct *players.Direct
	// Parties serves /v1/me/party (nil: 503).
	Parties *players.Parties
	// Tickets is matchmaking's tickets (POST/GET/DELETE
	// /v1/matchmaking/tickets); nil: those routes are 503.
	Tickets *matchmaking.Service
	Auth    *Auth
	// APIKeys are the server credentials (REALSYNC_API_KEYS_FILE); nil: none.
	APIKeys *APIKeys
	// Ready reports whether the store is reachable (GET /readyz).
	Ready func(context.Context) error
	// Available reports whether the store may be used: false until the
	// instance connected to Redis at start. While false, every route that
	// needs the store is refused (see requireStore). nil: always.
	Available func() bool
	// Spec is served at GET /openapi.yaml.
	Spec []byte
	// Demo, when set, is served at /demo/ (the web demo's files).
	Demo fs.FS
	// AdminToken is the bearer token of the /v1/admin routes (cmd/realsyncd
	// requires at least 32 characters); empty: those routes answer 404.
	AdminToken string
	// Instances lists the live instances (GET /v1/admin/instances);
	// required with an AdminToken.
	Instances func(context.Context) ([]fleet.Instance, error)
	// DeadLetters is the webhook dead-letter queue of the admin routes
	// (GET /v1/admin/webhooks/dead-letters, POST …/{id}/replay); nil:
	// those routes are 404 NOT_FOUND.
	DeadLetters deadletter.Queue
	// Log receives one access line per request (info) and the errors.
	Log *slog.Logger
	// Metrics observes every request; none when nil.
	Metrics Metrics
	// MetricsHandler, when set, serves GET /metrics (when the metrics have
	// a listener of their own it is nil, and /metrics is 404 here).
	MetricsHandler http.Handler
	// RateLimiter counts requests on RateLimits (ratelimit.go); nil: no
	// limits.
	RateLimiter RateLimiter
	RateLimits  limits.Set
	// TrustedProxies are the peers whose X-Forwarded-For names the client
	// address (clientip.go); none: the peer is the client.
	TrustedProxies []netip.Prefix
	// CORSOrigins are the origins browsers may call the API and open
	// streams from ("*": any); none: no CORS headers (see newCORS).
	CORSOrigins []string
	// RequestTimeout bounds reading each request's body and answering each
	// request but event streams (408, 503); 0: DefaultRequestTimeout.
	RequestTimeout time.Duration
	// Idempotency keeps the answers of requests sent with an
	// Idempotency-Key (idempotency.go); nil: the header is ignored.
	Idempotency idempotency.Store
	// Admission bounds the requests in flight (overload.go); zero: none.
	Admission Admission
	// Base is the context the HTTP server's requests descend from
	// (http.Server's BaseContext): a shutdown that cuts the requests still
	// running cancels it, with ErrShutdown as the cause. A request with an
	// Idempotency-Key runs on when its client hangs up (detach); Base's
	// end ends it too. nil: such a request ends at its request timeout, or
	// when its own context is cut with ErrShutdown before its client left.
	Base context.Context
	// BrowseCache keeps room list pages and the lobby's counts for a
	// while (browsecache.go); nil: every such request reads Redis.
	BrowseCache *BrowseCache
	// Hangups tells the HTTP/1.1 event streams taken over by the hub
	// (eventLine) that their client hung up, for all of them at once
	// (Linux; hangups_linux.go): each sweep of the hub reads a flag per
	// stream. nil: each Alive peeks at its connection, a system call per
	// stream and sweep (peerClosed). Its owner closes it once the HTTP
	// server and the hub have stopped (the lines still open then peek).
	Hangups *Hangups
	// StreamLifetime is the longest a player's event stream lasts: each
	// ends at a random time between half of it and all of it after it
	// opened (unless its token's expiry comes first), with a short retry,
	// and its client resumes with Last-Event-ID, likely on another
	// instance: after a scale-out, the new instances get their share of
	// the streams. 0: a stream lasts until its token's expiry. Streams of
	// API keys have none.
	StreamLifetime time.Duration
	// StreamTokens records the stream tokens that opened a stream, so
	// that each opens one (streamuse.go); nil: a stream token opens its
	// stream any number of times within its minute.
	StreamTokens StreamTokenUses
	// Detached counts those requests while they run on (a shutdown waits
	// for them with its Drain before it closes the store: over HTTP/2
	// http.Server.Shutdown does not wait for the handler of a stream its
	// client reset); nil: the server counts them for nobody.
	Detached *Detached
}

// Server implements oapi.ServerInterface.
type Server struct {
	rooms   *rooms.Service
	lobby   *lobby.Service
	events  *sse.Hub
	players *players.Service
	direct  *players.Direct
	parties *players.Parties
	tickets *matchmaking.Service
	auth    *Auth
	keys    *APIKeys
	ready   func(context.Context) error
	spec    []byte
	log     *slog.Logger
	admin   admin

	metrics        Metrics
	metricsHandler http.Handler
	ids            *requestIDs
	available      func() bool // see Config.Available
	limits         rateLimits
	trustedProxies []netip.Prefix
	requestTimeout time.Duration
	idem           idempotency.Store
	streamTokens   StreamTokenUses // see Config.StreamTokens
	streamLifetime time.Duration   // see Config.StreamLifetime
	base           context.Context // see Config.Base
	detached       *Detached       // see Config.Detached
	deadLetters    deadletter.Queue
	admission      *admitter // nil: no bound
	browseCache    *BrowseCache
	hangups        *Hangups // see Config.Hangups
	stalls         stallWatch
}

var _ oapi.ServerInterface = (*Server)(nil)

// NewHandler returns the HTTP handler of the whole API.
func NewHandler(cfg Config) http.Handler {
	s := &Server{rooms: cfg.Rooms, lobby: cfg.Lobby, events: cfg.Events, players: cfg.Players, direct: cfg.Direct, parties: cfg.Parties, tickets: cfg.Tickets, auth: cfg.Auth, keys: cfg.APIKeys, ready: cfg.Ready, spec: cfg.Spec, log: cfg.Log,
		metrics: cfg.Metrics, metricsHandler: cfg.MetricsHandler, ids: newRequestIDs(), available: cfg.Available,
		limits: rateLimits{cfg.RateLimiter, cfg.RateLimits, new(atomic.Int64)}, trustedProxies: cfg.TrustedProxies, idem: cfg.Idempotency,
		base: cfg.Base, detached: cfg.Detached, deadLetters: cfg.DeadLetters, admission: newAdmitter(cfg.Admission), browseCache: cfg.BrowseCache,
		hangups: cfg.Hangups, streamTokens: cfg.StreamTokens, streamLifetime: cfg.StreamLifetime}
	if s.log == nil {
		s.log = slog.Default()
	}
	s.admin = newAdmin(cfg.AdminToken, cfg.Instances)
	if s.metrics == nil {
		s.metrics = noMetrics{}
	}
	s.requestTimeout = cfg.RequestTimeout
	if s.requestTimeout <= 0 {
		s.requestTimeout = DefaultRequestTimeout
	}
	r := chi.NewRouter()
	r.Use(s.observe, s.recoverPanics, noSniff)
	if c := newCORS(cfg.CORSOrigins); c != nil {
		r.Use(c)
	}
	r.Use(s.limitBody, s.limitTime, s.admit, s.authenticate, s.requireStore)
	r.NotFound(func(w http.ResponseWriter, r *http.Request) { unmatched(r); s.writeError(w, r, errRouteNotFound) })
	r.MethodNotAllowed(func(w http.ResponseWriter, req *http.Request) {
		unmatched(req)
		// RFC 9110: a 405 names the methods the resource allows
		var allow []string
		for _, m := range []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"} {
			if r.Match(chi.NewRouteContext(), m, req.URL.Path) {
				allow = append(allow, m)
			}
		}
		w.Header().Set("Allow", strings.Join(allow, ", "))
		s.writeError(w, req, errMethodNotAllowed)
	})
	if cfg.Demo != nil {
		r.Handle("/demo", http.RedirectHandler("/demo/", http.StatusMovedPermanently))
		r.Handle("/demo/*", demoHeaders(http.StripPrefix("/demo/", http.FileServer(http.FS(cfg.Demo)))))
	}
	oapi.HandlerWithOptions(s, oapi.ChiServerOptions{BaseRouter: r, ErrorHandlerFunc: s.paramError,
		Middlewares: []oapi.MiddlewareFunc{s.checkScope, s.rateLimit}})
	return newCarryStreams(r, s.log, s.metrics)
}

func (s *Server) recoverPanics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.log.Error("panic", pathAttr(r.URL.Path), "panic", v, "request_id", requestID(r.Context()))
				s.writeError(w, r, panicError{v})
			}
		}()
		next.ServeHTTP(w, r)
	})
}

type panicError struct{ v any }

func (p panicError) Error() string { return "panic" }

// Healthz implements GET /healthz: the process is up.
func (s *Server) Healthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, oapi.Health{Status: "ok"})
}

// HealthzHead implements HEAD /healthz: GET's status and headers (net/http
// writes no body for HEAD).
func (s *Server) HealthzHead(w http.ResponseWriter, r *http.Request) { s.Healthz(w, r) }

// ReadyzHead implements HEAD /readyz, as HealthzHead.
func (s *Server) ReadyzHead(w http.ResponseWriter, r *http.Request) { s.Readyz(w, r) }

// Readyz implements GET /readyz: 503 while the store is unreachable.
func (s *Server) Readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := s.ready(ctx); err != nil {
		s.writeError(w, r, fmt.Errorf("%w: %v", rooms.ErrUnavailable, err))
		return
	}
	writeJSON(w, http.StatusOK, oapi.Health{Status: "ok"})
}

// GetMetrics implements GET /metrics: the Prometheus metrics, unless they
// have a listener of their own.
func (s *Server) GetMetrics(w http.ResponseWriter, r *http.Request) {
	if s.metricsHandler == nil {
		s.writeError(w, r, errRouteNotFound)
		return
	}
	s.metricsHandler.ServeHTTP(w, r)
}

// GetSpec implements GET /openapi.yaml.
func (s *Server) GetSpec(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/yaml")
	w.Write(s.spec)
}

// noSniff tells browsers to take every answer as its Content-Type says:
// answers and events carry what users sent as they sent it, <, > and &
// included (internal/jsonout), which a browser sniffing a JSON answer
// could read as HTML.
func noSniff(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Content-Type-Options", "nosniff")
		next.ServeHTTP(w, r)
	})
}
