package main

import (
	"context"
	"net/http"
	"testing"
	"time"
)

// An open loop starts its steps on schedule whatever the answers: against
// a server whose answers take 300 ms, every step due is offered, none is
// skipped while the bound leaves room, and each latency counts from its
// schedule; with a bound of 3 in flight the steps due past it are skipped
// and counted, and what was sent is still answered; without a drain the
// steps still in flight at the end are cut and counted unanswered.
func TestOpenLoopOffersOnSchedule(t *testing.T) {
	const delay = 300 * time.Millisecond
	url := serverWith(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/healthz" {
				time.Sleep(delay)
			}
			h.ServeHTTP(w, r)
		})
	})
	mix, err := ParseMix("healthz=1")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name          string
		maxOut        int
		wantSkipped   bool
		wantMaxInFlow int
		drain         time.Duration
	}{
		{"room for every step", 1000, false, 1000, 10 * time.Second},
		{"a bound of 3", 3, true, 3, 10 * time.Second},
		{"no drain", 1000, false, 1000, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Config{URLs: []string{url}, Clients: 4, Rooms: 2, Duration: time.Second,
				ArrivalRate: 100, MaxOutstanding: tc.maxOut, Drain: tc.drain, GoodWithin: time.Hour}
			r, err := runOps(context.Background(), c, mix)
			if err != nil {
				t.Fatal(err)
			}
			o, s := r.Open, r.Ops["healthz"]
			if o == nil || s == nil {
				t.Fatalf("report %+v", r)
			}
			t.Logf("%+v; healthz %+v", *o, *s)
			sent := o.Offered - o.Skipped
			if (o.Unanswered > 0) != (tc.drain == 0) {
				t.Errorf("%d unanswered with a drain of %s", o.Unanswered, tc.drain)
			}
			if o.Offered != 100 || s.Count+o.Unanswered != sent || len(s.ErrorCodes) != 0 || o.Good != s.Count {
				t.Errorf("offered %d (want 100), skipped %d, unanswered %d, answered %d, good %d", o.Offered, o.Skipped, o.Unanswered, s.Count, o.Good)
			}
			if (o.Skipped > 0) != tc.wantSkipped || o.PeakOutstanding > tc.wantMaxInFlow {
				t.Errorf("skipped %d, peak in flight %d (bound %d)", o.Skipped, o.PeakOutstanding, tc.maxOut)
			}
			if s.P50ms < float64(delay/time.Millisecond) {
				t.Errorf("p50 %.1f ms below the server's %s", s.P50ms, delay)
			}
		})
	}
}
