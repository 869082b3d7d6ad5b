package api_test

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/realsync/realsync/internal/redistest"
)

// statsTTL is how long the test servers reuse a read of the shard stats.
const statsTTL = 50 * time.Millisecond

// scrape is one parse of GET /metrics.
type scrape map[string]*dto.MetricFamily

// scrape reads /metrics and parses it with Prometheus' own text parser.
func (e *env) scrape() scrape {
	e.t.Helper()
	res, err := http.Get(e.url + "/metrics")
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/plain") {
		e.t.Fatalf("GET /metrics: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	mfs, err := p.TextToMetricFamilies(res.Body)
	if err != nil {
		e.t.Fatalf("parsing /metrics: %v", err)
	}
	return mfs
}

// series returns the series of family name whose labels include the
// name/value pairs given.
func (s scrape) series(name string, labels ...string) []*dto.Metric {
	mf := s[name]
	if mf == nil {
		return nil
	}
	var out []*dto.Metric
	for _, m := range mf.GetMetric() {
		ok := true
		for i := 0; i+1 < len(labels); i += 2 {
			ok = ok && label(m, labels[i]) == labels[i+1]
		}
		if ok {
			out = append(out, m)
		}
	}
	return out
}

// value sums the matching series: counters and gauges by value,
// histograms by their count of observations. -1 when none matches.
func (s scrape) value(name string, labels ...string) float64 {
	ms := s.series(name, labels...)
	if len(ms) == 0 {
		return -1
	}
	sum := 0.0
	for _, m := range ms {
		switch {
		case m.Counter != nil:
			sum += m.Counter.GetValue()
		case m.Gauge != nil:
			sum += m.Gauge.GetValue()
		case m.Histogram != nil:
			sum += float64(m.Histogram.GetSampleCount())
		}
	}
	return sum
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// waitMetric waits until f of a fresh scrape holds.
func (e *env) waitMetric(what string, f func(scrape) bool) scrape {
	e.t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; {
		s := e.scrape()
		if f(s) {
			return s
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("%s: not true after 10s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

const (
	joinRoute   = "/v1/rooms/{roomId}/join"
	eventsRoute = "/v1/rooms/{roomId}/events"
)

// After real traffic, /metrics parses and says what happened: requests by
// route pattern (never a raw path), method and status, scripts by name and
// outcome, streams, and the rooms and players in Redis.
func TestMetricsAfterTraffic(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		owner, _ := e.guest("owner")
		var ids []string
		for i := range 3 {
			body := map[string]any{"name": fmt.Sprint("r", i), "mode": "m", "region": "r", "maxPlayers": 3}
			ids = append(ids, e.create(owner, body)["id"].(string))
		}
		before := e.scrape()
		joins := 0
		for i := range 6 { // two guests per room: every room full
			tok, _ := e.guest(fmt.Sprint("p", i))
			want(t, e.do("POST", "/v1/rooms/"+ids[i%3]+"/join", tok, nil), 200, "")
			joins++
			if i == 0 { // joining again is idempotent: one more 200
				want(t, e.do("POST", "/v1/rooms/"+ids[0]+"/join", tok, nil), 200, "")
				joins++
			}
		}
		late, _ := e.guest("late")
		want(t, e.do("POST", "/v1/rooms/"+ids[0]+"/join", late, nil), 409, "ROOM_FULL")
		want(t, e.do("GET", "/no/such/"+ids[0], "", nil), 404, "NOT_FOUND")
		want(t, e.do("GET", "/v1/rooms/"+ids[1]+"/nothing", owner, nil), 404, "NOT_FOUND")
		want(t, e.do("BREW", "/v1/rooms", owner, nil), 405, "METHOD_NOT_ALLOWED")
		// a body over its route's cap is refused before routing, and
		// counted under its route all the same (it was "unmatched")
		big := `{"name":"` + strings.Repeat("x", 100<<10) + `"}`
		want(t, e.do("POST", "/v1/rooms", owner, big, "Content-Type", "application/json"), 413, "PAYLOAD_TOO_LARGE")
		want(t, e.do("POST", "/no/such", owner, big, "Content-Type", "application/json"), 413, "PAYLOAD_TOO_LARGE")
		// refused by authentication, before routing: under its route too
		// (an ops auditor's find: every 401 was "unmatched")
		want(t, e.do("POST", "/v1/rooms/"+ids[0]+"/join", "", nil), 401, "UNAUTHENTICATED")

		s := e.open("/v1/rooms/" + ids[2] + "/events?token=" + e.streamToken(owner, "/v1/rooms/"+ids[2]))
		s.next() // the snapshot
		during := e.waitMetric("the open stream", func(m scrape) bool { return m.value("realsync_sse_streams", "kind", "room") == 1 })
		if v := during.value("realsync_http_requests_total", "route", eventsRoute); v != -1 {
			t.Errorf("an open stream is counted as a request already: %v", v)
		}
		s.close()
		after := e.waitMetric("the stream's end", func(m scrape) bool {
			return m.value("realsync_sse_stream_ends_total", "kind", "room", "reason", "client_gone") == 1 &&
				m.value("realsync_http_requests_total", "route", eventsRoute) == 1
		})

		delta := func(name string, labels ...string) float64 {
			return after.value(name, labels...) - max(0, before.value(name, labels...))
		}
		checks := []struct {
			name   string
			labels []string
			want   float64
		}{
			{"realsync_http_requests_total", []string{"route", joinRoute, "method", "POST", "status", "200"}, float64(joins)},
			{"realsync_http_requests_total", []string{"route", joinRoute, "method", "POST", "status", "409"}, 1},
			{"realsync_http_request_duration_seconds", []string{"route", joinRoute, "method", "POST"}, float64(joins + 2)}, // the 409 and the 401 too
			{"realsync_http_requests_total", []string{"route", "unmatched", "status", "404"}, 2},
			{"realsync_http_requests_total", []string{"route", "unmatched", "method", "other", "status", "405"}, 1},
			{"realsync_http_requests_total", []string{"route", "/v1/rooms", "method", "POST", "status", "413"}, 1},
			{"realsync_http_requests_total", []string{"route", "unmatched", "method", "POST", "status", "413"}, 1},
			{"realsync_http_requests_total", []string{"route", joinRoute, "method", "POST", "status", "401"}, 1},
			{"realsync_http_requests_total", []string{"route", eventsRoute, "method", "GET", "status", "200"}, 1},
			{"realsync_script_calls_total", []string{"script", "room_join", "outcome", "OK"}, float64(joins)},
			{"realsync_script_calls_total", []string{"script", "room_join", "outcome", "ROOM_FULL"}, 1},
			{"realsync_script_duration_seconds", []string{"script", "room_join"}, float64(joins + 1)},
			{"realsync_sse_opens_total", []string{"kind", "room", "start", "fresh"}, 1},
			{"realsync_sse_events_total", []string{"kind", "room", "result", "delivered"}, 1},
		}
		for _, c := range checks {
			if got := delta(c.name, c.labels...); got != c.want {
				t.Errorf("%s%v rose by %v, want %v", c.name, c.labels, got, c.want)
			}
		}
		// An event stream's life is no latency: it stays out of the histogram.
		if n := after.value("realsync_http_request_duration_seconds", "route", eventsRoute); n > 0 {
			t.Errorf("the event stream is in the latency histogram (%v observations)", n)
		}
		for _, m := range after.series("realsync_http_requests_total") {
			if r := label(m, "route"); r != "unmatched" && (!strings.HasPrefix(r, "/") || strings.ContainsAny(r, "?") ||
				strings.Contains(r, ids[0]) || strings.Contains(r, ids[1]) || strings.Contains(r, ids[2])) {
				t.Errorf("route label %q is no route pattern", r)
			}
		}
		// the gauges come from a read of the shard stats reused for statsTTL:
		// wait for one made after the traffic
		time.Sleep(statsTTL)
		after = e.scrape()
		gauges := []struct {
			name   string
			labels []string
			want   float64
		}{
			{"realsync_rooms", []string{"status", "waiting"}, 3},
			{"realsync_rooms", []string{"status", "playing"}, 0},
			{"realsync_players", nil, 9},
			{"realsync_redis_up", nil, 1},
			{"realsync_sse_streams", []string{"kind", "room"}, 0},
			{"realsync_sse_streams", []string{"kind", "lobby"}, 0},
			{"realsync_build_info", []string{"version", "test"}, 1},
		}
		for _, g := range gauges {
			if got := after.value(g.name, g.labels...); got != g.want {
				t.Errorf("%s%v = %v, want %v", g.name, g.labels, got, g.want)
			}
		}
		if after.value("go_goroutines") != -1 {
			t.Error("the test registry has no Go collector, yet go_goroutines is served")
		}
	})
}

// Scrapes while 8 clients join and leave: every scrape parses, counters
// never go back, and the join and leave counters end up risen by exactly
// the number of requests made.
func TestMetricsScrapeUnderLoad(t *testing.T) {
	e := newEnv(t, redistest.Backends(t)[0], true)
	owner, _ := e.guest("owner")
	id := e.create(owner, map[string]any{"name": "busy", "mode": "m", "region": "r", "maxPlayers": 100})["id"].(string)
	const clients, rounds = 8, 25
	tokens := make([]string, clients)
	for i := range tokens {
		tokens[i], _ = e.guest(fmt.Sprint("c", i))
	}
	joins := func(s scrape) float64 {
		return max(0, s.value("realsync_http_requests_total", "route", joinRoute, "status", "200"))
	}
	leaves := func(s scrape) float64 {
		return max(0, s.value("realsync_http_requests_total", "route", "/v1/rooms/{roomId}/leave", "status", "204"))
	}
	before := e.scrape()
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for _, tok := range tokens {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range rounds {
				for _, step := range []struct {
					path   string
					status int
				}{{"/join", 200}, {"/leave", 204}} {
					req, _ := http.NewRequest("POST", e.url+"/v1/rooms/"+id+step.path, nil)
					req.Header.Set("Authorization", "Bearer "+tok)
					res, err := http.DefaultClient.Do(req)
					if err != nil {
						errs <- err
						return
					}
					res.Body.Close()
					if res.StatusCode != step.status {
						errs <- fmt.Errorf("%s: %d", step.path, res.StatusCode)
						return
					}
				}
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	scrapes, last := 0, before
	for running := true; running; scrapes++ {
		select {
		case <-done:
			running = false
		default:
		}
		s := e.scrape()
		if joins(s) < joins(last) || leaves(s) < leaves(last) {
			t.Fatalf("a counter went back: joins %v → %v, leaves %v → %v", joins(last), joins(s), leaves(last), leaves(s))
		}
		last = s
	}
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if j, l := joins(last)-joins(before), leaves(last)-leaves(before); j != clients*rounds || l != clients*rounds {
		t.Errorf("after %d joins and leaves and %d scrapes: joins rose by %v, leaves by %v", clients*rounds, scrapes, j, l)
	}
	if ok := last.value("realsync_script_calls_total", "script", "room_join", "outcome", "OK"); ok < clients*rounds {
		t.Errorf("room_join OK = %v, want at least %d", ok, clients*rounds)
	}
}
