package main

import (
	"flag"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/store"
)

// stripeSettings spread a hot (mode, region) over K shards (issue 15,
// item 3; store.Stripes), parsed apart from the rest of the configuration.
type stripeSettings struct {
	// ModeStripes: REALSYNC_MODE_STRIPES, default 1 (every (mode, region)
	// on one shard); "K" for every mode, or "K,mode=K,..." with per-mode
	// overrides; each K from 1 to REALSYNC_SHARDS.
	ModeStripes store.Stripes
}

// stripeFlags declares the setting's flag on fs, with env's value as
// default; the returned function checks it after fs.Parse against the
// shard count, reporting a bad value through bad.
func stripeFlags(fs *flag.FlagSet, env func(k, def string) string) func(shards int, bad func(name, msg string)) stripeSettings {
	var v string
	fs.StringVar(&v, "mode-stripes", env("REALSYNC_MODE_STRIPES", "1"), "shards (stripes, on different Cluster masters) the rooms of one mode and region spread over: K for every mode, or K,mode=K,... with per-mode overrides; 1..shards (REALSYNC_MODE_STRIPES)")
	return func(shards int, bad func(name, msg string)) stripeSettings {
		st, err := store.ParseStripes(v)
		if err != nil {
			bad("REALSYNC_MODE_STRIPES", err.Error()+" (K, or K,mode=K,...)")
			return stripeSettings{}
		}
		if shards >= 1 && st.Max() > shards {
			bad("REALSYNC_MODE_STRIPES", "a stripe count must be at most REALSYNC_SHARDS ("+strconv.Itoa(shards)+"), got "+strconv.Itoa(st.Max()))
			return stripeSettings{}
		}
		return stripeSettings{ModeStripes: st}
	}
}

// checkStripeModes refuses a per-mode stripe count of a name no room can
// have, or of a mode REALSYNC_MODES does not allow: the override would
// never apply, and the mode meant (a typo, RANKED for ranked) would stay
// on one shard without a word (a tester's find).
func (c Config) checkStripeModes(bad func(name, msg string)) {
	for _, m := range slices.Sorted(maps.Keys(c.ModeStripes.Modes)) {
		switch {
		case !rooms.ValidName(m):
			bad("REALSYNC_MODE_STRIPES", fmt.Sprintf("mode %q: a mode is 1..32 of a-z 0-9 _ -, starting with a letter or digit", m))
		case len(c.Modes) > 0 && !slices.Contains(c.Modes, m):
			bad("REALSYNC_MODE_STRIPES", fmt.Sprintf("mode %q is not allowed by REALSYNC_MODES (%s): its rooms are refused, so the stripe count would never apply", m, strings.Join(c.Modes, ",")))
		}
	}
}
