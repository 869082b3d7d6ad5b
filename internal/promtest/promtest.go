// Package promtest reads one series from a Prometheus registry, for tests.
package promtest

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// Sample reads the series of name with the labels (name, value pairs)
// from reg: a counter's or gauge's value, a histogram's sample count; ok
// is false when there is no such series.
func Sample(tb testing.TB, reg prometheus.Gatherer, name string, labels ...string) (v float64, ok bool) {
	tb.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		tb.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, mt := range mf.GetMetric() {
			have := map[string]string{}
			for _, lp := range mt.GetLabel() {
				have[lp.GetName()] = lp.GetValue()
			}
			for i := 0; i+1 < len(labels); i += 2 {
				if have[labels[i]] != labels[i+1] {
					continue series
				}
			}
			switch {
			case mt.GetCounter() != nil:
				return mt.GetCounter().GetValue(), true
			case mt.GetGauge() != nil:
				return mt.GetGauge().GetValue(), true
			case mt.GetHistogram() != nil:
				return float64(mt.GetHistogram().GetSampleCount()), true
			}
		}
	}
	return 0, false
}
