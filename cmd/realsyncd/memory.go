package main

import (
	"log/slog"
	"runtime/debug"
	"time"
)

// releaseBurst is the hub's AfterBurst: once a burst of stream openings is
// over, the garbage it left (snapshots, request buffers, grown stacks) is
// collected and its pages given back to the OS at once
// (debug.FreeOSMemory: a forced collection, 46–176 ms after 10 000
// openings on the reference machine), rather than over the minutes
// an idle server's runtime takes. At most once every 10 s (sse.Config).
func releaseBurst(log *slog.Logger) func(openings int64) {
	return func(openings int64) {
		start := time.Now()
		debug.FreeOSMemory()
		log.Info("event streams: a burst of openings is over, its memory given back to the OS",
			"openings", openings, "took", time.Since(start).Round(time.Millisecond))
	}
}
