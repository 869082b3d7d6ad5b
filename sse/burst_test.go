package sse

import (
	"testing"
	"time"
)

// A burst is over once a look finds no opening since the one before, with
// at least least openings since the last release, burstGap after it.
func TestBurstWatch(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	type look struct {
		opened int64
		at     time.Duration // after t0
		want   int64
	}
	tests := []struct {
		name  string
		looks []look
	}{
		{"a burst, then quiet", []look{{400, 1 * time.Second, 0}, {1000, 2 * time.Second, 0}, {1000, 3 * time.Second, 1000}, {1000, 4 * time.Second, 0}}},
		{"quiet only once the openings stop", []look{{1000, 1 * time.Second, 0}, {1001, 2 * time.Second, 0}, {1002, 3 * time.Second, 0}, {1002, 4 * time.Second, 1002}}},
		{"too few openings", []look{{999, 1 * time.Second, 0}, {999, 2 * time.Second, 0}, {999, 3 * time.Second, 0}}},
		{"openings add up across quiet looks", []look{{600, 1 * time.Second, 0}, {600, 2 * time.Second, 0}, {1200, 3 * time.Second, 0}, {1200, 4 * time.Second, 1200}}},
		{"the next burst waits for the gap", []look{
			{1000, 1 * time.Second, 0}, {1000, 2 * time.Second, 1000},
			{2500, 3 * time.Second, 0}, {2500, 4 * time.Second, 0}, {2500, 11 * time.Second, 0},
			{2500, 12 * time.Second, 1500}, {2500, 30 * time.Second, 0}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := burstWatch{least: 1000}
			for i, l := range tc.looks {
				if got := b.over(l.opened, t0.Add(l.at)); got != l.want {
					t.Fatalf("look %d (%d openings at %v): %d, want %d", i, l.opened, l.at, got, l.want)
				}
			}
		})
	}
}
