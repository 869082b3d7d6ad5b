package sse

import (
	"context"
	"fmt"
	"testing"
)

// logSource serves a room's log of versions 1..n; the rest of Source is
// not called.
type logSource struct {
	Source
	n int64
}

func (s logSource) Log(_ context.Context, room string, from, to int64) ([]Event, error) {
	var evs []Event
	for v := from; v <= s.n && (to < 0 || v <= to); v++ {
		evs = append(evs, liveEvent(room, v))
	}
	return evs, nil
}

func liveEvent(room string, v int64) Event {
	return Event{Version: v, Tag: "t", Data: fmt.Appendf(nil, `{"type":"state_patched","roomId":%q,"version":%d}`, room, v)}
}

// A room's live queue holds what waits and no more: a burst past
// roomQueue is dropped and caught up from the log (nothing lost, in
// order), and a room whose worker drained its queue keeps no array larger
// than keptQueue entries, whatever its last burst.
func TestRoomQueueBoundedAndGivenBack(t *testing.T) {
	const burst = roomQueue + 500
	h := &Hub{cfg: Config{Source: logSource{n: burst}}}
	r := newRoom(h, "room-1")
	for v := int64(1); v <= burst; v++ {
		r.push(liveEvent(r.id, v))
	}
	if len(r.pend) != roomQueue {
		t.Fatalf("%d events queued, want the bound %d", len(r.pend), roomQueue)
	}
	select {
	case <-r.wake:
	default:
		t.Fatal("a dropped event did not ask the worker to catch up")
	}
	if !r.acceptQueued() || r.last.Load() != roomQueue {
		t.Fatalf("after the queue: last %d, want %d", r.last.Load(), roomQueue)
	}
	if cap(r.pend) > keptQueue || cap(r.spare) > keptQueue {
		t.Fatalf("a drained room keeps arrays of %d and %d entries", cap(r.pend), cap(r.spare))
	}
	if !r.catchUp() || r.last.Load() != burst {
		t.Fatalf("after catching up: last %d, want %d", r.last.Load(), burst)
	}
	r.push(liveEvent(r.id, burst+1))
	if !r.acceptQueued() || r.last.Load() != burst+1 || len(r.pend) != 0 || cap(r.spare) == 0 {
		t.Fatalf("a small batch: last %d, queue %d (spare array %d), want %d, 0, its array kept",
			r.last.Load(), len(r.pend), cap(r.spare), burst+1)
	}
}
