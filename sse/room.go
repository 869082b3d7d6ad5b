package sse

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/realsync/realsync/internal/jsonout"
	"github.com/realsync/realsync/rooms"
)

const (
	// roomQueue bounds the live events waiting for a room's worker; past
	// it events are dropped and recovered from the log. The queue holds
	// only what waits (a room's idle worker keeps at most keptQueue
	// entries' array), not roomQueue entries a room.
	roomQueue = 1024
	// repairDelay spaces attempts to read the log while the store is down.
	repairDelay = 500 * time.Millisecond
	// storeTimeout bounds each store call of a room worker.
	storeTimeout = 5 * time.Second
)

// resyncVersion marks the queue entry that tells a stream to start over
// from a snapshot: the room's history changed under it.
const resyncVersion = -1

// room is one watched room on this instance. Its worker hands events to the
// room's streams in version order without gaps: an event that skips
// versions is held back until the log filled the gap.
type room struct {
	hub   *Hub
	id    string
	ready chan struct{} // closed once subscribed (err says whether it failed)
	err   error
	// refs counts the streams attached; closing is set when the last one
	// left and closed when the room is unsubscribed. Guarded by hub.mu.
	refs    int
	closing bool
	closed  chan struct{}
	in      chan struct{} // pend has events
	wake    chan struct{}
	lost    chan struct{} // the store no longer has the room
	stop    chan struct{}

	last    atomic.Int64 // version of the last event handed to streams
	lastTag string       // its tag; worker only
	ended   bool         // room_closed was handed on; worker only

	mu      sync.Mutex
	streams map[*stream]struct{}
	runs    []*stream // broadcast's streams to write; worker only

	qmu   sync.Mutex
	pend  []Event // live events waiting for the worker, at most roomQueue
	spare []Event // the last batch's array, for the next one
}

func newRoom(h *Hub, id string) *room {
	return &room{hub: h, id: id, ready: make(chan struct{}), closed: make(chan struct{}), in: make(chan struct{}, 1),
		wake: make(chan struct{}, 1), lost: make(chan struct{}, 1), stop: make(chan struct{}), streams: map[*stream]struct{}{}}
}

// setup subscribes the room, then reads its version: every later event
// arrives live, every earlier one is in the log or a snapshot.
func (r *room) setup() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*storeTimeout)
	defer cancel()
	err := r.hub.feed.Subscribe(ctx, r.id)
	if err == nil {
		var vs []int64
		if vs, err = r.hub.cfg.Source.Versions(ctx, []string{r.id}); err == nil {
			r.last.Store(vs[0])
		} else {
			r.hub.feed.Unsubscribe(r.id)
		}
	}
	r.err = err
	if err != nil {
		r.hub.forget(r)
		close(r.ready)
		return
	}
	close(r.ready)
	go r.run()
}

func (r *room) run() {
	var retry <-chan time.Time
	for {
		ok := true
		select {
		case <-r.stop:
			return
		case <-r.in:
			ok = r.acceptQueued()
		case <-r.wake:
			ok = r.catchUp()
		case <-r.lost:
			ok = r.confirmGone()
		case <-retry:
			ok = r.catchUp()
		}
		retry = nil
		if !ok {
			retry = time.After(repairDelay)
		}
	}
}

// push queues a live event without ever blocking the feed; a full queue
// drops it and has the worker catch up from the log.
func (r *room) push(e Event) {
	r.qmu.Lock()
	if len(r.pend) >= roomQueue {
		r.qmu.Unlock()
		r.kick()
		return
	}
	r.pend = append(r.pend, e)
	r.qmu.Unlock()
	select {
	case r.in <- struct{}{}:
	default:
	}
}

// acceptQueued hands on the queued live events. After a failed catch-up
// the rest are dropped: the log has them, for the retry.
func (r *room) acceptQueued() bool {
	r.qmu.Lock()
	batch := r.pend
	r.pend, r.spare = r.spare[:0], nil
	r.qmu.Unlock()
	ok := true
	for _, e := range batch {
		if ok = r.accept(e); !ok {
			break
		}
	}
	if cap(batch) <= keptQueue {
		clear(batch)
		r.qmu.Lock()
		r.spare = batch[:0]
		r.qmu.Unlock()
	}
	return ok
}

// kick asks the worker to catch up from the log.
func (r *room) kick() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// vanished tells the worker the store no longer has the room.
func (r *room) vanished() {
	select {
	case r.lost <- struct{}{}:
	default:
	}
}

// confirmGone runs when the store no longer has the room: a close the feed
// missed is still in the log, and is handed on; otherwise the room's data
// vanished (a flush, a restore without it) and its streams end with
// room_closed, reason gone.
func (r *room) confirmGone() bool {
	if !r.catchUp() {
		return false
	}
	if r.ended {
		return true
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	return r.resync(ctx)
}

// accept hands a live event on. Old versions were already handed on; a
// version jump means events were lost: the log has them, and e too. The
// last version handed on again with another tag means the history
// changed under the streams (a restore brought back an older one and its
// writes reached that version again): the catch-up finds it and starts
// them over. Dropped as old, every event of the new history up to there
// was skipped, and the streams' clients went on from their old history
// (a tester's find: the position check compares versions only, which were
// equal).
func (r *room) accept(e Event) bool {
	last := r.last.Load()
	switch {
	case e.Version < last:
		return true
	case e.Version == last:
		if e.Tag == "" || r.lastTag == "" || e.Tag == r.lastTag {
			return true
		}
		return r.catchUp()
	case e.Version > last+1:
		return r.catchUp()
	}
	e.parse()
	r.deliver(e)
	return true
}

// catchUp hands on every logged event after the last one handed on. If the
// last one is no longer in the log as it was (a failover lost it, or the
// log moved on too far), the history changed: streams start over.
func (r *room) catchUp() bool {
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	last := r.last.Load()
	evs, err := r.hub.cfg.Source.Log(ctx, r.id, max(last, 1), -1)
	if err != nil {
		return false
	}
	if last > 0 {
		if len(evs) == 0 || evs[0].Version != last || (r.lastTag != "" && evs[0].Tag != r.lastTag) {
			return r.resync(ctx)
		}
		evs = evs[1:]
	}
	for _, e := range evs {
		if e.Version != r.last.Load()+1 {
			return r.resync(ctx)
		}
		e.parse()
		r.deliver(e)
	}
	return true
}

// resync restarts the room from its current version and tells every
// stream to send a snapshot; a room that is gone ends its streams.
func (r *room) resync(ctx context.Context) bool {
	vs, err := r.hub.cfg.Source.Versions(ctx, []string{r.id})
	if err != nil {
		return false
	}
	if vs[0] == 0 {
		e := goneEvent(r.id, r.last.Load()+1)
		r.deliver(e)
		return true
	}
	r.last.Store(vs[0])
	r.lastTag = ""
	r.broadcast(Event{Version: resyncVersion})
	return true
}

// goneEvent is the room_closed event (reason gone) that ends the streams
// of a room whose data vanished from the store: one version above the last
// one sent, without a tag (no history holds it).
func goneEvent(id string, version int64) Event {
	data, _ := jsonout.Marshal(rooms.RoomClosedEvent{EventHeader: rooms.EventHeader{Type: rooms.EventRoomClosed,
		RoomID: id, Version: version, TS: stamp(time.Now())}, Reason: rooms.ClosedGone})
	e := Event{Version: version, Data: data}
	e.parse()
	return e
}

func (r *room) deliver(e Event) {
	r.last.Store(e.Version)
	r.lastTag = e.Tag
	r.ended = r.ended || e.meta.Type == "room_closed"
	r.broadcast(e)
}

// broadcast offers e to every stream: one copy, shared read-only. Streams
// whose queue is full drop it (and end). The taken-over streams that were
// idle are written here, lineChunk at a time: the first chunk by the
// worker itself, each other by a goroutine (Hub.writeLines), not a
// goroutine per stream.
func (r *room) broadcast(e Event) {
	dropped := 0
	runs := r.runs[:0]
	r.mu.Lock()
	for st := range r.streams {
		ok, run := st.offer(&e)
		if !ok {
			dropped++
		} else if run {
			runs = append(runs, st)
		}
	}
	r.mu.Unlock()
	if dropped > 0 {
		r.hub.cfg.Metrics.Events(KindRoom, 0, dropped)
	}
	if len(runs) > lineChunk {
		for chunk := range slices.Chunk(runs[lineChunk:], lineChunk) {
			go r.hub.writeLines(slices.Clone(chunk))
		}
		runs = runs[:lineChunk]
	}
	r.hub.writeLines(runs)
	clear(runs)
	if cap(runs) <= 4*lineChunk { // a burst of openings keeps no large array
		r.runs = runs[:0]
	}
}

func (r *room) add(st *stream) {
	r.mu.Lock()
	r.streams[st] = struct{}{}
	r.mu.Unlock()
}

func (r *room) remove(st *stream) {
	r.mu.Lock()
	delete(r.streams, st)
	r.mu.Unlock()
}
