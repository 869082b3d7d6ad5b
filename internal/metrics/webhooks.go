package metrics

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/realsync/realsync/store/webhooks"
)

// webhookMetrics are the webhook dispatcher's (issue 16 item 6):
// realsync_webhook_deliveries_total{endpoint,outcome},
// realsync_webhook_backlog_refused_total{endpoint},
// realsync_webhook_backlog{endpoint}, realsync_webhook_max_backlog and
// realsync_webhook_outbox_lag_seconds, realsync_webhook_delivery_lag_seconds,
// realsync_webhook_delivery_seconds{endpoint};
// and the endpoints file's reloads,
// realsync_webhooks_file_reloads_total{result}. The endpoint label is an
// endpoint id of the endpoints file. The counters of every endpoint of
// the file start at 0 when the file is loaded or reloaded with it (so
// that an alert's increase() sees its first refusal); one removed by a
// reload keeps its counters until the instance restarts, and loses its
// backlog gauge at once.
type webhookMetrics struct {
	tries       *prometheus.CounterVec
	refused     *prometheus.CounterVec
	backlog     *prometheus.GaugeVec
	bound       prometheus.Gauge
	lag         prometheus.Gauge
	deliveryLag prometheus.Gauge
	delivered   *prometheus.HistogramVec
	reloads     *prometheus.CounterVec
	mu          *sync.Mutex
	inForce     map[string]bool // the endpoints of the file (mu): the backlog gauge's series
}

// deliveryBuckets (s) reach from a delivery at once (the dispatcher polls
// every 250 ms when idle; a receiver answers in tens of milliseconds)
// past the retries' backoff (REALSYNC_WEBHOOK_* defaults: up to 1 s,
// doubling, at most 10 minutes a retry).
var deliveryBuckets = []float64{.05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 1800, 3600}

// webhookOutcomes are realsync_webhook_deliveries_total's outcomes
// (webhooks.Metrics.WebhookDelivered).
var webhookOutcomes = []string{"delivered", "retry", "dead"}

var _ webhooks.Metrics = (*Metrics)(nil)

func newWebhookMetrics(reg prometheus.Registerer) webhookMetrics {
	w := webhookMetrics{
		tries: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "realsync_webhook_deliveries_total",
			Help: "Webhook delivery tries by endpoint id (REALSYNC_WEBHOOKS_FILE) and outcome: delivered, retry (failed, retried later), dead (failed its last try: dead-lettered)."},
			[]string{"endpoint", "outcome"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "realsync_webhook_backlog_refused_total",
			Help: "Webhook deliveries sent to the dead letters untried because the endpoint's backlog in its shard (deliveries pending or retrying) was at REALSYNC_WEBHOOK_MAX_BACKLOG, by endpoint id."},
			[]string{"endpoint"}),
		backlog: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "realsync_webhook_backlog",
			Help: "Each webhook endpoint's backlog (deliveries pending or retrying) in the shard where it is largest, the figure REALSYNC_WEBHOOK_MAX_BACKLOG is checked against, read from Redis every 5 s: the same on every instance. By endpoint id of REALSYNC_WEBHOOKS_FILE."},
			[]string{"endpoint"}),
		bound: prometheus.NewGauge(prometheus.GaugeOpts{Name: "realsync_webhook_max_backlog",
			Help: "REALSYNC_WEBHOOK_MAX_BACKLOG in force on this instance (0: webhooks off): the bound realsync_webhook_backlog is checked against."}),
		lag: prometheus.NewGauge(prometheus.GaugeOpts{Name: "realsync_webhook_outbox_lag_seconds",
			Help: "Age of the oldest event this instance's last round over the webhook outboxes read, or left waiting while the deliveries were full or every endpoint at its backlog bound; 0 when it found them empty: how far delivery runs behind the rooms."}),
		deliveryLag: prometheus.NewGauge(prometheus.GaugeOpts{Name: "realsync_webhook_delivery_lag_seconds",
			Help: "How long the delivery at the head of any shard's webhook deliveries stream has waited there (since its fan-out to an endpoint, its return from the retries or its replay: its try under way, or waiting for a worker), read from Redis every 5 s: the same on every instance; 0 when they are empty. A retry waiting out its backoff is not counted (realsync_webhook_backlog is). realsync_webhook_backlog names the endpoints behind."}),
		delivered: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "realsync_webhook_delivery_seconds",
			Help:    "Time from a webhook event's write to its outbox (Redis' clock) to its delivery (this instance's clock; 0 should it be behind), retries included, by endpoint id of REALSYNC_WEBHOOKS_FILE; replayed dead letters are not observed.",
			Buckets: deliveryBuckets}, []string{"endpoint"}),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "realsync_webhooks_file_reloads_total",
			Help: "Reads of a changed REALSYNC_WEBHOOKS_FILE, by result: ok (read; the endpoints replaced when they differ), error (refused, the endpoints in force kept)."},
			[]string{"result"}),
		mu:      new(sync.Mutex),
		inForce: map[string]bool{},
	}
	reg.MustRegister(w.tries, w.refused, w.backlog, w.bound, w.lag, w.deliveryLag, w.delivered, w.reloads)
	w.reloads.WithLabelValues("ok")
	w.reloads.WithLabelValues("error")
	return w
}

// WebhooksFileLoaded counts a read of a changed endpoints file
// (webhook.Watch's loaded).
func (m *Metrics) WebhooksFileLoaded(ok bool) {
	result := "error"
	if ok {
		result = "ok"
	}
	m.webhooks.reloads.WithLabelValues(result).Inc()
}

// WebhookEndpoints implements webhooks.Metrics: the counters of each of
// ids start at 0 (those it had stay), its backlog gauge at 0 if new; the
// backlog gauge of an endpoint no longer in ids is deleted.
func (m *Metrics) WebhookEndpoints(ids []string) {
	w := &m.webhooks
	w.mu.Lock()
	defer w.mu.Unlock()
	next := make(map[string]bool, len(ids))
	for _, id := range ids {
		next[id] = true
		w.refused.WithLabelValues(id)
		w.delivered.WithLabelValues(id)
		for _, o := range webhookOutcomes {
			w.tries.WithLabelValues(id, o)
		}
		if !w.inForce[id] {
			w.backlog.WithLabelValues(id).Set(0)
		}
	}
	for id := range w.inForce {
		if !next[id] {
			w.backlog.DeleteLabelValues(id)
		}
	}
	w.inForce = next
}

// WebhookBacklog implements webhooks.Metrics: the gauge of each endpoint
// in force (the last WebhookEndpoints); one named that is no longer is
// left out (a report read before its removal).
func (m *Metrics) WebhookBacklog(backlogs map[string]int64) {
	w := &m.webhooks
	w.mu.Lock()
	defer w.mu.Unlock()
	for id, n := range backlogs {
		if w.inForce[id] {
			w.backlog.WithLabelValues(id).Set(float64(n))
		}
	}
}

// WebhookMaxBacklog sets realsync_webhook_max_backlog, the bound of one
// endpoint's backlog in a shard (REALSYNC_WEBHOOK_MAX_BACKLOG), which
// the alerts compare realsync_webhook_backlog with.
func (m *Metrics) WebhookMaxBacklog(n int) { m.webhooks.bound.Set(float64(n)) }

// WebhookDelivered implements webhooks.Metrics.
func (m *Metrics) WebhookDelivered(endpoint, outcome string) {
	m.webhooks.tries.WithLabelValues(endpoint, outcome).Inc()
}

// WebhookDeliveredAfter implements webhooks.Metrics.
func (m *Metrics) WebhookDeliveredAfter(endpoint string, d time.Duration) {
	m.webhooks.delivered.WithLabelValues(endpoint).Observe(d.Seconds())
}

// WebhookRefused implements webhooks.Metrics.
func (m *Metrics) WebhookRefused(endpoint string) {
	m.webhooks.refused.WithLabelValues(endpoint).Inc()
}

// WebhookLag implements webhooks.Metrics.
func (m *Metrics) WebhookLag(d time.Duration) { m.webhooks.lag.Set(d.Seconds()) }

// WebhookDeliveryLag implements webhooks.Metrics.
func (m *Metrics) WebhookDeliveryLag(d time.Duration) { m.webhooks.deliveryLag.Set(d.Seconds()) }
