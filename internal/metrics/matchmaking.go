package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/realsync/realsync/matchmaking"
)

// mmMetrics are the matcher's (issue 17):
// realsync_matchmaking_tickets{mode}, realsync_matchmaking_matches_total{mode}
// and realsync_matchmaking_time_to_match_seconds.
type mmMetrics struct {
	tickets *prometheus.GaugeVec
	matches *prometheus.CounterVec
	wait    prometheus.Histogram
}

var _ matchmaking.Observer = (*Metrics)(nil)

func newMatchmakingMetrics(reg prometheus.Registerer) mmMetrics {
	m := mmMetrics{
		tickets: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "realsync_matchmaking_tickets",
			Help: "Searching tickets of a mode, as the instance holding the mode's matcher lease last read its queue."},
			[]string{"mode"}),
		matches: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "realsync_matchmaking_matches_total",
			Help: "Matches made (their room made and users told) by this instance's matcher, by mode."}, []string{"mode"}),
		wait: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "realsync_matchmaking_time_to_match_seconds",
			Help:    "Time from a ticket's creation to its match, one observation per matched ticket.",
			Buckets: []float64{0.25, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300}}),
	}
	reg.MustRegister(m.tickets, m.matches, m.wait)
	return m
}

// Searching implements matchmaking.Observer.
func (m *Metrics) Searching(mode string, n int) {
	m.matchmaking.tickets.WithLabelValues(mode).Set(float64(n))
}

// Matched implements matchmaking.Observer.
func (m *Metrics) Matched(mode string, waits []time.Duration) {
	m.matchmaking.matches.WithLabelValues(mode).Inc()
	for _, w := range waits {
		m.matchmaking.wait.Observe(w.Seconds())
	}
}
