package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// scrapeMetrics parses GET url with Prometheus' text parser.
func scrapeMetrics(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("GET %s: %d", url, res.StatusCode)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	mfs, err := p.TextToMetricFamilies(res.Body)
	if err != nil {
		t.Fatalf("parsing %s: %v", url, err)
	}
	return mfs
}

// metricValue is the value of the one series of name whose labels include
// the pairs given; -1 when there is none.
func metricValue(mfs map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	for _, m := range mfs[name].GetMetric() {
		ok := true
		for i := 0; i+1 < len(labels); i += 2 {
			found := false
			for _, l := range m.GetLabel() {
				found = found || (l.GetName() == labels[i] && l.GetValue() == labels[i+1])
			}
			ok = ok && found
		}
		if !ok {
			continue
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		}
	}
	return -1
}

// One instance serves /metrics on an address of its own (and 404 on the
// API's) and logs JSON lines; another serves them on the API's address.
// Both see the same rooms in Redis; each counts its own requests, and the
// janitors' actions.
func TestMetricsAndJSONLogs(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	env := append(backendEnv(t, "standalone"), "REALSYNC_ROOM_IDLE_TIMEOUT=5s")
	metricsAddr := freeAddr(t)
	a := start(t, bin, append(env, "REALSYNC_METRICS_ADDR="+metricsAddr, "REALSYNC_LOG_FORMAT=json", "REALSYNC_BROWSE_CACHE_TTL=10s")...)
	b := start(t, bin, env...)

	owner := guest(t, a, "owner")
	status, created := call(t, "POST", a.url+"/v1/rooms", owner, map[string]any{"name": "r", "mode": "m", "region": "r", "maxPlayers": 4})
	if status != 201 {
		t.Fatalf("create: %d %v", status, created)
	}
	id := created["room"].(map[string]any)["id"].(string)
	tokens := []string{owner}
	for i := range 3 {
		tok := guest(t, a, fmt.Sprint("p", i))
		tokens = append(tokens, tok)
		if status, body := call(t, "POST", a.url+"/v1/rooms/"+id+"/join", tok, nil); status != 200 {
			t.Fatalf("join: %d %v", status, body)
		}
	}
	for range 2 { // a reads the list once, then answers it from its cache (REALSYNC_BROWSE_CACHE_TTL)
		if status, body := call(t, "GET", a.url+"/v1/rooms?mode=m", owner, nil); status != 200 || len(body["rooms"].([]any)) != 1 {
			t.Fatalf("list: %d %v", status, body)
		}
	}
	if status, body := call(t, "GET", a.url+"/metrics", "", nil); status != 404 || body["code"] != "NOT_FOUND" {
		t.Errorf("/metrics on the API's address with REALSYNC_METRICS_ADDR set: %d %v", status, body)
	}

	ma := scrapeMetrics(t, "http://"+metricsAddr+"/metrics")
	mb := scrapeMetrics(t, b.url+"/metrics")
	join := []string{"route", "/v1/rooms/{roomId}/join", "method", "POST", "status", "200"}
	checks := []struct {
		what string
		got  float64
		want float64
	}{
		{"joins through a", metricValue(ma, "realsync_http_requests_total", join...), 3},
		{"joins through b", metricValue(mb, "realsync_http_requests_total", join...), -1},
		{"room_join OK on a", metricValue(ma, "realsync_script_calls_total", "script", "room_join", "outcome", "OK"), 3},
		{"waiting rooms seen by a", metricValue(ma, "realsync_rooms", "status", "waiting"), 1},
		{"waiting rooms seen by b", metricValue(mb, "realsync_rooms", "status", "waiting"), 1},
		{"players seen by b", metricValue(mb, "realsync_players"), 4},
		{"redis up on a", metricValue(ma, "realsync_redis_up"), 1},
		{"live instances seen by b", metricValue(mb, "realsync_instances"), 2},
		{"build info", metricValue(ma, "realsync_build_info", "goversion", runtime.Version()), 1},
		{"lists a read", metricValue(ma, "realsync_browse_cache_requests_total", "route", "/v1/rooms", "result", "miss"), 1},
		{"lists a kept", metricValue(ma, "realsync_browse_cache_requests_total", "route", "/v1/rooms", "result", "hit"), 1},
		{"lists through b's cache, off", metricValue(mb, "realsync_browse_cache_requests_total", "route", "/v1/rooms"), 0},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s: %v, want %v", c.what, c.got, c.want)
		}
	}
	for _, name := range []string{"go_goroutines", "process_cpu_seconds_total", "realsync_sse_streams", "realsync_janitor_actions_total"} {
		if ma[name] == nil {
			t.Errorf("%s is not served", name)
		}
	}

	// The room expires once idle (no stream ever opened): one of the two
	// janitors counts it.
	deadline := time.Now().Add(30 * time.Second)
	for {
		ma, mb = scrapeMetrics(t, "http://"+metricsAddr+"/metrics"), scrapeMetrics(t, b.url+"/metrics")
		expired := max(0, metricValue(ma, "realsync_janitor_actions_total", "kind", "expired")) +
			max(0, metricValue(mb, "realsync_janitor_actions_total", "kind", "expired"))
		if expired == 1 {
			break
		}
		if expired > 1 || time.Now().After(deadline) {
			t.Fatalf("%v rooms expired by the janitors, want 1", expired)
		}
		time.Sleep(200 * time.Millisecond)
	}

	a.stop(t)
	lines := strings.Split(strings.TrimSpace(a.logText()), "\n")
	access := 0
	for _, line := range lines {
		var l map[string]any
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatalf("a log line is no JSON: %q", line)
		}
		if l["msg"] == "request" {
			access++
		}
	}
	if access < 9 { // 4 guests, a create, 3 joins, /metrics; /readyz polls too
		t.Errorf("%d access lines", access)
	}
	noTokenLogged(t, tokens, a, b)
}
