package main

import (
	"testing"
)

// REALSYNC_MODE_STRIPES: 1 by default, K or K,mode=K,... parse, the flag
// wins, and every bad value (not a number, below 1, above the shard count,
// a mode without a count, an item twice, a mode no room can have or
// REALSYNC_MODES does not allow) is reported naming the variable;
// the store gets what was parsed.
func TestParseConfigModeStripes(t *testing.T) {
	const v = "REALSYNC_MODE_STRIPES"
	tests := []struct {
		name string
		env  map[string]string
		args []string
		want string // store.Stripes.String()
		err  string // want an error naming this, "" for none
	}{
		{name: "Default", want: "1"},
		{name: "Every", env: map[string]string{v: "3"}, want: "3"},
		{name: "Overrides", env: map[string]string{v: "1,ranked=3,casual=2"}, want: "1,casual=2,ranked=3"},
		{name: "OverridesOnly", env: map[string]string{v: "ranked=4"}, want: "1,ranked=4"},
		{name: "UpToShards", env: map[string]string{v: "8", "REALSYNC_SHARDS": "8"}, want: "8"},
		{name: "FlagWins", env: map[string]string{v: "3"}, args: []string{"-mode-stripes", "2"}, want: "2"},
		{name: "Zero", env: map[string]string{v: "0"}, err: v},
		{name: "NotANumber", env: map[string]string{v: "three"}, err: v},
		{name: "ModeZero", env: map[string]string{v: "ranked=0"}, err: v},
		{name: "NoMode", env: map[string]string{v: "=3"}, err: v},
		{name: "DefaultTwice", env: map[string]string{v: "2,3"}, err: v},
		{name: "ModeTwice", env: map[string]string{v: "ranked=2,ranked=3"}, err: v},
		{name: "AboveShards", env: map[string]string{v: "9", "REALSYNC_SHARDS": "8"}, err: v},
		{name: "ModeAboveShards", env: map[string]string{v: "1,ranked=17"}, err: v},
		{name: "FlagBad", args: []string{"-mode-stripes", "-1"}, err: v},
		// a mode no room can have, or not allowed: the override would never
		// apply (a tester's find: both were taken without a word)
		{name: "ModeNotAName", env: map[string]string{v: "1,a b=2"}, err: v + `: mode "a b": a mode is 1..32`},
		{name: "ModeUpperCase", env: map[string]string{v: "1,RANKED=3"}, err: v + `: mode "RANKED"`},
		{name: "ModeNotAllowed", env: map[string]string{v: "1,ranked=3", "REALSYNC_MODES": "battle"}, err: v + `: mode "ranked" is not allowed by REALSYNC_MODES (battle)`},
		{name: "ModeAllowed", env: map[string]string{v: "1,ranked=3", "REALSYNC_MODES": "battle,ranked"}, want: "1,ranked=3"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, ok := parseCase(t, tc.env, tc.args, tc.err)
			if !ok {
				return
			}
			if got := c.ModeStripes.String(); got != tc.want {
				t.Errorf("ModeStripes %q, want %q", got, tc.want)
			}
			if got := storeConfig(c).Stripes.String(); got != tc.want {
				t.Errorf("store gets Stripes %q, want %q", got, tc.want)
			}
		})
	}
}
