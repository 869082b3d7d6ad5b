package metrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/realsync/realsync/players"
	"github.com/realsync/realsync/sse"
)

// playerMetrics are the personal streams' sessions (issue 16) on this
// instance: realsync_sessions{platform} (gauge) and
// realsync_sessions_replaced_total{platform}; and the personal logs'
// realsync_offline_dropped_total and realsync_offline_expired_total.
type playerMetrics struct {
	sessions *prometheus.GaugeVec
	replaced *prometheus.CounterVec
	dropped  prometheus.Counter
	expired  prometheus.Counter
}

var _ sse.SessionMetrics = (*Metrics)(nil)

func newPlayerMetrics(reg prometheus.Registerer) playerMetrics {
	p := playerMetrics{
		sessions: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "realsync_sessions",
			Help: "Open personal stream sessions on this instance, by platform."}, []string{"platform"}),
		replaced: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "realsync_sessions_replaced_total",
			Help: "Sessions ended by a new session of the same user and platform (REALSYNC_SESSION_POLICY replace), by platform, counted by the instance that opened the new one."},
			[]string{"platform"}),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{Name: "realsync_offline_dropped_total",
			Help: "Events a user's personal log (the offline inbox) dropped at its cap (REALSYNC_OFFLINE_MAX), oldest first, before a platform of the user with a delivery cursor was delivered them (any, when none has one), counted by the instance that sent the event that dropped them."}),
		expired: prometheus.NewCounter(prometheus.CounterOpts{Name: "realsync_offline_expired_total",
			Help: "Events of a user's personal log (the offline inbox) past REALSYNC_OFFLINE_TTL that a personal stream session's opening found undelivered to its platform (its snapshot says resync), counted by the instance that opened it: once per platform and event, but again when the session ended before its position passed them."}),
	}
	reg.MustRegister(p.sessions, p.replaced, p.dropped, p.expired)
	for _, pl := range players.Platforms {
		p.sessions.WithLabelValues(pl)
		p.replaced.WithLabelValues(pl)
	}
	return p
}

// OfflineDropped counts n events a personal log dropped at its cap
// (userlog.Config.Dropped).
func (m *Metrics) OfflineDropped(n int) { m.players.dropped.Add(float64(n)) }

// OfflineExpired counts n events past the offline TTL a session's opening
// found undelivered (userlog.Config.Expired).
func (m *Metrics) OfflineExpired(n int) { m.players.expired.Add(float64(n)) }

// SessionOpened implements sse.SessionMetrics.
func (m *Metrics) SessionOpened(platform string) { m.players.sessions.WithLabelValues(platform).Inc() }

// SessionEnded implements sse.SessionMetrics.
func (m *Metrics) SessionEnded(platform string) { m.players.sessions.WithLabelValues(platform).Dec() }

// SessionsReplaced implements sse.SessionMetrics.
func (m *Metrics) SessionsReplaced(platform string, n int) {
	m.players.replaced.WithLabelValues(platform).Add(float64(n))
}

// OnlineUsers is the collector of realsync_online_users: the users with
// a personal stream session, over every instance (the store's count, read
// at each scrape within a timeout; nothing reported when it fails).
type OnlineUsers struct {
	read    func(context.Context) (int64, error)
	timeout time.Duration
	desc    *prometheus.Desc
}

// NewOnlineUsers returns the collector; read counts the online users
// (store.Store.OnlineUsers).
func NewOnlineUsers(read func(context.Context) (int64, error)) *OnlineUsers {
	return &OnlineUsers{read: read, timeout: time.Second,
		desc: prometheus.NewDesc("realsync_online_users", "Users online (with a personal stream session), over every instance.", nil, nil)}
}

// Describe implements prometheus.Collector.
func (c *OnlineUsers) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect implements prometheus.Collector.
func (c *OnlineUsers) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	if n, err := c.read(ctx); err == nil {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(n))
	}
}
