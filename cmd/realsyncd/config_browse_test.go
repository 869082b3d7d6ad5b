package main

import (
	"testing"
	"time"
)

// REALSYNC_BROWSE_CACHE_TTL: off (0) by default, a duration from 1ms to
// 10s; the flag wins; a bad value is reported naming the variable.
func TestParseConfigBrowseCache(t *testing.T) {
	const name = "REALSYNC_BROWSE_CACHE_TTL"
	tests := []struct {
		name string
		env  map[string]string
		args []string
		want time.Duration
		err  string // want an error naming this, "" for none
	}{
		{name: "DefaultOff"},
		{name: "Zero", env: map[string]string{name: "0"}},
		{name: "ZeroDuration", env: map[string]string{name: "0s"}},
		{name: "Second", env: map[string]string{name: "1s"}, want: time.Second},
		{name: "Least", env: map[string]string{name: "1ms"}, want: time.Millisecond},
		{name: "Most", env: map[string]string{name: "10s"}, want: 10 * time.Second},
		{name: "FlagWins", env: map[string]string{name: "1s"}, args: []string{"-browse-cache-ttl", "250ms"}, want: 250 * time.Millisecond},
		{name: "TooShort", env: map[string]string{name: "500us"}, err: name},
		{name: "TooLong", env: map[string]string{name: "11s"}, err: name},
		{name: "Negative", env: map[string]string{name: "-1s"}, err: name},
		{name: "NoUnit", env: map[string]string{name: "5"}, err: name},
		{name: "Word", env: map[string]string{name: "on"}, err: name},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, ok := parseCase(t, tc.env, tc.args, tc.err)
			if !ok {
				return
			}
			if c.BrowseCacheTTL != tc.want {
				t.Errorf("BrowseCacheTTL %s, want %s", c.BrowseCacheTTL, tc.want)
			}
		})
	}
}
