package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/realsync/realsync/api"
	"github.com/realsync/realsync/internal/metrics"
)

// newLogger returns the process' logger: text or JSON lines on w, from
// level up, a line logged with a request's context carrying its
// request_id (api.LogHandler).
func newLogger(w io.Writer, format, level string) *slog.Logger {
	opts := &slog.HandlerOptions{Level: logLevels[level]}
	var h slog.Handler = slog.NewTextHandler(w, opts)
	if format == "json" {
		h = slog.NewJSONHandler(w, opts)
	}
	return slog.New(newDedupHandler(api.LogHandler(h), slog.LevelWarn, logDedupInterval))
}

// redisLogger routes go-redis' own log lines (reconnects, "Unexpected conn
// state", dial failures) through the structured logger as warnings of one
// message, so that the dedupHandler bounds them during an outage, instead
// of its plain lines on stderr. They name addresses, never credentials.
type redisLogger struct{ log *slog.Logger }

func (l redisLogger) Printf(ctx context.Context, format string, v ...any) {
	l.log.WarnContext(ctx, "redis client", "component", "go-redis", "detail", fmt.Sprintf(format, v...))
}

// newRegistry returns the instance's metric registry (Go runtime, process,
// and RealSync's own, with realsync_build_info) and RealSync's metrics.
func newRegistry() (*prometheus.Registry, *metrics.Metrics) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg, metrics.New(reg, buildVersion())
}

// metricsHandler serves reg's metrics. A collector that fails is reported
// in the answer and the rest still served.
func metricsHandler(reg *prometheus.Registry, log *slog.Logger) http.Handler {
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn), Timeout: 10 * time.Second})
}

// serveMetrics serves GET /metrics on a listener of its own at addr, apart
// from the API, its connections with the API's TCP user timeout (a
// scraper that vanished mid-answer does not hold it for the kernel's 15
// minutes). stop ends it.
func serveMetrics(addr string, userTimeout time.Duration, h http.Handler, log *slog.Logger) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("REALSYNC_METRICS_ADDR: %w", err)
	}
	ln = withUserTimeout(ln, userTimeout, log)
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", h)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: idleTimeout, ErrorLog: httpErrorLog(log)}
	return serveApart("metrics", ln, srv, log), nil
}

// serveApart serves srv on ln, a listener of its own apart from the API's
// (metrics, pprof), logging it as what and any end but its shutdown;
// stop shuts it down within 5 s.
func serveApart(what string, ln net.Listener, srv *http.Server, log *slog.Logger) (stop func()) {
	go func() {
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			log.Error(what+" listener", "err", err)
		}
	}()
	log.Info(what, "addr", ln.Addr().String())
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	}
}
