package metrics

import "github.com/prometheus/client_golang/prometheus"

// browseRoutes are the routes a BrowseCache answers (api.BrowseCache).
var browseRoutes = []string{"/v1/rooms", "/v1/lobby/stats"}

// browseMetrics is realsync_browse_cache_requests_total, its series
// resolved once: [route][hit].
type browseMetrics map[string][2]prometheus.Counter

// newBrowseMetrics creates realsync_browse_cache_requests_total, every
// series at 0, and registers it on reg.
func newBrowseMetrics(reg prometheus.Registerer) browseMetrics {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "realsync_browse_cache_requests_total",
		Help: "Browsing reads answered through REALSYNC_BROWSE_CACHE_TTL's cache, by route and result: hit (read nothing of its own: a kept answer, or another request's read it waited for), miss (read Redis); a request that ended while it waited counts in neither."},
		[]string{"route", "result"})
	reg.MustRegister(c)
	b := browseMetrics{}
	for _, r := range browseRoutes {
		b[r] = [2]prometheus.Counter{c.WithLabelValues(r, "miss"), c.WithLabelValues(r, "hit")}
	}
	return b
}

// BrowseCache records a browsing read taken through the cache (api.Metrics).
func (m *Metrics) BrowseCache(route string, hit bool) {
	if s, ok := m.browse[route]; ok {
		i := 0
		if hit {
			i = 1
		}
		s[i].Inc()
	}
}
