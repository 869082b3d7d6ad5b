package main

import (
	"flag"
	"time"

	"github.com/realsync/realsync/api"
)

// browseSettings say how long an instance keeps the browsing reads'
// answers (api.BrowseCache), parsed apart from the rest of the
// configuration.
type browseSettings struct {
	// BrowseCacheTTL: REALSYNC_BROWSE_CACHE_TTL, default 0 (off): how old
	// a room list page or the lobby's counts may be when this instance
	// answers them from its cache; 1ms..10s.
	BrowseCacheTTL time.Duration
}

// browseFlags declares the setting's flag on fs, with env's value as
// default; the returned function checks it after fs.Parse, reporting a bad
// value through bad.
func browseFlags(fs *flag.FlagSet, env func(k, def string) string) func(bad func(name, msg string)) browseSettings {
	var ttl string
	fs.StringVar(&ttl, "browse-cache-ttl", env("REALSYNC_BROWSE_CACHE_TTL", "0"), "answer room lists and lobby stats from answers at most this old, read once per instance; 0: off, every request reads Redis (REALSYNC_BROWSE_CACHE_TTL)")
	return func(bad func(name, msg string)) browseSettings {
		if ttl == "0" {
			return browseSettings{}
		}
		d, err := time.ParseDuration(ttl)
		if err != nil || d < 0 || (d > 0 && d < time.Millisecond) || d > api.MaxBrowseCacheTTL {
			bad("REALSYNC_BROWSE_CACHE_TTL", "must be 0 (off) or a duration from 1ms to 10s such as 1s")
			return browseSettings{}
		}
		return browseSettings{BrowseCacheTTL: d}
	}
}
