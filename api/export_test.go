package api

import (
	"sync/atomic"
	"time"
)

// MaxStreamOpenings is maxStreamOpenings, for the tests of package api_test.
const MaxStreamOpenings = maxStreamOpenings

// BodyLimit is bodyLimit, for the tests of package api_test.
var BodyLimit = bodyLimit

// NewBrowseCacheAt is NewBrowseCache on a clock that stands still but when
// the test moves it (Add).
func NewBrowseCacheAt(ttl time.Duration, m Metrics) (*BrowseCache, *TestClock) {
	c := &TestClock{}
	c.now.Store(int64(time.Hour))
	return newBrowseCache(ttl, m, c, browseCacheBytes), c
}

// TestClock is a clock the test moves; it never ticks (the cache then
// drops expired answers when they are read, not on a schedule).
type TestClock struct{ now atomic.Int64 }

// NowNano implements otter.Clock.
func (c *TestClock) NowNano() int64 { return c.now.Load() }

// Tick implements otter.Clock: no ticks.
func (c *TestClock) Tick(time.Duration) <-chan time.Time { return nil }

// Add moves the clock by d.
func (c *TestClock) Add(d time.Duration) { c.now.Add(int64(d)) }

// Watching is how many connections h watches (0 off Linux).
func (h *Hangups) Watching() int { return h.watching() }

// KeyRouteScopes returns a copy of the routes that take an API key ("GET
// /v1/rooms/{roomId}") and the scope each needs, for tests built from
// openapi.yaml.
func KeyRouteScopes() map[string]string {
	out := make(map[string]string, len(keyRoutes))
	for k, v := range keyRoutes {
		out[k] = v.String()
	}
	return out
}
