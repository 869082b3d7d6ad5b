package main

import (
	"testing"
	"time"
)

// realsyncd keeps its heap floor by default (GOGC raised after its
// collections, as /metrics' go_gc_gogc_percent shows, the heap goal within
// the floor), none with
// REALSYNC_GC_MIN_HEAP=0, and leaves an operator's GOGC alone, saying so.
func TestGCMinHeapServed(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	tests := []struct {
		name string
		env  []string
		ok   func(gogc float64) bool
		want string
		log  string // a line the log must hold; "": none
	}{
		{"Default", nil, func(p float64) bool { return p > 100 }, "above 100", ""},
		{"Off", []string{"REALSYNC_GC_MIN_HEAP=0"}, func(p float64) bool { return p == 100 }, "100", ""},
		{"GOGCSet", []string{"GOGC=150"}, func(p float64) bool { return p == 150 }, "150", "REALSYNC_GC_MIN_HEAP is not applied"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in := start(t, bin, append([]string{"REALSYNC_REDIS_URL=", "REALSYNC_REDIS_CLUSTER_ADDRS=", "GOGC="}, tc.env...)...)
			// requests until the server has collected twice (the floor
			// is set after a collection), within 20 s
			var gogc float64
			for deadline := time.Now().Add(20 * time.Second); ; {
				for range 200 {
					if status, _ := call(t, "GET", in.url+"/healthz", "", nil); status != 200 {
						t.Fatalf("healthz: %d", status)
					}
				}
				m := scrapeMetrics(t, in.url+"/metrics")
				gogc = metricValue(m, "go_gc_gogc_percent")
				if gc := m["go_gc_duration_seconds"].GetMetric(); len(gc) == 1 && gc[0].GetSummary().GetSampleCount() >= 2 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("fewer than 2 collections within 20 s of requests")
				}
			}
			if !tc.ok(gogc) {
				t.Errorf("go_gc_gogc_percent %v, want %s", gogc, tc.want)
			}
			// by default the next collection's heap goal is at most the
			// floor, however little is live
			if goal := metricValue(scrapeMetrics(t, in.url+"/metrics"), "go_memstats_next_gc_bytes"); tc.env == nil && goal > 64<<20 {
				t.Errorf("go_memstats_next_gc_bytes %v, past the 64 MiB floor", goal)
			}
			if tc.log != "" {
				in.awaitLog(t, tc.log)
			}
		})
	}
}
