package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/realsync/realsync/store/webhooks"
)

// webhookMetrics are the webhook dispatcher's (issue 16 item 6):
// realsync_webhook_deliveries_total{endpoint,outcome},
// realsync_webhook_backlog_refused_total{endpoint} and
// realsync_webhook_outbox_lag_seconds; and the endpoints file's reloads,
// realsync_webhooks_file_reloads_total{result}. The endpoint label is an
// endpoint id of the endpoints file (one removed by a reload keeps its
// series until the instance restarts).
type webhookMetrics struct {
	tries   *prometheus.CounterVec
	refused *prometheus.CounterVec
	lag     prometheus.Gauge
	reloads *prometheus.CounterVec
}

var _ webhooks.Metrics = (*Metrics)(nil)

func newWebhookMetrics(reg prometheus.Registerer) webhookMetrics {
	w := webhookMetrics{
		tries: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "realsync_webhook_deliveries_total",
			Help: "Webhook delivery tries by endpoint id (REALSYNC_WEBHOOKS_FILE) and outcome: delivered, retry (failed, retried later), dead (failed its last try: dead-lettered)."},
			[]string{"endpoint", "outcome"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "realsync_webhook_backlog_refused_total",
			Help: "Webhook deliveries sent to the dead letters untried because the endpoint's backlog in its shard (deliveries pending or retrying) was at REALSYNC_WEBHOOK_MAX_BACKLOG, by endpoint id."},
			[]string{"endpoint"}),
		lag: prometheus.NewGauge(prometheus.GaugeOpts{Name: "realsync_webhook_outbox_lag_seconds",
			Help: "Age of the oldest event this instance's last round over the webhook outboxes read, or left waiting while the deliveries were full or every endpoint at its backlog bound; 0 when it found them empty: how far delivery runs behind the rooms."}),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "realsync_webhooks_file_reloads_total",
			Help: "Reads of a changed REALSYNC_WEBHOOKS_FILE, by result: ok (read; the endpoints replaced when they differ), error (refused, the endpoints in force kept)."},
			[]string{"result"}),
	}
	reg.MustRegister(w.tries, w.refused, w.lag, w.reloads)
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

// WebhookDelivered implements webhooks.Metrics.
func (m *Metrics) WebhookDelivered(endpoint, outcome string) {
	m.webhooks.tries.WithLabelValues(endpoint, outcome).Inc()
}

// WebhookRefused implements webhooks.Metrics.
func (m *Metrics) WebhookRefused(endpoint string) {
	m.webhooks.refused.WithLabelValues(endpoint).Inc()
}

// WebhookLag implements webhooks.Metrics.
func (m *Metrics) WebhookLag(d time.Duration) { m.webhooks.lag.Set(d.Seconds()) }
