package main

import (
	"strings"
	"testing"
	"time"
)

// TestShutdownWarningBlamesTheTimeoutOnlyWhenItEnded: a shutdown that
// left something running names REALSYNC_SHUTDOWN_TIMEOUT as what ended
// first only when it did; when the hub's own short wait for its
// taken-over streams ran out well within it, the warning says so instead
// (it named the timeout, sending an operator to raise a setting that was
// not the cause).
func TestShutdownWarningBlamesTheTimeoutOnlyWhenItEnded(t *testing.T) {
	for _, tc := range []struct {
		timedOut bool
		want     string
		not      string
	}{
		{true, "REALSYNC_SHUTDOWN_TIMEOUT (30s) ended first", "not waited for"},
		{false, "within REALSYNC_SHUTDOWN_TIMEOUT (30s), some streams' ends were not waited for", "ended first"},
	} {
		got := shutdownWarning(30*time.Second, tc.timedOut)
		if !strings.Contains(got, tc.want) || strings.Contains(got, tc.not) {
			t.Errorf("timed out %v: %q, want it to say %q and not %q", tc.timedOut, got, tc.want, tc.not)
		}
	}
}
