package api

import (
	"net/http"
	"testing"
	"time"

	"github.com/realsync/realsync/internal/limits"
)

// RateLimit's r, the requests left, is never more than RateLimit-Policy's
// q (a newcomer's find: r=320 beside q=300, a lease's spare requests
// counted beside a counter that refilled meanwhile).
func TestRateLimitRemainingWithinTheQuota(t *testing.T) {
	for _, tc := range []struct {
		name      string
		limit     limits.Limit
		remaining int
		want      string
	}{
		{"within", limits.Limit{Rate: 100, Period: time.Second, Burst: 300}, 120, `"read.ip";r=120;t=1`},
		{"a lease's spare over the burst", limits.Limit{Rate: 100, Period: time.Second, Burst: 300}, 320, `"read.ip";r=300;t=1`},
		{"a burst refilled in under a second (q per second)", limits.Limit{Rate: 10, Period: time.Second, Burst: 5}, 5, `"read.ip";r=5;t=1`},
		{"a burst refilled in under a second, a lease's spare over q", limits.Limit{Rate: 1000, Period: time.Second, Burst: 500}, 1200, `"read.ip";r=1000;t=1`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			setRateLimitHeaders(h, []limits.Check{{Name: "read", Scope: "ip", Limit: tc.limit}},
				[]limits.Decision{{Allowed: true, Remaining: tc.remaining, Reset: time.Second}})
			if got := h.Get("RateLimit"); got != tc.want {
				t.Fatalf("RateLimit %s (policy %s), want %s", got, h.Get("RateLimit-Policy"), tc.want)
			}
		})
	}
}
