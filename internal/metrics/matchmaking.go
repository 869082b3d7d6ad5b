package metrics

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/realsync/realsync/matchmaking"
)

// mmMetrics are the matcher's (issue 17):
// realsync_matchmaking_tickets{mode}, realsync_matchmaking_matches_total{mode},
// realsync_matchmaking_time_to_match_seconds{mode},
// realsync_matchmaking_tickets_ended_total{mode,outcome},
// realsync_matchmaking_pass_cut_total{mode} and
// realsync_matchmaking_commits_not_replicated_total{mode,outcome}.
type mmMetrics struct {
	tickets *prometheus.GaugeVec
	matches *prometheus.CounterVec
	wait    *prometheus.HistogramVec
	ended   *prometheus.CounterVec
	cut     *prometheus.CounterVec
	short   *prometheus.CounterVec

	mu sync.Mutex
	// known are the modes labelled by name once MatchmakingModes was
	// called (nil: every mode); the others share the label "other".
	known map[string]bool
	// others are the queue figures of the modes under "other" this
	// instance reports (Searching until Released): the gauge is their sum.
	others map[string]int
}

// otherMode is the label of every mode MatchmakingModes did not name.
const otherMode = "other"

// MatchmakingModes bounds the mode label of the realsync_matchmaking_*
// metrics to modes (REALSYNC_MODES, else the modes of
// REALSYNC_MATCHMAKING_FILE): any other mode, which a client may make up
// when REALSYNC_MODES is unset, is counted under mode="other", its queue
// figure added to the other modes' there. Without it every mode has its
// own series, which no one removes (a client's made-up modes, 16 series
// each, would grow an instance's metrics for as long as it runs). Call it
// before the matcher and the service run.
func (m *Metrics) MatchmakingModes(modes []string) {
	mm := m.matchmaking
	mm.mu.Lock()
	defer mm.mu.Unlock()
	mm.known = make(map[string]bool, len(modes))
	for _, mode := range modes {
		mm.known[mode] = true
	}
}

// label is mode's label value: mode, or "other" for a mode not named.
func (mm *mmMetrics) label(mode string) string {
	mm.mu.Lock()
	defer mm.mu.Unlock()
	if mm.known == nil || mm.known[mode] {
		return mode
	}
	return otherMode
}

var _ matchmaking.Observer = (*Metrics)(nil)

func newMatchmakingMetrics(reg prometheus.Registerer) *mmMetrics {
	m := &mmMetrics{
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
		short: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "realsync_matchmaking_commits_not_replicated_total",
			Help: "Commits of matches by this instance's matcher, and users' match_found notices of them, that fewer replicas of the mode's Redis master or of the match room's (a notice: the user's) acknowledged than REALSYNC_MATCH_COMMIT_REPLICAS within REALSYNC_MATCH_COMMIT_WAIT, by mode and outcome: held (a repair commits, or tells, again) or told (the replicas short for 10 s: told without them)."},
			[]string{"mode", "outcome"}),
	}
	reg.MustRegister(m.tickets, m.matches, m.wait, m.ended, m.cut, m.short)
	return m
}

// Searching implements matchmaking.Observer.
func (m *Metrics) Searching(mode string, n int) {
	mm := m.matchmaking
	if l := mm.label(mode); l != otherMode {
		mm.tickets.WithLabelValues(l).Set(float64(n))
		return
	}
	mm.mu.Lock()
	defer mm.mu.Unlock()
	if mm.others == nil {
		mm.others = map[string]int{}
	}
	mm.others[mode] = n
	mm.setOthers()
}

// setOthers sets the "other" queue gauge to the sum of the modes under it,
// or removes it when there is none. mm.mu held.
func (mm *mmMetrics) setOthers() {
	if len(mm.others) == 0 {
		mm.tickets.DeleteLabelValues(otherMode)
		return
	}
	sum := 0
	for _, n := range mm.others {
		sum += n
	}
	mm.tickets.WithLabelValues(otherMode).Set(float64(sum))
}

// Released implements matchmaking.Observer.
func (m *Metrics) Released(mode string) {
	mm := m.matchmaking
	if l := mm.label(mode); l != otherMode {
		mm.tickets.DeleteLabelValues(l)
		return
	}
	mm.mu.Lock()
	defer mm.mu.Unlock()
	if _, ok := mm.others[mode]; ok {
		delete(mm.others, mode)
		mm.setOthers()
	}
}

// Matched implements matchmaking.Observer.
func (m *Metrics) Matched(mode string, waits []time.Duration) {
	l := m.matchmaking.label(mode)
	m.matchmaking.matches.WithLabelValues(l).Inc()
	h := m.matchmaking.wait.WithLabelValues(l)
	for _, w := range waits {
		h.Observe(w.Seconds())
	}
}

// Ended implements matchmaking.Observer.
func (m *Metrics) Ended(mode, outcome string, n int) {
	m.matchmaking.ended.WithLabelValues(m.matchmaking.label(mode), outcome).Add(float64(n))
}

// PassCut implements matchmaking.Observer.
func (m *Metrics) PassCut(mode string) {
	m.matchmaking.cut.WithLabelValues(m.matchmaking.label(mode)).Inc()
}

// CommitNotReplicated implements matchmaking.Observer.
func (m *Metrics) CommitNotReplicated(mode string, told bool) {
	outcome := "held"
	if told {
		outcome = "told"
	}
	m.matchmaking.short.WithLabelValues(m.matchmaking.label(mode), outcome).Inc()
}
