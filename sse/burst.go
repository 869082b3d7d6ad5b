package sse

import (
	"context"
	"time"
)

// A burst of stream openings (a reconnect storm: an instance restarted, a
// network came back) leaves its garbage behind: every opening's snapshot,
// request buffers and grown handler stack. An idle server collects it only
// at the runtime's forced collection, every 2 minutes, and gives the pages
// back to the OS over the following minute: 10 000 room streams opened at
// once held 12–42 KiB resident a stream 2 s later, 6.5–9.6 KiB once
// released (docs/PERFORMANCE-HISTORY.md, "Giving a burst's memory back").
// Config.AfterBurst is called once such a burst is over, for cmd/realsyncd
// to release it at once.
//
// A burst is a run of stormy looks (a look every burstLook; stormy: at
// least a twentieth of Config.BurstOpenings openings since the look
// before, 50 a half second by default, and at least 4 times the usual
// pace, the openings a look averaged over about a minute), over once
// burstCalm passed since its last stormy look, and worth a call when it
// counted at least BurstOpenings. The openings of calm looks count for
// nothing: steady churn, however long and at whatever pace, is no burst
// once its pace is the usual one, and churn beside a storm does not keep
// it from ending. A pause shorter than burstCalm within a storm keeps it
// one burst. A burst that ends within burstGap of the last call is kept,
// and added to, until the gap has passed; a smaller one ends with nothing
// (its garbage is the runtime's, as before). A look that comes late
// (a starved CPU) scales its openings to a look's time.
const (
	defaultBurstOpenings = 1000
	burstLook            = 500 * time.Millisecond
	burstCalm            = time.Second
	// burstPace: the time over which the usual pace is averaged.
	burstPace = time.Minute
	// burstGap: the least time between two AfterBurst calls, so that
	// bursts coming one after another cost one release each burstGap.
	burstGap = 10 * time.Second
)

// burstWatch decides when a burst of openings is over. Used by one
// goroutine, the hub's watch loop.
type burstWatch struct {
	least  int64     // openings that make a burst (Config.BurstOpenings)
	seen   int64     // the openings counted at the last look
	run    int64     // the openings of the burst under way (its stormy looks)
	stormy time.Time // of the burst's last stormy look
	at     time.Time // of the last call
	last   time.Time // of the last look
	pace   float64   // the usual openings a look (an average over burstPace)
}

// over takes a look at now, opened openings counted since the hub
// started, and returns the openings of the burst that is over and to be
// released now, or 0: none.
func (b *burstWatch) over(opened int64, now time.Time) int64 {
	d := opened - b.seen
	b.seen = opened
	look := burstLook
	if !b.last.IsZero() && now.After(b.last) {
		look = now.Sub(b.last)
	}
	b.last = now
	perLook := float64(d) * float64(burstLook) / float64(look) // d over a look's time
	stormy := d > 0 && perLook*20 >= float64(b.least) && perLook >= 4*b.pace
	b.pace += (perLook - b.pace) * min(1, float64(look)/float64(burstPace))
	if stormy {
		b.run += d
		b.stormy = now
		return 0
	}
	switch {
	case b.run == 0 || now.Sub(b.stormy) < burstCalm:
		return 0
	case b.run < b.least:
		b.run = 0 // a small burst: nothing to call for
		return 0
	case now.Sub(b.at) < burstGap:
		return 0 // kept until the gap has passed
	}
	n := b.run
	b.run, b.at = 0, now
	return n
}

// streamOpened counts a stream's opening and tells the metrics of it.
func (h *Hub) streamOpened(kind, start string) {
	h.openings.Add(1)
	h.cfg.Metrics.StreamOpened(kind, start)
}

// watchBursts calls Config.AfterBurst when a burst of openings is over;
// run every burstLook.
func (h *Hub) watchBursts(context.Context) {
	if n := h.burst.over(h.openings.Load(), time.Now()); n > 0 {
		h.cfg.AfterBurst(n)
	}
}
