package metrics_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/realsync/realsync/internal/metrics"
)

// realsync_online_users reports the count read, and nothing when the read
// fails.
func TestOnlineUsers(t *testing.T) {
	n, fail := int64(7), false
	reg := prometheus.NewRegistry()
	reg.MustRegister(metrics.NewOnlineUsers(func(context.Context) (int64, error) {
		if fail {
			return 0, errors.New("down")
		}
		return n, nil
	}))
	want := "# HELP realsync_online_users Users online (with a personal stream session), over every instance.\n# TYPE realsync_online_users gauge\nrealsync_online_users 7\n"
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "realsync_online_users"); err != nil {
		t.Error(err)
	}
	fail = true
	if c, err := testutil.GatherAndCount(reg, "realsync_online_users"); err != nil || c != 0 {
		t.Errorf("with the read failing: %d series, %v", c, err)
	}
}
