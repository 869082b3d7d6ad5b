package main

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"
)

// hubClose is a hub's close as shutdown sees it.
type hubClose func(ctx context.Context) error

func (f hubClose) CloseContext(ctx context.Context) error { return f(ctx) }

// TestShutdownWarningBlamesTheTimeoutOnlyWhenItEnded: a shutdown that
// left something running names REALSYNC_SHUTDOWN_TIMEOUT as what ended
// first only when it did; when the hub's own short wait for its
// taken-over streams ran out well within it (sse's closeWait: clients
// that stopped reading), the warning says so instead (it named the
// timeout, sending an operator to raise a setting that was not the
// cause). Either way the shutdown succeeds: no request was cut.
func TestShutdownWarningBlamesTheTimeoutOnlyWhenItEnded(t *testing.T) {
	for _, tc := range []struct {
		name      string
		timeout   time.Duration
		hub       hubClose
		want, not string
	}{
		{"the hub's wait ran out", 30 * time.Second,
			func(context.Context) error { return errors.New("sse: 2 streams had not ended within 7s") },
			"within REALSYNC_SHUTDOWN_TIMEOUT (30s), some streams' ends were not waited for; left running: the event streams' close (sse: 2 streams had not ended within 7s", "ended first"},
		{"the timeout ended", 50 * time.Millisecond,
			func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() },
			"REALSYNC_SHUTDOWN_TIMEOUT (50ms) ended first; left running: the event streams' close", "not waited for"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			served := make(chan error, 1)
			served <- http.ErrServerClosed
			err := shutdown(&http.Server{}, func() {}, func(context.Context) error { return nil }, func(context.Context) bool { return true },
				served, tc.hub, func(context.Context) {}, func() error { return nil }, tc.timeout, slog.New(slog.NewTextHandler(&logs, nil)))
			if err != nil {
				t.Fatalf("shutdown: %v, want nil (no request cut)", err)
			}
			if got := logs.String(); !strings.Contains(got, tc.want) || strings.Contains(got, tc.not) {
				t.Errorf("warning %q, want it to say %q and not %q", got, tc.want, tc.not)
			}
		})
	}
}
