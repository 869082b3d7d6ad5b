package sse

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"time"

	"github.com/realsync/realsync/rooms"
)

// stream is one client's event stream.
type stream struct {
	lease Lease
	q     chan *Event   // events waiting to be written, bounded; shared, read-only
	over  chan struct{} // closed when the stream must end; why says why
	why   string
	cut   sync.Once
	// renewed is when the lease was last recorded or renewed (Unix ns).
	renewed atomic.Int64
}

// offer queues e without blocking; a full queue ends the stream, whose
// client resumes with Last-Event-ID.
func (st *stream) offer(e *Event) {
	select {
	case st.q <- e:
	default:
		st.end(endSlow)
	}
}

// end ends the stream for reason why; the first reason given wins.
func (st *stream) end(why string) {
	st.cut.Do(func() {
		st.why = why
		close(st.over)
	})
}

// Serve streams room id's events to member u: first a retry line and a
// snapshot or the events after c, then live events, until ctx ends (the
// client went away), the room closes, u leaves it, the client cannot keep
// up, its presence lease lapsed (see renew), or the hub closes. It returns
// an error only when it started nothing, for the caller to answer with:
// ErrRoomNotFound, ErrNotMember or ErrUnavailable from the rooms package.
func (h *Hub) Serve(ctx context.Context, client Client, u rooms.User, id string, c Cursor) error {
	st := &stream{q: make(chan *Event, h.cfg.QueueSize), over: make(chan struct{}),
		lease: Lease{Room: id, UserID: u.ID, Stream: h.streamName()}}
	r, err := h.attach(ctx, id, st)
	if err != nil {
		return err
	}
	o, err := h.cfg.Source.OpenStream(ctx, st.lease, ReadFrom, c, h.cfg.ReplayLimit)
	if err != nil {
		h.detach(r, st)
		return err
	}
	st.lease.PlayerID = o.PlayerID
	st.renewed.Store(time.Now().UnixNano())
	h.track(st)
	why := endClient
	defer func() {
		// A lapsed stream's cleanup waits for a Redis that does not answer:
		// it must not hold up the end of the response, which is what tells
		// the client to reconnect elsewhere.
		if why == endLapsed {
			go h.finish(r, st)
		} else {
			h.finish(r, st)
		}
	}()
	client.Start()
	out := &writer{c: client}
	out.write(retryFrame(0))
	sent, more := h.opening(out, u, o)
	why = h.pump(ctx, st, out, u, sent, more)
	h.cfg.Log.Debug("sse: stream ended", "room", id, "player", st.lease.PlayerID, "why", why)
	return nil
}

// finish releases an ended stream's lease, then detaches it from its room.
func (h *Hub) finish(r *room, st *stream) {
	h.release(st)
	h.detach(r, st)
}

// release drops the stream's presence lease, even when the request is gone.
func (h *Hub) release(st *stream) {
	h.untrack(st)
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	if err := h.cfg.Source.CloseStream(ctx, st.lease); err != nil {
		h.cfg.Log.Debug("sse: closing presence", "room", st.lease.Room, "err", err)
	}
}

// Why a stream ended.
const (
	endClient   = "client gone"
	endShutdown = "instance shutting down"
	endSlow     = "client too slow"
	endWrite    = "write failed"
	endEvent    = "room closed or player left"
	endLapsed   = "presence lapsed: store unreachable"
)

// pump flushes the opening (up to version sent; more: the stream goes on),
// then writes queued events, flushing once per batch, with heartbeats while
// idle. Returns why the stream ended.
func (h *Hub) pump(ctx context.Context, st *stream, out *writer, u rooms.User, sent int64, more bool) string {
	pid := st.lease.PlayerID
	if out.flush() != nil {
		return endWrite
	}
	if !more {
		return endEvent
	}
	idle := time.NewTimer(h.cfg.Heartbeat)
	defer idle.Stop()
	for {
		select {
		case <-ctx.Done():
			return endClient
		case <-h.done:
			return endShutdown
		case <-st.over:
			return st.why
		case <-idle.C:
			out.write(pingFrame)
		case e := <-st.q:
			for n := 0; ; n++ {
				if sent, more = h.next(ctx, out, u, st, e, sent, pid); !more {
					out.flush()
					return endEvent
				}
				if n == cap(st.q) || len(st.q) == 0 {
					break
				}
				e = <-st.q
			}
		}
		if out.flush() != nil {
			return endWrite
		}
		idle.Reset(h.cfg.Heartbeat)
	}
}

// opening writes the snapshot or the replay. Returns the version sent and
// whether the stream goes on.
func (h *Hub) opening(out *writer, u rooms.User, o Opening) (int64, bool) {
	if o.Snapshot != nil {
		out.write(h.snapshotFrame(u, o.Snapshot))
		return o.Snapshot.Version, true
	}
	for _, e := range o.Replay {
		e.parse()
		if e.visibleTo(o.PlayerID) {
			out.write(e.frame)
		}
		if e.ends(o.PlayerID) {
			return e.Version, false
		}
	}
	return o.Version, true
}

// next writes queued event e unless it was already sent or is not for this
// player. A resync marker sends a fresh snapshot. Returns the version sent
// and whether the stream goes on.
func (h *Hub) next(ctx context.Context, out *writer, u rooms.User, st *stream, e *Event, sent int64, pid int) (int64, bool) {
	switch {
	case e.Version == resyncVersion:
		o, err := h.cfg.Source.OpenStream(ctx, st.lease, ReadFrom, Cursor{}, 0)
		if err != nil || o.Snapshot == nil {
			return sent, false
		}
		out.write(h.snapshotFrame(u, o.Snapshot))
		return o.Snapshot.Version, true
	case e.Version <= sent:
		return sent, true
	}
	if e.visibleTo(pid) {
		out.write(e.frame)
	}
	return e.Version, !e.ends(pid)
}

// snapshotEvent is the payload of a snapshot event.
type snapshotEvent struct {
	Type         string      `json:"type"`
	RoomID       string      `json:"roomId"`
	Version      int64       `json:"version"`
	TS           string      `json:"ts"`
	Room         any         `json:"room"`
	State        rooms.State `json:"state"`
	StateVersion int64       `json:"stateVersion"`
}

func (h *Hub) snapshotFrame(u rooms.User, s *Snapshot) []byte {
	state := s.State
	if state == nil {
		state = rooms.State{}
	}
	data, err := json.Marshal(snapshotEvent{Type: "snapshot", RoomID: s.Room.ID, Version: s.Version,
		TS: time.Now().UTC().Truncate(time.Millisecond).Format(time.RFC3339Nano), Room: h.cfg.RoomJSON(rooms.ViewFor(s.Room, u)),
		State: state, StateVersion: s.Room.StateVersion})
	if err != nil {
		h.cfg.Log.Error("sse: encoding snapshot", "room", s.Room.ID, "err", err)
	}
	return appendFrame(nil, formatID(s.Version, s.Tag), "snapshot", data)
}

// Client is the receiving end of a stream, an HTTP response in practice
// (package api): Start sends the response headers; Send writes and flushes
// one batch of frames, within a deadline of its own.
type Client interface {
	Start()
	Send(frames []byte) error
}

// maxKeptBuffer is the largest batch buffer a stream keeps between batches.
const maxKeptBuffer = 4 << 10

// writer batches frames for one Send.
type writer struct {
	c   Client
	buf []byte
	err error
}

func (o *writer) write(b []byte) { o.buf = append(o.buf, b...) }

func (o *writer) flush() error {
	if o.err != nil || len(o.buf) == 0 {
		return o.err
	}
	o.err = o.c.Send(o.buf)
	if cap(o.buf) > maxKeptBuffer {
		o.buf = nil // a snapshot's buffer is not kept for an idle stream
	} else {
		o.buf = o.buf[:0]
	}
	return o.err
}
