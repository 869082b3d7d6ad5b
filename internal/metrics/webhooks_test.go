package metrics_test

import (
	"context"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/realsync/realsync/internal/metrics"
	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/internal/storetest"
	"github.com/realsync/realsync/store"
	"github.com/realsync/realsync/store/webhooks"
)

// A dispatcher's endpoints, at New (the file loaded) and at SetEndpoints
// (reloaded), have their counters in the registry at 0 before anything
// happens to them, so an alert's increase() sees an endpoint's first
// refusal (a series that appeared at 1 was seen at its second); their
// backlog gauge at 0 until a round reads it, and deleted for an endpoint
// the reload removed (its counters stay), not set again by a report read
// before the reload.
func TestWebhookSeriesFollowTheFile(t *testing.T) {
	b := redistest.Backends(t)[0]
	st := storetest.Open(t, store.Config{RedisURL: b.URL, ClusterAddrs: b.ClusterAddrs,
		Prefix: redistest.Prefix(t), Shards: 2, WebhookOutboxLen: 100})
	reg := prometheus.NewRegistry()
	m := metrics.New(reg, "v1")
	d, err := webhooks.New(st.Base(), webhooks.Config{Consumer: "i1", Metrics: m,
		Send:      func(context.Context, webhooks.Delivery) error { return nil },
		Endpoints: []webhooks.Endpoint{{ID: "a", Events: []string{"*"}}, {ID: "b", Events: []string{"*"}}}})
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"realsync_webhook_backlog_refused_total", "realsync_webhook_deliveries_total", "realsync_webhook_backlog"}
	check := func(when, want string) {
		t.Helper()
		if err := testutil.GatherAndCompare(reg, strings.NewReader(want), names...); err != nil {
			t.Fatalf("%s: %v", when, err)
		}
	}
	const (
		refusedHead = `
# HELP realsync_webhook_backlog_refused_total Webhook deliveries sent to the dead letters untried because the endpoint's backlog in its shard (deliveries pending or retrying) was at REALSYNC_WEBHOOK_MAX_BACKLOG, by endpoint id.
# TYPE realsync_webhook_backlog_refused_total counter
`
		triesHead = `
# HELP realsync_webhook_deliveries_total Webhook delivery tries by endpoint id (REALSYNC_WEBHOOKS_FILE) and outcome: delivered, retry (failed, retried later), dead (failed its last try: dead-lettered).
# TYPE realsync_webhook_deliveries_total counter
`
		backlogHead = `
# HELP realsync_webhook_backlog Each webhook endpoint's backlog (deliveries pending or retrying) in the shard where it is largest, the figure REALSYNC_WEBHOOK_MAX_BACKLOG is checked against, read from Redis every 5 s: the same on every instance. By endpoint id of REALSYNC_WEBHOOKS_FILE.
# TYPE realsync_webhook_backlog gauge
`
	)
	check("the file loaded", refusedHead+`
realsync_webhook_backlog_refused_total{endpoint="a"} 0
realsync_webhook_backlog_refused_total{endpoint="b"} 0
`+triesHead+`
realsync_webhook_deliveries_total{endpoint="a",outcome="dead"} 0
realsync_webhook_deliveries_total{endpoint="a",outcome="delivered"} 0
realsync_webhook_deliveries_total{endpoint="a",outcome="retry"} 0
realsync_webhook_deliveries_total{endpoint="b",outcome="dead"} 0
realsync_webhook_deliveries_total{endpoint="b",outcome="delivered"} 0
realsync_webhook_deliveries_total{endpoint="b",outcome="retry"} 0
`+backlogHead+`
realsync_webhook_backlog{endpoint="a"} 0
realsync_webhook_backlog{endpoint="b"} 0
`)
	m.WebhookRefused("a")
	m.WebhookBacklog(map[string]int64{"a": 10000, "b": 4000})
	d.SetEndpoints([]webhooks.Endpoint{{ID: "a", Events: []string{"*"}}, {ID: "c", Events: []string{"*"}}})
	m.WebhookBacklog(map[string]int64{"a": 9000, "b": 4001}) // read before the reload: b is gone
	check("reloaded without b, with c", refusedHead+`
realsync_webhook_backlog_refused_total{endpoint="a"} 1
realsync_webhook_backlog_refused_total{endpoint="b"} 0
realsync_webhook_backlog_refused_total{endpoint="c"} 0
`+triesHead+`
realsync_webhook_deliveries_total{endpoint="a",outcome="dead"} 0
realsync_webhook_deliveries_total{endpoint="a",outcome="delivered"} 0
realsync_webhook_deliveries_total{endpoint="a",outcome="retry"} 0
realsync_webhook_deliveries_total{endpoint="b",outcome="dead"} 0
realsync_webhook_deliveries_total{endpoint="b",outcome="delivered"} 0
realsync_webhook_deliveries_total{endpoint="b",outcome="retry"} 0
realsync_webhook_deliveries_total{endpoint="c",outcome="dead"} 0
realsync_webhook_deliveries_total{endpoint="c",outcome="delivered"} 0
realsync_webhook_deliveries_total{endpoint="c",outcome="retry"} 0
`+backlogHead+`
realsync_webhook_backlog{endpoint="a"} 9000
realsync_webhook_backlog{endpoint="c"} 0
`)
}
