package sse

import (
	"context"
	"time"
)

// A burst of stream openings (a reconnect storm: an instance restarted, a
// network came back) leaves its garbage behind: every opening's snapshot,
// request buffers and grown handler stack. An idle server collects it only
// at the runtime's forced collection, every 2 minutes, and gives the pages
// back to the OS a few MB a second after that: 10 000 room streams opened
// at once held 12–42 KiB resident a stream 2 s later, 6.5–9.6 KiB once
// released (docs/PERFORMANCE-HISTORY.md, "Giving a burst's memory back").
// Config.AfterBurst is called once such a burst is over, for
// cmd/realsyncd to release it at once.

// Defaults of Config.BurstOpenings and the watch's gaps.
const (
	defaultBurstOpenings = 1000
	// burstQuiet: a burst is over once this long passed without an opening.
	burstQuiet = time.Second
	// burstGap: the least time between two AfterBurst calls, so that
	// bursts coming one after another cost one release each burstGap.
	burstGap = 10 * time.Second
)

// burstWatch decides when a burst of openings is over. Used by one
// goroutine, the hub's watch loop.
type burstWatch struct {
	least    int64     // openings that make a burst (Config.BurstOpenings)
	seen     int64     // the openings counted at the last look
	released int64     // the openings counted at the last release
	at       time.Time // of the last release
}

// over says whether, with opened openings counted since the hub started
// and the last look burstQuiet ago, a burst is over and to be released
// now: no opening since the last look, at least least of them since the
// last release, which was at least burstGap ago. It records the release
// and returns the openings since the one before (0: none due).
func (b *burstWatch) over(opened int64, now time.Time) int64 {
	quiet := opened == b.seen
	b.seen = opened
	n := opened - b.released
	if !quiet || n < b.least || now.Sub(b.at) < burstGap {
		return 0
	}
	b.released, b.at = opened, now
	return n
}

// opened counts a stream's opening and tells the metrics of it.
func (h *Hub) opened(kind, start string) {
	h.openings.Add(1)
	h.cfg.Metrics.StreamOpened(kind, start)
}

// watchBursts calls Config.AfterBurst when a burst of openings is over;
// run every burstQuiet.
func (h *Hub) watchBursts(context.Context) {
	if n := h.burst.over(h.openings.Load(), time.Now()); n > 0 {
		h.cfg.AfterBurst(n)
	}
}
