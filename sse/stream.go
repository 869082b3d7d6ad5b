package sse

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/realsync/realsync/internal/jsonout"
	"github.com/realsync/realsync/rooms"
)

// held is what the hub holds of an open stream of either kind: its lease,
// which the hub renews, and its end; and what the hub's sweep, the one
// clock of every stream that has no goroutine waiting on its own timers
// (taken over, or served by a looper), reads of it.
type held struct {
	hub   *Hub
	lease Lease
	// free gives the stream's lease back (set before the stream is
	// shared). holds: the stream holds its lease, from its opening until
	// free runs (giveBack), once, at the stream's release or at its cut
	// as slow (end), whichever comes first
	free  func()
	holds atomic.Bool
	// renewed is when the lease was last recorded or renewed (Unix ns).
	renewed atomic.Int64
	why     string // why the stream ends (an End… reason), set before over
	cut     sync.Once
	// wake has a looped stream's goroutine look (looper.Wait): the stream
	// ended, its heartbeat is due (beat), its client went, the hub shuts
	// down; a room stream's, also that pend has events (offer). One
	// channel: a select over one per cause cost an event over h2c about
	// 7 µs of CPU more (docs/PERFORMANCE-HISTORY.md, "One wake-up channel
	// a stream").
	wake chan struct{}
	beat atomic.Bool // a looped stream's heartbeat, asked for by the sweep
	// over: the stream must end (why says why). A flag, not a channel
	// closed once: a looped stream reads it at every wake-up, beside its
	// wake-up channel and other flags.
	over atomic.Bool
	// gone: a looped stream's context ended (set before the wake-up, by
	// the looper's context.AfterFunc). Read at every wake-up in place of
	// the context's Err, which walks the chain of contexts per event and
	// stream (docs/PERFORMANCE-HISTORY.md, "A looped stream's wake-up
	// reads its own flags"). A stream the hub ended looks at Err too: gone
	// may be set a moment after the context ended. A failed write says
	// write_error whatever the context (x/net cancels a stream it reset:
	// the stall watch's cut, cmd/realsyncd's h2 tests).
	gone atomic.Bool

	// line: a looped stream's connection once the hub took it over from
	// its handler (detachLooper), whose client the sweep looks for; nil while
	// its request holds it. Set before the stream is looped.
	line Line

	lastWrite atomic.Int64 // Unix ns of the stream's last write
	endAt     time.Time    // when the token's end ends the stream (zero: never); set before the sweep sees it
	expires   time.Time    // when its token expires, for its token_expiring frame (expiringFrame); zero: no token end
}

// newHeld is the holding of a new stream of hub h with lease l.
func newHeld(h *Hub, l Lease) held {
	return held{hub: h, lease: l, wake: make(chan struct{}, 1)}
}

// end ends the stream for reason why; the first reason given wins. A
// stream cut as slow (EndSlow: its queue was full) gives its lease back
// at once, on a goroutine of its own (Hub.releaseAlone): its write is
// stuck until its client reads or the write timeout (10 s) cuts it, and
// meanwhile its player would show connected, and the stream would hold
// its place among its user's streams (a personal stream: its session).
func (h *held) end(why string) {
	first := false
	h.cut.Do(func() {
		h.why = why
		h.over.Store(true)
		first = true
	})
	h.signal()
	if first && why == EndSlow && h.holds.Load() {
		h.hub.releaseAlone(h.giveBack)
	}
}

// opened records that the stream holds its lease (its opening recorded
// it): call it once the stream is where its release looks for it (among
// the hub's renewed streams). A cut as slow that came before gives the
// lease back now (end gave nothing back: it did not hold it yet); should
// both see the other, giveBack runs the release once.
func (h *held) opened() {
	h.holds.Store(true)
	if h.isOver() && h.why == EndSlow {
		h.hub.releaseAlone(h.giveBack)
	}
}

// giveBack gives the stream's lease back (free) if it holds it still.
func (h *held) giveBack() {
	if h.holds.CompareAndSwap(true, false) {
		h.free()
	}
}

// signal wakes the stream's goroutine, if it has one (see wake).
func (h *held) signal() {
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// isOver reports whether the stream must end (see over).
func (h *held) isOver() bool { return h.over.Load() }

// hungUp records that a looped stream's context ended and wakes it.
func (h *held) hungUp() {
	h.gone.Store(true)
	h.signal()
}

func (h *held) holding() *held { return h }

// leased is an open stream of either kind, as the lease renewal sees it.
type leased interface {
	holding() *held
	end(why string)
}

// stream is one client's event stream. Until its opening is written it is
// its handler's; then either the handler keeps it (pump: a goroutine per
// stream, HTTP/2 and any Client that cannot be taken over) or the hub takes
// its connection over (a Line: no goroutine while it is idle, see line.go).
type stream struct {
	held
	user rooms.User
	room *room

	mu    sync.Mutex
	pend  []*Event // events waiting to be written, bounded; shared, read-only
	spare []*Event // the last batch's array, for the next one
	// Once taken over (line set): busy while a drain runs or is due (it
	// alone writes), ping asks it for a heartbeat.
	line Line
	busy bool
	ping bool

	owed bool  // the line keeps part of a write (TrySend): the drain's first Send finishes it
	sent int64 // version written last; the drain's
}

// keptQueue is the largest array a stream keeps between batches: an idle
// stream holds none larger, however large its last burst.
const keptQueue = 32

// offer queues e without blocking and reports whether it did; a full queue
// ends the stream, whose client resumes with Last-Event-ID. run says that
// the stream was taken over and idle: it is now busy, and the caller must
// write it (Hub.writeLines) or start its drain.
func (st *stream) offer(e *Event) (ok, run bool) {
	st.mu.Lock()
	if len(st.pend) >= st.hub.cfg.QueueSize {
		st.mu.Unlock()
		st.end(EndSlow)
		return false, false
	}
	st.pend = append(st.pend, e)
	pumped := st.line == nil
	run = !pumped && !st.busy
	st.busy = st.busy || run
	st.mu.Unlock()
	if pumped {
		st.signal()
	}
	return true, run
}

// take returns the queued events (nil when none), the pending heartbeat
// request, and whether a drain must go on; a drain that finds nothing to do
// stops being busy.
func (st *stream) take() (batch []*Event, ping bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.takeLocked()
}

// takeLocked is take with st.mu held.
func (st *stream) takeLocked() (batch []*Event, ping bool) {
	batch, ping = st.pend, st.ping
	st.pend, st.spare, st.ping = st.spare[:0], nil, false
	if len(batch) == 0 {
		st.spare, batch = batch, nil
	}
	return batch, ping
}

// recycle gives a written batch's array back for the next one.
func (st *stream) recycle(batch []*Event) {
	if cap(batch) > keptQueue {
		return
	}
	clear(batch)
	st.mu.Lock()
	if st.spare == nil {
		st.spare = batch[:0]
	}
	st.mu.Unlock()
}

// end ends the stream for reason why (the first reason given wins); a
// taken-over stream's drain then hangs up.
func (st *stream) end(why string) {
	st.held.end(why)
	st.kick(false)
}

// kick starts a taken-over stream's drain unless one runs; ping asks it to
// write a heartbeat when it has nothing else to write.
func (st *stream) kick(ping bool) {
	st.mu.Lock()
	if st.line == nil {
		st.mu.Unlock()
		return
	}
	st.ping = st.ping || ping
	run := !st.busy
	st.busy = true
	st.mu.Unlock()
	if run {
		go st.hub.drain(st)
	}
}

// ended reports whether the stream must end.
func (st *stream) ended() bool { return st.isOver() }

// Serve streams room id's events to member u, or to the server (an API key
// with rooms:read: every event, no presence, no membership): first a retry line and a
// snapshot or the events after c, then live events, until ctx ends (the
// client went away), the room closes, u leaves it, the client cannot keep
// up, its presence lease lapsed (see renew), the hub closes, or the
// token expiry set with WithTokenExpiry on ctx comes. When client is a
// Detacher whose connection can be taken over and the expiry is a time
// (WithTokenDeadline) or none, Serve returns once the opening is flushed
// and the hub writes the rest (takeOver); the stream then ends as above,
// a client gone being seen by the hub's sweep instead of ctx. It returns
// an error only when it started nothing, for the caller to answer with:
// ErrRoomNotFound, ErrNotMember, ErrTooManyStreams, ErrStreamLimit or
// ErrUnavailable from the rooms package, or ErrScopeRequired for an API key
// without rooms:read.
func (h *Hub) Serve(ctx context.Context, client Client, u rooms.User, id string, c Cursor) error {
	if err := rooms.RequireScope(u, rooms.ScopeRead); err != nil {
		return err
	}
	st := &stream{user: u, held: newHeld(h, Lease{Room: id, UserID: u.ID, Stream: h.streamName(), Server: u.Server})}
	st.free = func() { h.release(st) }
	r, err := h.attach(ctx, id, st)
	if err != nil {
		return err
	}
	from := c
	if !c.Verifiable() {
		from = Cursor{} // a snapshot (counted as a resume's snapshot when c is set)
	}
	o, err := h.cfg.Source.OpenStream(ctx, st.lease, ReadFrom, from, h.cfg.ReplayLimit)
	if err != nil {
		h.detach(r, st)
		return err
	}
	st.lease.PlayerID = o.PlayerID
	st.room = r
	st.renewed.Store(time.Now().UnixNano())
	if !st.lease.Server {
		h.track(st) // the server's stream holds no lease to renew
	}
	st.opened()
	why := EndClientGone
	defer func() {
		if why != "" { // "": taken over or carried, ended elsewhere
			h.ended(r, st, why)
		}
	}()
	h.streamOpened(KindRoom, startOf(c, o))
	client.Start()
	out := lent(client, h.cfg.Metrics, KindRoom)
	out.write(retryFrame(0))
	sent, end := h.opening(out, u, o)
	if c.Set && o.Snapshot == nil && end == "" {
		out.write(resumedFrame(id, sent))
	}
	if end == "" && h.takeOver(ctx, client, st, out, sent) {
		why = ""
		return nil
	}
	why = ""
	carry(client, h.pump(ctx, st, out, u, sent, end))
	return nil
}

// ended releases room r's stream st, which ended for why (finish), before
// the end of its response is written, within releaseWait (awaitRelease);
// a lapsed stream's release (its Redis did not answer its renewal) is not
// waited for at all.
func (h *Hub) ended(r *room, st *stream, why string) {
	if why == EndLapsed {
		go h.finish(r, st)
		return
	}
	h.awaitRelease(func() { h.finish(r, st) })
}

// releaseWait is the longest an ended stream's end waits for its release.
const releaseWait = 250 * time.Millisecond

// awaitRelease runs an ended stream's release on a goroutine of its own
// and waits for it at most releaseWait. Released first, a stream's place
// among its user's streams is free when its client reads the end and
// opens another (at the user's cap, REALSYNC_MAX_STREAMS_PER_USER; a
// personal stream's session under reject-new); but a Redis that does not
// answer must not hold up the end (its retry hint), which tells the
// client to reconnect, elsewhere in a shutdown: past the wait the release
// goes on alone (bounded by storeTimeout; the hub's Close waits for it
// within its context) and a lease it could not drop lapses. A panic of
// release is logged.
func (h *Hub) awaitRelease(release func()) {
	done := h.releaseAlone(release)
	t := time.NewTimer(releaseWait)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}

// releaseAlone runs a stream's release on a goroutine of its own, which
// the hub's Close waits for; the channel is closed once it ran. A panic
// of release is logged.
func (h *Hub) releaseAlone(release func()) <-chan struct{} {
	done := make(chan struct{})
	h.releasing.Add(1)
	go func() {
		defer h.releasing.Add(-1)
		defer close(done)
		defer func() {
			if v := recover(); v != nil {
				h.cfg.Log.Error("sse: a stream's release panicked", "panic", v)
			}
		}()
		release()
	}()
	return done
}

// ResumedEvent is the type of the event that follows a replay: the client
// resumed from its Last-Event-ID and missed nothing (zero or more events
// were replayed before it). It carries no id, so Last-Event-ID stays that
// of the last room event; a resume that needed a snapshot gets none (the
// snapshot says so). Clients learn at once, even in a quiet room, that a
// reconnection lost nothing.
const ResumedEvent = rooms.EventResumed

// resumedFrame is the resumed event of room id after a replay up to version.
func resumedFrame(id string, version int64) []byte {
	data, _ := jsonout.Marshal(rooms.ResumedEvent{EventHeader: rooms.EventHeader{Type: rooms.EventResumed,
		RoomID: id, Version: version, TS: stamp(time.Now())}})
	return appendFrame(nil, "", ResumedEvent, data)
}

// startOf tells how a stream opened with cursor c and opening o starts.
func startOf(c Cursor, o Opening) string {
	switch {
	case !c.Set:
		return StartFresh
	case o.Snapshot != nil:
		return StartSnapshot
	}
	return StartReplay
}

// finish releases an ended stream's lease (unless its cut did), then
// detaches it from its room.
func (h *Hub) finish(r *room, st *stream) {
	st.giveBack()
	h.detach(r, st)
}

// release drops the stream's presence lease, even when the request is gone.
func (h *Hub) release(st *stream) {
	h.untrack(st)
	if st.lease.Server {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	if err := h.cfg.Source.CloseStream(ctx, st.lease); err != nil {
		h.cfg.Log.Debug("sse: closing presence", "room", st.lease.Room, "err", err)
	}
}

// pump is the rest of room stream st (see looper): it flushes the opening
// (up to version sent; end: why the stream ends after it, "" when it goes
// on), then writes queued events, flushing once per batch, with heartbeats
// while idle; once the stream ended (End…), it releases it.
func (h *Hub) pump(ctx context.Context, st *stream, out *writer, u rooms.User, sent int64, end string) Rest {
	pid := st.lease.PlayerID
	l := newLooper(ctx, h, &st.held, out, func(ctx context.Context) string {
		batch, _ := st.take()
		for _, e := range batch {
			if sent, end = h.next(ctx, out, u, st, e, sent, pid); end != "" {
				return end
			}
		}
		st.recycle(batch)
		return ""
	})
	if end != "" {
		l.begin = func(context.Context) string {
			if out.flush() != nil {
				return EndWriteError
			}
			return end
		}
	}
	l.done = func(why string) {
		defer h.ended(st.room, st, why)
		h.cfg.Metrics.StreamEnded(KindRoom, why)
		h.cfg.Log.Debug("sse: stream ended", "room", st.lease.Room, "player", pid, "why", why)
	}
	return l
}

// opening writes the snapshot or the replay. Returns the version sent and
// why the stream ends after it ("" when it goes on).
func (h *Hub) opening(out *writer, u rooms.User, o Opening) (int64, string) {
	if o.Snapshot != nil {
		h.writeSnapshot(out, u, o.Snapshot)
		return o.Snapshot.Version, ""
	}
	for _, e := range o.Replay {
		e.parse()
		if e.visibleTo(o.PlayerID) {
			out.writeEvent(e.frame)
		}
		if end := e.ends(o.PlayerID); end != "" {
			return e.Version, end
		}
	}
	return o.Version, ""
}

// next writes queued event e unless it was already sent or is not for this
// player. A resync marker sends a fresh snapshot. Returns the version sent
// and why the stream ends after e ("" when it goes on).
func (h *Hub) next(ctx context.Context, out *writer, u rooms.User, st *stream, e *Event, sent int64, pid int) (int64, string) {
	switch {
	case e.Version == resyncVersion:
		o, err := h.cfg.Source.OpenStream(ctx, st.lease, ReadFrom, Cursor{}, 0)
		switch {
		case errors.Is(err, rooms.ErrNotMember):
			return sent, EndLeft
		case errors.Is(err, rooms.ErrRoomNotFound):
			out.writeEvent(goneEvent(st.lease.Room, sent+1).frame)
			return sent + 1, EndRoomClosed
		case ctx.Err() != nil:
			return sent, EndClientGone
		case err != nil || o.Snapshot == nil:
			return sent, EndStoreError
		}
		h.writeSnapshot(out, u, o.Snapshot)
		return o.Snapshot.Version, ""
	case e.Version <= sent:
		return sent, ""
	}
	if e.visibleTo(pid) {
		out.writeEvent(e.frame)
	}
	return e.Version, e.ends(pid)
}

// writeSnapshot adds a snapshot event's frame to out, its JSON encoded
// straight into out's buffer (one line: no newline inside compact JSON).
func (h *Hub) writeSnapshot(out *writer, u rooms.User, s *Snapshot) {
	state := s.State
	if state == nil {
		state = rooms.State{}
	}
	out.borrow()
	start := len(out.buf)
	out.buf = append(out.buf, "id: "...)
	out.buf = append(out.buf, oneLine(formatID(s.Version, s.Tag))...)
	out.buf = append(out.buf, "\nevent: snapshot\ndata: "...)
	b := bytes.NewBuffer(out.buf)
	err := jsonout.NewEncoder(b).Encode(rooms.SnapshotEvent{EventHeader: rooms.EventHeader{Type: rooms.EventSnapshot,
		RoomID: s.Room.ID, Version: s.Version, TS: stamp(time.Now())}, Room: h.cfg.RoomJSON(rooms.ViewFor(s.Room, u)),
		State: state, StateVersion: s.Room.StateVersion})
	if err != nil {
		h.cfg.Log.Error("sse: encoding snapshot", "room", s.Room.ID, "err", err)
		out.buf = out.buf[:start]
		return
	}
	out.buf = append(b.Bytes(), '\n') // Encode ended the data line
	out.events++
}

// Client is the receiving end of a stream, an HTTP response in practice
// (package api): Start sends the response headers; Send writes and flushes
// one batch of frames, within a deadline of its own. A Client that is also
// a Detacher may have its connection taken over once the opening is sent.
type Client interface {
	Start()
	Send(frames []byte) error
}

// Rest is the rest of a stream, from its opening on, as its goroutine
// runs it: Wait blocks until the stream has something to do (an event to
// write, a heartbeat, its end), Step does it and reports whether the
// stream goes on. Once Step reported false the stream ended and was
// released; neither is called again. Step cleans up after itself when it
// panics; Wait must not panic (a select and its results: a carrier
// recovers Step's panics only, keeping its idle frame small). Wait holds
// a few hundred bytes of stack: called from a shallow frame, an idle
// stream's goroutine keeps a small stack (4 KiB over HTTP/2, see api's
// carryStreams; what it held during the opening is given back by the
// next collections).
type Rest interface {
	Wait()
	Step() bool
}

// run runs rest to the stream's end.
func run(rest Rest) {
	for {
		rest.Wait()
		if !rest.Step() {
			return
		}
	}
}

// Carrier is a Client that may run the rest of a stream after Serve (or
// ServeLobby, ServeMe) returned: Carry takes rest, the stream's life
// from its opening on, and reports whether it will run it to its end, on
// the request's goroutine once the handler and its middlewares returned
// (so that an idle stream holds none of their frames or stack), and
// before the response ends. Serve runs rest itself when the Client is no
// Carrier or refuses.
type Carrier interface {
	Carry(rest Rest) bool
}

// carry hands rest to client when it is a Carrier that takes it, else
// runs it now.
func carry(client Client, rest Rest) {
	if c, ok := client.(Carrier); ok && c.Carry(rest) {
		return
	}
	run(rest)
}

// undo is what a stream's opening set up, undone in the reverse order
// when the stream ends: on the way out of the Serve… function when the
// opening failed, after the rest of the stream when it was opened.
type undo struct {
	fs      []func()
	carried bool
}

// add adds f, to run before those added earlier.
func (u *undo) add(f func()) { u.fs = append(u.fs, f) }

func (u *undo) run() {
	for i := len(u.fs) - 1; i >= 0; i-- {
		u.fs[i]()
	}
}

// runUnlessCarried runs it unless carry took it over: deferred by a Serve…
// function once it set something up.
func (u *undo) runUnlessCarried() {
	if !u.carried {
		u.run()
	}
}

// carryLooper runs l, the rest of the stream, calling done and then u
// when it ends (also when a Step panics), now or later (see carry).
func carryLooper(u *undo, client Client, l *looper, done func(why string)) {
	u.carried = true
	l.done = func(why string) {
		defer u.run()
		done(why)
	}
	if !l.h.detachLooper(client, l) {
		carry(client, l)
	}
}

// sender is what a writer sends its batches to: a Client or a Line.
type sender interface {
	Send(frames []byte) error
}

// maxKeptBuffer is the largest batch buffer a writer that does not lend
// keeps between batches.
const maxKeptBuffer = 4 << 10

// writer batches frames for one Send and counts the events delivered.
type writer struct {
	c      sender
	m      Metrics
	kind   string
	buf    []byte
	events int // event frames in buf
	err    error
	// lend: buf comes from linePool for each batch and goes back after it
	// (a stream served by its own goroutine: an idle one holds no buffer)
	lend   bool
	bp     *[]byte // buf's pool entry, while lent
	sentAt int64   // Unix ns of the last Send that succeeded
}

// lent returns a writer of stream kind to c that lends its buffers.
func lent(c sender, m Metrics, kind string) *writer {
	return &writer{c: c, m: m, kind: kind, lend: true}
}

// take makes sure the writer holds a buffer of linePool.
func (o *writer) take() {
	if o.bp == nil {
		o.bp = linePool.Get().(*[]byte)
		o.buf = append((*o.bp)[:0], o.buf...)
	}
}

// borrow is take for a writer that lends its buffers (the others keep
// theirs between batches).
func (o *writer) borrow() {
	if o.lend {
		o.take()
	}
}

// release gives the writer's buffer back to linePool, unless it grew past
// maxPooledBuffer.
func (o *writer) release() {
	if o.bp != nil && cap(o.buf) <= maxPooledBuffer {
		*o.bp = o.buf[:0]
		linePool.Put(o.bp)
	}
	o.bp, o.buf = nil, nil
}

// write adds a frame that is no event (retry, heartbeat).
func (o *writer) write(b []byte) {
	o.borrow()
	o.buf = append(o.buf, b...)
}

// writeEvent adds an event's frame.
func (o *writer) writeEvent(b []byte) {
	o.borrow()
	o.buf = append(o.buf, b...)
	o.events++
}

func (o *writer) flush() error {
	if o.err != nil || len(o.buf) == 0 {
		return o.err
	}
	o.err = o.c.Send(o.buf)
	if o.err == nil {
		o.sentAt = time.Now().UnixNano()
		if o.events > 0 {
			o.m.Events(o.kind, o.events, 0)
		}
	}
	o.events = 0
	switch {
	case o.lend:
		o.release()
	case cap(o.buf) > maxKeptBuffer:
		o.buf = nil // a snapshot's buffer is not kept for an idle stream
	default:
		o.buf = o.buf[:0]
	}
	return o.err
}
