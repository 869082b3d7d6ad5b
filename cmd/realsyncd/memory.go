package main

import (
	"log/slog"
	"runtime/debug"
	"time"
)

// afterBurst is the hub's AfterBurst: nil with REALSYNC_SSE_BURST_RELEASE
// false, else releaseBurst.
func (c Config) afterBurst(log *slog.Logger) func(openings int64) {
	if !c.BurstRelease {
		return nil
	}
	return releaseBurst(log)
}

// releaseBurst gives the memory of a burst of stream openings back: once
// it is over, the garbage it left (snapshots, request buffers, grown
// stacks) is collected and its pages given back to the OS at once
// (debug.FreeOSMemory: a forced collection, 52–128 ms after 10 000
// HTTP/1.1 openings, 176 ms after 10 000 h2c ones on the reference
// machine), rather than over the minute or two an idle server's runtime
// takes. At most once every 10 s (sse.Config).
func releaseBurst(log *slog.Logger) func(openings int64) {
	return func(openings int64) {
		start := time.Now()
		debug.FreeOSMemory()
		log.Info("event streams: a burst of openings is over, its memory given back to the OS",
			"openings", openings, "took", time.Since(start).Round(time.Millisecond))
	}
}
