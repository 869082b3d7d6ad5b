package main

import (
	"testing"
	"time"
)

// REALSYNC_REDIS_BATCH_WINDOW: natural batching (0) by default, a window up
// to 10ms, off; the flag wins; a bad value is reported naming the variable;
// the store gets what was parsed.
func TestParseConfigRedisBatch(t *testing.T) {
	const name = "REALSYNC_REDIS_BATCH_WINDOW"
	tests := []struct {
		name   string
		env    map[string]string
		args   []string
		off    bool          // want no batching
		window time.Duration // else this window
		err    string        // want an error naming this, "" for none
	}{
		{name: "DefaultNatural"},
		{name: "Zero", env: map[string]string{name: "0"}},
		{name: "ZeroDuration", env: map[string]string{name: "0s"}},
		{name: "Window", env: map[string]string{name: "200us"}, window: 200 * time.Microsecond},
		{name: "Max", env: map[string]string{name: "10ms"}, window: 10 * time.Millisecond},
		{name: "Off", env: map[string]string{name: "off"}, off: true},
		{name: "FlagWins", env: map[string]string{name: "off"}, args: []string{"-redis-batch-window", "1ms"}, window: time.Millisecond},
		{name: "FlagOff", args: []string{"-redis-batch-window", "off"}, off: true},
		{name: "Negative", env: map[string]string{name: "-1ms"}, err: name},
		{name: "TooLong", env: map[string]string{name: "11ms"}, err: name},
		{name: "NoUnit", env: map[string]string{name: "5"}, err: name},
		{name: "Word", env: map[string]string{name: "on"}, err: name},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, ok := parseCase(t, tc.env, tc.args, tc.err)
			if !ok {
				return
			}
			got := storeConfig(c).Batch
			switch {
			case tc.off && got != nil:
				t.Errorf("store batches (%+v), want off", *got)
			case !tc.off && got == nil:
				t.Errorf("store does not batch, want window %s", tc.window)
			case !tc.off && (got.Window != tc.window || got.MaxSize != 0):
				t.Errorf("store batches with %+v, want window %s and the default size", *got, tc.window)
			}
		})
	}
}
