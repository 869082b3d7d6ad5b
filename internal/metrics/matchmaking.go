package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/realsync/realsync/matchmaking"
)

// mmMetrics are the matcher's (issue 17):
// realsync_matchmaking_tickets{mode}, realsync_matchmaking_matches_total{mode},
// realsync_matchmaking_time_to_match_seconds{mode},
// realsync_matchmaking_tickets_ended_total{mode,outcome} and
// realsync_matchmaking_pass_cut_total{mode}.
type mmMetrics struct {
	tickets *prometheus.GaugeVec
	matches *prometheus.CounterVec
	wait    *prometheus.HistogramVec
	ended   *prometheus.CounterVec
	cut     *prometheus.CounterVec
}

var _ matchmaking.Observer = (*Metrics)(nil)

func newMatchmakingMetrics(reg prometheus.Registerer) mmMetrics {
	m := mmMetrics{
		tickets: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "realsync_matchmaking_tickets",
			Help: "Searching tickets of a mode, as the instance holding the mode's matcher lease last read its queue (only the holder reports a mode)."},
			[]string{"mode"}),
		matches: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "realsync_matchmaking_matches_total",
			Help: "Matches made (their room made and users told) by this instance's matcher, by mode."}, []string{"mode"}),
		wait: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "realsync_matchmaking_time_to_match_seconds",
			Help:    "Time from a ticket's creation to its match, one observation per matched ticket, by mode.",
			Buckets: []float64{0.25, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300}}, []string{"mode"}),
		ended: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "realsync_matchmaking_tickets_ended_total",
			Help: "Tickets that ended unmatched, by mode and outcome: expired (by this instance's matcher) or cancelled (through this instance)."},
			[]string{"mode", "outcome"}),
		cut: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "realsync_matchmaking_pass_cut_total",
			Help: "Passes of this instance's matcher cut by their work budget (the next pass goes on from the cut), by mode."},
			[]string{"mode"}),
	}
	reg.MustRegister(m.tickets, m.matches, m.wait, m.ended, m.cut)
	return m
}

// Searching implements matchmaking.Observer.
func (m *Metrics) Searching(mode string, n int) {
	m.matchmaking.tickets.WithLabelValues(mode).Set(float64(n))
}

// Released implements matchmaking.Observer.
func (m *Metrics) Released(mode string) {
	m.matchmaking.tickets.DeleteLabelValues(mode)
}

// Matched implements matchmaking.Observer.
func (m *Metrics) Matched(mode string, waits []time.Duration) {
	m.matchmaking.matches.WithLabelValues(mode).Inc()
	h := m.matchmaking.wait.WithLabelValues(mode)
	for _, w := range waits {
		h.Observe(w.Seconds())
	}
}

// Ended implements matchmaking.Observer.
func (m *Metrics) Ended(mode, outcome string, n int) {
	m.matchmaking.ended.WithLabelValues(mode, outcome).Add(float64(n))
}

// PassCut implements matchmaking.Observer.
func (m *Metrics) PassCut(mode string) {
	m.matchmaking.cut.WithLabelValues(mode).Inc()
}
