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
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/realsync/realsync/api/oapi"
	"github.com/realsync/realsync/lobby"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/sse"
)

// Config is what the server needs; cmd/realsyncd wires it.
type Config struct {
	Rooms *rooms.Service
	Lobby *lobby.Service
	// Events serves the room event streams.
	Events *sse.Hub
	Auth   *Auth
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
	Log  *slog.Logger
}

// Server implements oapi.ServerInterface.
type Server struct {
	rooms  *rooms.Service
	lobby  *lobby.Service
	events *sse.Hub
	auth   *Auth
	ready  func(context.Context) error
	spec   []byte
	log    *slog.Logger

	available func() bool // see Config.Available
}

var _ oapi.ServerInterface = (*Server)(nil)

// NewHandler returns the HTTP handler of the whole API.
func NewHandler(cfg Config) http.Handler {
	s := &Server{rooms: cfg.Rooms, lobby: cfg.Lobby, events: cfg.Events, auth: cfg.Auth, ready: cfg.Ready, spec: cfg.Spec, log: cfg.Log,
		available: cfg.Available}
	if s.log == nil {
		s.log = slog.Default()
	}
	r := chi.NewRouter()
	r.Use(s.logRequests, s.recoverPanics, s.limitBody, s.authenticate, s.requireStore)
	r.NotFound(func(w http.ResponseWriter, r *http.Request) { s.writeError(w, r, errRouteNotFound) })
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) { s.writeError(w, r, errMethodNotAllowed) })
	if cfg.Demo != nil {
		r.Handle("/demo", http.RedirectHandler("/demo/", http.StatusMovedPermanently))
		r.Handle("/demo/*", http.StripPrefix("/demo/", http.FileServer(http.FS(cfg.Demo))))
	}
	return oapi.HandlerWithOptions(s, oapi.ChiServerOptions{BaseRouter: r, ErrorHandlerFunc: s.paramError})
}

// logRequests logs method, path (never the query: it may carry a token),
// status and duration.
func (s *Server) logRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(rec, r)
		s.log.Debug("request", "method", r.Method, "path", r.URL.Path, "status", rec.status,
			"ms", float64(time.Since(start).Microseconds())/1000)
	})
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach the real writer (flushes,
// deadlines).
func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

func (s *Server) recoverPanics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.log.Error("panic", "path", r.URL.Path, "panic", v)
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

// GetSpec implements GET /openapi.yaml.
func (s *Server) GetSpec(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/yaml")
	w.Write(s.spec)
}
