package sse

import (
	"testing"
	"time"
)

// A burst is a run of stormy looks (≥ least/20 openings since the look
// before, scaled to a look's time, and ≥ 4× the usual pace), over a
// second after its last, worth a call with ≥ least openings, at most one
// call every burstGap.
func TestBurstWatch(t *testing.T) {
	type look struct {
		at     time.Duration // since the start
		opened int64         // openings counted since the hub started
		want   int64         // over's answer
	}
	// steady adds n openings at each look from..to (every burstLook).
	steady := func(looks []look, from, to time.Duration, opened, n int64) []look {
		for at := from; at <= to; at += burstLook {
			opened += n
			looks = append(looks, look{at, opened, 0})
		}
		return looks
	}
	// called sets looks[i]'s answer to n.
	called := func(looks []look, i int, n int64) []look {
		looks[i].want = n
		return looks
	}
	tests := []struct {
		name  string
		looks []look
	}{
		{"a burst, then calm", []look{{500 * time.Millisecond, 400, 0}, {time.Second, 1000, 0},
			{1500 * time.Millisecond, 1000, 0}, {2 * time.Second, 1000, 1000}, {2500 * time.Millisecond, 1000, 0}}},
		{"steady churn below the storm's pace is no burst", steady(nil, burstLook, time.Hour, 0, 49)},
		{"churn beside a storm does not keep it from ending", append(steady([]look{
			{500 * time.Millisecond, 2500, 0}, {time.Second, 5000, 0}, {1500 * time.Millisecond, 7500, 0}, {2 * time.Second, 10000, 0}},
			2500*time.Millisecond, 2500*time.Millisecond, 10000, 40), look{3 * time.Second, 10080, 10000})},
		{"a pause within a storm keeps it one burst", []look{{500 * time.Millisecond, 750, 0}, {time.Second, 1500, 0},
			{1500 * time.Millisecond, 1500, 0}, {2 * time.Second, 1950, 0}, {2500 * time.Millisecond, 2400, 0},
			{3 * time.Second, 2400, 0}, {3500 * time.Millisecond, 2400, 2400}}},
		// churn of 120/s from nothing is a storm for its first 18 s, until
		// its pace is the usual one: one call, then none for ten minutes
		{"churn at a storm's pace is the usual pace once it lasts, and a storm beside it ends",
			append(called(steady(steady(nil, burstLook, 10*time.Minute, 0, 60), 10*time.Minute+burstLook, 10*time.Minute+2*time.Second, 1200*60, 5060), 36, 2100),
				look{10*time.Minute + 2500*time.Millisecond, 1200*60 + 4*5060 + 60, 0}, look{10*time.Minute + 3*time.Second, 1200*60 + 4*5060 + 120, 4 * 5060})},
		// 60 openings in a look 2 s late are 15 a look: calm, so the burst
		// of 960 before it ends small
		{"a late look counts its openings over its time", []look{{500 * time.Millisecond, 960, 0}, {2500 * time.Millisecond, 1020, 0},
			{3500 * time.Millisecond, 1020, 0}, {4500 * time.Millisecond, 1020, 0}}},
		{"small bursts do not add up", []look{{500 * time.Millisecond, 600, 0}, {time.Second, 600, 0}, {1500 * time.Millisecond, 600, 0},
			{2 * time.Second, 1200, 0}, {2500 * time.Millisecond, 1200, 0}, {3 * time.Second, 1200, 0}, {10 * time.Second, 1200, 0}}},
		{"the next burst waits for the gap, and is added to meanwhile", []look{{500 * time.Millisecond, 1000, 0},
			{1500 * time.Millisecond, 1000, 1000},
			{3 * time.Second, 2500, 0}, {4 * time.Second, 2500, 0}, {5 * time.Second, 2500, 0},
			{7500 * time.Millisecond, 2500, 0}, {8 * time.Second, 2600, 0}, {9 * time.Second, 2600, 0}, {11 * time.Second, 2600, 0},
			{11500 * time.Millisecond, 2600, 1600}, {30 * time.Second, 2600, 0}}},
	}
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
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
