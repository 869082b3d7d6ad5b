package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// openingOutcomes are the ends of a stream request's wait for a place
// among the instance's openings (api.Metrics' OpeningWaited).
var openingOutcomes = []string{"opened", "gone", "shutdown"}

// openingWaitBuckets (s): a storm of 10 000 openings at 256 at a time
// took 9–14 s (HTTP/1.1 and h2c); a lone wait is a few ms.
var openingWaitBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 25, 60}

// openingMetrics are realsync_sse_openings_waiting and
// realsync_sse_opening_wait_seconds, its series resolved once.
type openingMetrics struct {
	waiting prometheus.Gauge
	waited  map[string]prometheus.Observer
	// reused: realsync_sse_token_reuses_total by stream kind
	reused map[string]prometheus.Counter
}

// streamKinds are the kinds of event stream a stream token opens.
var streamKinds = []string{"room", "lobby", "me"}

// newOpeningMetrics creates the openings' metrics, every series at 0,
// and registers them on reg.
func newOpeningMetrics(reg prometheus.Registerer) openingMetrics {
	o := openingMetrics{
		waiting: prometheus.NewGauge(prometheus.GaugeOpts{Name: "realsync_sse_openings_waiting",
			Help: "Event stream requests waiting for a place among the openings the instance runs at once (256): a storm of openings queued."}),
		waited: map[string]prometheus.Observer{},
		reused: map[string]prometheus.Counter{},
	}
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "realsync_sse_opening_wait_seconds",
		Help:    "Time event stream requests waited for a place among the openings the instance runs at once, by outcome: opened, gone (the client went away first), shutdown; requests that found a place at once are left out.",
		Buckets: openingWaitBuckets}, []string{"outcome"})
	reused := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "realsync_sse_token_reuses_total",
		Help: "Event stream openings refused (401) because their stream token had opened its stream already, by stream kind: a client reconnecting with its old URL, or a stream URL replayed."},
		[]string{"kind"})
	reg.MustRegister(o.waiting, h, reused)
	for _, out := range openingOutcomes {
		o.waited[out] = h.WithLabelValues(out)
	}
	for _, k := range streamKinds {
		o.reused[k] = reused.WithLabelValues(k)
	}
	return o
}

// OpeningsWaiting adds delta to realsync_sse_openings_waiting (api.Metrics).
func (m *Metrics) OpeningsWaiting(delta int) { m.openings.waiting.Add(float64(delta)) }

// OpeningWaited records a stream request's wait for a place (api.Metrics).
func (m *Metrics) OpeningWaited(outcome string, d time.Duration) {
	if o, ok := m.openings.waited[outcome]; ok {
		o.Observe(d.Seconds())
	}
}

// StreamTokenReused counts an opening refused for its used stream token
// (api.Metrics).
func (m *Metrics) StreamTokenReused(kind string) {
	if c, ok := m.openings.reused[kind]; ok {
		c.Inc()
	}
}
