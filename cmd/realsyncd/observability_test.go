package main

import (
	"bufio"
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/realsync/realsync/internal/metrics"
	"github.com/realsync/realsync/lobby"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/sse"
)

// deployMetric is a line of deploy/lint/metrics.txt.
type deployMetric struct {
	kind   string // counter, gauge, histogram
	labels string // sorted, comma-separated; "-" for none
}

func readDeployMetrics(t *testing.T) map[string]deployMetric {
	t.Helper()
	f, err := os.Open("../../deploy/lint/metrics.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]deployMetric{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		if len(fields) != 3 {
			t.Fatalf("metrics.txt: %q is not <name> <type> <labels>", sc.Text())
		}
		labels := fields[2]
		if labels != "-" {
			ls := strings.Split(labels, ",")
			slices.Sort(ls)
			labels = strings.Join(ls, ",")
		}
		out[fields[0]] = deployMetric{fields[1], labels}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// The metric list the dashboard, the alerts and deploy/lint.sh check
// against (deploy/lint/metrics.txt) is what an instance registers: every
// realsync_ metric with its type and label names, none more, none less.
// Each observer is called once so that every vector has a series.
func TestDeployMetricsList(t *testing.T) {
	t.Parallel()
	reg, m := newRegistry()
	stats := func(context.Context) (lobby.Stats, error) {
		return lobby.Stats{Rooms: map[rooms.Status]int{rooms.Waiting: 1}, Players: 1}, nil
	}
	reg.MustRegister(metrics.NewShardStats(stats, 0, 0).WithInstances(func(context.Context) (metrics.Fleet, error) { return metrics.Fleet{Live: 1, Settings: 1}, nil }).
		WithMasterShards(func(context.Context) (map[string]int, error) { return map[string]int{"127.0.0.1:7000": 16}, nil }))
	reg.MustRegister(metrics.NewOnlineUsers(func(context.Context) (int64, error) { return 1, nil })) // as Run
	reg.MustRegister(metrics.NewCertificateExpiry(time.Now()))                                       // as Run with TLS
	m.Request("/v1/rooms", "GET", 200, time.Millisecond, false)
	m.RateLimited("read", "user")
	m.ScriptCall("room_join", "OK", time.Millisecond)
	m.RedisError("pipeline")
	m.RedisBatch("script", 3)
	m.JanitorAction("expired", 1)
	m.KeysReloaded(true)
	m.StreamOpened(sse.KindRoom, sse.StartFresh)
	m.Events(sse.KindRoom, 1, 0)
	m.StreamEnded(sse.KindRoom, sse.EndTokenExpiry)
	m.APIKeysLoaded(2)
	m.APIKeysReloadFailed()
	m.WebhookEndpoints([]string{"crm"})
	m.WebhookMaxBacklog(10000)
	m.WebhookDelivered("crm", "delivered")
	m.WebhookDeliveredAfter("crm", time.Second)
	m.WebhookRefused("crm")
	m.WebhookLag(time.Second)
	m.WebhookDeliveryLag(time.Second)
	m.Searching("duel", 3)
	m.Matched("duel", []time.Duration{time.Second})
	m.Ended("duel", "expired", 1)
	m.PassCut("duel")
	m.CommitNotReplicated("duel", false)

	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	served := map[string]deployMetric{}
	for _, mf := range mfs {
		name := mf.GetName()
		if !strings.HasPrefix(name, "realsync_") {
			continue
		}
		var kind string
		switch mf.GetType() {
		case dto.MetricType_COUNTER:
			kind = "counter"
		case dto.MetricType_GAUGE:
			kind = "gauge"
		case dto.MetricType_HISTOGRAM:
			kind = "histogram"
		default:
			kind = mf.GetType().String()
		}
		var labels []string
		for _, l := range mf.GetMetric()[0].GetLabel() {
			labels = append(labels, l.GetName())
		}
		slices.Sort(labels)
		ls := strings.Join(labels, ",")
		if ls == "" {
			ls = "-"
		}
		served[name] = deployMetric{kind, ls}
	}
	listed := readDeployMetrics(t)
	for name, got := range served {
		want, ok := listed[name]
		switch {
		case !ok:
			t.Errorf("%s (%s %s) is registered but not in deploy/lint/metrics.txt", name, got.kind, got.labels)
		case got != want:
			t.Errorf("%s: registered as %s {%s}, deploy/lint/metrics.txt says %s {%s}", name, got.kind, got.labels, want.kind, want.labels)
		}
	}
	for name := range listed {
		if _, ok := served[name]; !ok {
			t.Errorf("%s is in deploy/lint/metrics.txt but not registered", name)
		}
	}

	// Every end reason of the sse package is a series from the start, so
	// the dashboard's and alerts' rates need no first occurrence.
	for _, kind := range []string{sse.KindRoom, sse.KindLobby} {
		for _, reason := range []string{sse.EndTokenExpiry, sse.EndLapsed} {
			found := false
			for _, mf := range mfs {
				if mf.GetName() != "realsync_sse_stream_ends_total" {
					continue
				}
				for _, s := range mf.GetMetric() {
					var k, r string
					for _, l := range s.GetLabel() {
						switch l.GetName() {
						case "kind":
							k = l.GetValue()
						case "reason":
							r = l.GetValue()
						}
					}
					found = found || k == kind && r == reason
				}
			}
			if !found {
				t.Errorf("realsync_sse_stream_ends_total{kind=%q,reason=%q} is not served from the start", kind, reason)
			}
		}
	}
}
