package api_test

import (
	"strings"
	"testing"
	"time"

	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/internal/wait"
)

// A rate limit check that Redis does not answer within the limiter's
// timeout lets its request through unchecked (and the limits pause for a
// second), but is not cut: its answer is read when it comes, and its
// pooled connection kept. Cut (a client with ContextTimeoutEnabled ends
// the call at its context's deadline), the call closed its connection,
// whose reply was still to come: every check in flight when Redis stalled
// past 300 ms closed one, dialed again at once (a DEBUG SLEEP 0.5 at 64
// requests in flight: ~28 new connections each time, none before the
// per-call deadline). Through a proxy that holds the check's reply until
// the request was answered; the store client's pool tells whether a
// connection was closed (dials, its misses, less the connections it has).
func TestSlowRateLimitCheckKeepsItsConnection(t *testing.T) {
	standalone := redistest.StartProxy(t, strings.TrimPrefix(redistest.StandaloneURL(t), "redis://"))
	type backend struct {
		b       redistest.Backend
		proxies []*redistest.Proxy
	}
	backends := []backend{{redistest.Backend{Name: "proxied", URL: "redis://" + standalone.Addr}, []*redistest.Proxy{standalone}}}
	if !testing.Short() {
		addrs, proxies := redistest.StartProxiedCluster(t, 3)
		backends = append(backends, backend{redistest.Backend{Name: "proxied cluster", ClusterAddrs: addrs}, proxies})
	}
	for _, be := range backends {
		t.Run(be.b.Name, func(t *testing.T) {
			e := limitedEnv(t, be.b, "read=1000/s")
			alice, aliceID := e.guest("alice")
			id := e.create(alice, arena)["id"].(string)
			for range 3 { // the scripts known, connections in the pool
				want(t, e.do("GET", "/v1/rooms/"+id, alice, nil), 200, "")
			}
			pool := e.store.Client().PoolStats
			closed := func() int { // of the pool and of its pipelines' (the limiter's)
				s := pool()
				n := int(s.Misses) - int(s.TotalConns)
				if p := s.PipelineStats; p != nil {
					n += int(p.Misses) - int(p.TotalConns)
				}
				return n
			}
			before := closed()
			var held []<-chan struct{}
			var releases []func()
			for _, p := range be.proxies {
				h, release := p.HoldReplyTo(":rl:{u:" + aliceID + "}")
				held, releases = append(held, h), append(releases, release)
				t.Cleanup(release)
				t.Cleanup(func() { p.HoldReplyTo("") })
			}
			// answered unchecked, while the check's reply is held
			r := e.do("GET", "/v1/rooms/"+id, alice, nil)
			want(t, r, 200, "")
			if got := r.header.Get("RateLimit"); got != "" {
				t.Fatalf("a request whose check was not answered: RateLimit %q, want none", got)
			}
			if !redistest.AnyHeld(held, 10*time.Second) {
				t.Fatal("the check's reply was not held")
			}
			for i, p := range be.proxies {
				p.HoldReplyTo("")
				releases[i]()
			}
			wait.Within(t, 10*time.Second, "the check's connection back in the pool", func() bool {
				s := pool()
				return s.IdleConns == s.TotalConns && (s.PipelineStats == nil || s.PipelineStats.IdleConns == s.PipelineStats.TotalConns)
			})
			if n := closed() - before; n != 0 {
				t.Fatalf("%d pooled connection(s) closed by a check not answered in time, want 0", n)
			}
		})
	}
}
