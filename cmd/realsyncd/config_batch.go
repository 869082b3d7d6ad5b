package main

import (
	"flag"
	"time"

	"github.com/realsync/realsync/store"
)

// maxBatchWindow bounds REALSYNC_REDIS_BATCH_WINDOW: a longer wait would
// cost every idle call more than a round trip saves.
const maxBatchWindow = 10 * time.Millisecond

// batchSettings say how script runs are batched per Redis node (issue 15,
// item 2; store.Batching), parsed apart from the rest of the configuration.
type batchSettings struct {
	// RedisBatch: REALSYNC_REDIS_BATCH_WINDOW, default 0 (natural
	// batching: a call leaves at once when its node has no batch out, and
	// calls arriving meanwhile leave together); a duration up to 10ms
	// waits that long for company first; off: every script run is its own
	// round trip. nil when off.
	RedisBatch *store.Batching
}

// batchFlags declares the setting's flag on fs, with env's value as
// default; the returned function checks it after fs.Parse, reporting a bad
// value through bad.
func batchFlags(fs *flag.FlagSet, env func(k, def string) string) func(bad func(name, msg string)) batchSettings {
	var window string
	fs.StringVar(&window, "redis-batch-window", env("REALSYNC_REDIS_BATCH_WINDOW", "0"), "concurrent script runs for one Redis node leave in one pipeline: 0 sends at once when none is out (natural batching), a duration up to 10ms waits for company, off sends each alone (REALSYNC_REDIS_BATCH_WINDOW)")
	return func(bad func(name, msg string)) batchSettings {
		if window == "off" {
			return batchSettings{}
		}
		d, err := time.ParseDuration(window)
		if window == "0" {
			d, err = 0, nil
		}
		if err != nil || d < 0 || d > maxBatchWindow {
			bad("REALSYNC_REDIS_BATCH_WINDOW", "must be off, 0 (natural batching) or a duration up to 10ms such as 200us")
			return batchSettings{}
		}
		return batchSettings{RedisBatch: &store.Batching{Window: d}}
	}
}
