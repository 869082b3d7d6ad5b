package sse

import (
	"context"
	"sync"
	"time"
)

// Line is a stream's connection once the hub took it over from the HTTP
// server: the adapter frames the response body (HTTP/1.1's chunks) and
// bounds each write; the hub decides what to write and when. Send and End
// are called by one goroutine at a time; Alive may be called meanwhile.
type Line interface {
	// Send writes frames as one piece of the response body, within the
	// stream write timeout.
	Send(frames []byte) error
	// Alive reports, without blocking, whether the client may still be
	// there: false once it closed its end of the connection or the
	// connection failed.
	Alive() bool
	// End writes final (none when empty) and the end of the body, within a
	// short deadline, then closes the connection.
	End(final []byte)
}

// TrySender is a Line that can also write without blocking, so that the
// room's worker writes an event to its idle streams itself instead of
// starting a goroutine per stream (room.broadcast). Called by the one
// goroutine that may write, like Send.
type TrySender interface {
	// TrySend writes frames as one piece of the response body without
	// waiting for the connection; it reports whether all of it went out.
	// When not (the client's receive window is full), the line keeps what
	// did not go out (a copy) and the next Send writes it first; Send(nil)
	// writes just that. An error is the connection's.
	TrySend(frames []byte) (bool, error)
}

// HangupNotifier is a Line that can tell when its client hangs up, as it
// happens, rather than when the hub's sweep asks (Alive, within a second):
// OnHangup has f called once then, on a goroutine that f must not block
// (at once when the client had hung up already). The hub then ends the
// stream, and releases its place among its user's streams, so that a
// client that closed a stream and opens another at once is not refused
// for the one it closed (REALSYNC_MAX_STREAMS_PER_USER, a personal
// stream's session under reject-new). A line may never call f: the sweep
// then sees the client gone.
type HangupNotifier interface {
	OnHangup(f func())
}

// onHangup has the stream of line ended by end once its client hangs up,
// when line can tell (HangupNotifier).
func onHangup(line Line, end func()) {
	if n, ok := line.(HangupNotifier); ok {
		n.OnHangup(end)
	}
}

// Detacher is a Client whose connection the hub may take over once the
// opening of a room stream is written and flushed, so that an idle stream
// holds no goroutine and no buffer: Detach returns the Line, or nil when
// the connection cannot be taken over (HTTP/2, TLS), and the stream stays
// with its handler. After a Line was returned the handler must return
// without writing anything more.
type Detacher interface {
	// Detachable reports, without side effects, whether Detach may
	// return a Line: false leaves the opening unflushed, for its rest to
	// write (HTTP/2, TLS).
	Detachable() bool
	Detach() Line
}

// lineTick is the most time between two sweeps of the taken-over streams
// (heartbeats, gone clients, token expiry); a shorter heartbeat sweeps
// twice per heartbeat.
const lineTick = time.Second

// sweepEvery is the time between two sweeps for a heartbeat of hb.
func sweepEvery(hb time.Duration) time.Duration { return min(lineTick, hb/2) }

// takeOver hands stream st to the hub when its client can be taken over
// and its end is a time (not a channel): the opening in out is flushed,
// the connection becomes a Line, and the stream lives on as st alone,
// written by a drain goroutine that runs only while it has something to
// write (drain), its heartbeats, gone client and token expiry seen by the
// hub's sweep. Reports whether it did; false leaves st to the handler.
func (h *Hub) takeOver(ctx context.Context, c Client, st *stream, out *writer, sent int64) bool {
	d, ok := c.(Detacher)
	if !ok || !d.Detachable() {
		return false
	}
	endAt, expires, ok := deadlineOf(ctx)
	if !ok || ctx.Err() != nil || out.flush() != nil {
		return false
	}
	line := d.Detach()
	if line == nil {
		return false
	}
	st.sent, st.endAt, st.expires = sent, endAt, expires
	st.lastWrite.Store(time.Now().UnixNano())
	// Both under h.mu, so that no drain hangs up (leaving h.lines) before
	// st is among the lines, and the sweep finds st.line set.
	h.mu.Lock()
	st.mu.Lock()
	st.line = line
	run := len(st.pend) > 0 || st.ended()
	st.busy = run
	st.mu.Unlock()
	h.lines[st] = struct{}{}
	h.mu.Unlock()
	onHangup(line, func() { st.end(EndClientGone) })
	if run {
		go h.drain(st)
	}
	select {
	case <-h.done: // Close may have swept the lines before st was among them
		st.end(EndShutdown)
	default:
	}
	return true
}

// linePool holds the batch buffers of drains: an idle stream holds none.
var linePool = sync.Pool{New: func() any { return new([]byte) }}

// maxPooledBuffer is the largest buffer given back to linePool.
const maxPooledBuffer = 64 << 10

// drain writes a taken-over stream's queued events (and the heartbeat
// asked for), batch after batch, until there is nothing left; it hangs up
// when the stream ends. One drain at most runs per stream (st.busy). A
// panic ends the stream alone (recoverDrain).
func (h *Hub) drain(st *stream) {
	out := writer{c: st.line, m: h.cfg.Metrics, kind: KindRoom}
	out.take()
	defer out.release()
	defer h.recoverDrain(st, &out)
	pid := st.lease.PlayerID
	for {
		if st.ended() {
			h.hangUp(st, &out)
			return
		}
		if st.owed {
			// the rest of a write the room's worker began (tryDrain)
			st.owed = false
			if st.line.Send(nil) != nil {
				st.held.end(EndWriteError)
				continue
			}
			st.lastWrite.Store(time.Now().UnixNano())
		}
		batch, ping := st.take()
		if batch == nil && !ping {
			st.mu.Lock()
			idle := len(st.pend) == 0 && !st.ping
			if idle && !st.ended() {
				st.busy = false
				st.mu.Unlock()
				return
			}
			st.mu.Unlock()
			continue
		}
		end := ""
		for _, e := range batch {
			if st.sent, end = h.next(h.ctx, &out, st.user, st, e, st.sent, pid); end != "" {
				break
			}
		}
		st.recycle(batch)
		if ping && len(out.buf) == 0 {
			out.write(pingFrame)
		}
		if len(out.buf) > 0 {
			if out.flush() != nil && end == "" {
				end = EndWriteError
			}
			st.lastWrite.Store(time.Now().UnixNano())
		}
		if end != "" {
			st.held.end(end)
		}
	}
}

// recoverDrain, deferred by drain, ends taken-over stream st when its
// drain panicked: logged, then released and hung up as a stream whose
// client left (EndClientGone), so that a fault in one stream costs that
// stream, not the instance and every stream on it (a panic on a goroutine
// of the hub's own is not recovered by net/http, as a handler's is).
func (h *Hub) recoverDrain(st *stream, out *writer) {
	v := recover()
	if v == nil {
		return
	}
	h.faulted(st, v)
	defer func() {
		// its line broken beyond ending (End panicked too)
		if v := recover(); v != nil {
			h.cfg.Log.Error("sse: a taken-over stream's hang-up panicked", "panic", v, "room", st.lease.Room)
		}
	}()
	h.hangUp(st, out)
}

// faulted logs the panic v of taken-over stream st's writing and ends
// st as a stream whose client left (EndClientGone).
func (h *Hub) faulted(st *stream, v any) {
	h.cfg.Log.Error("sse: a taken-over stream panicked", "panic", v, "room", st.lease.Room, "player", st.lease.PlayerID)
	st.held.end(EndClientGone)
}

// lineChunk is the most streams of a room one goroutine writes an event to
// (room.broadcast): the room's worker writes the first chunk, one goroutine
// each the others, so that a room of many streams still uses every core.
const lineChunk = 128

// writeLines writes what each of sts (taken-over streams whose drain is
// due: busy) has queued, on this goroutine where that cannot block
// (tryDrain), starting a drain for the others.
func (h *Hub) writeLines(sts []*stream) {
	out := writer{m: h.cfg.Metrics, kind: KindRoom}
	out.take()
	for _, st := range sts {
		if !h.tryDrain(st, &out) {
			go h.drain(st)
		}
	}
	out.release()
}

// tryDrain writes busy stream st's queued events (or the heartbeat asked
// for) without blocking, using out's buffer, when that needs no store call
// (no resync) and ends nothing (no room_closed, not its player's
// player_left): the work of one round of drain, minus its goroutine.
// Reports whether st is done (no longer busy); false leaves it busy for a
// drain to take over: the stream ended, it has such an event, its line
// cannot write without blocking, or the connection took only part of the
// write (st.owed: the line keeps the rest, the drain writes it first). A
// panic ends st (EndClientGone) for its drain to hang up.
func (h *Hub) tryDrain(st *stream, out *writer) (done bool) {
	defer func() {
		// a panic ends st alone, not the room's worker: its drain, started
		// by writeLines, hangs it up
		if v := recover(); v != nil {
			out.buf, out.events = out.buf[:0], 0
			h.faulted(st, v)
			done = false
		}
	}()
	ts, ok := st.line.(TrySender)
	if !ok || st.ended() {
		return false
	}
	pid := st.lease.PlayerID
	st.mu.Lock()
	for _, e := range st.pend {
		if e.Version == resyncVersion || e.ends(pid) != "" {
			st.mu.Unlock()
			return false
		}
	}
	batch, ping := st.takeLocked()
	st.mu.Unlock()
	for _, e := range batch {
		st.sent, _ = h.next(h.ctx, out, st.user, st, e, st.sent, pid)
	}
	st.recycle(batch)
	if ping && len(out.buf) == 0 {
		out.write(pingFrame)
	}
	if len(out.buf) > 0 {
		all, err := ts.TrySend(out.buf)
		if events := out.events; err == nil && events > 0 {
			h.cfg.Metrics.Events(KindRoom, events, 0) // written, or kept by the line to write first
		}
		out.buf, out.events = out.buf[:0], 0
		if err != nil {
			st.held.end(EndWriteError)
			return false
		}
		st.lastWrite.Store(time.Now().UnixNano())
		if !all {
			st.owed = true
			return false
		}
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if len(st.pend) > 0 || st.ping || st.ended() {
		return false
	}
	st.busy = false
	return true
}

// hangUp ends a taken-over stream: the metrics, its presence lease and
// its room (ended: waited for within releaseWait, not for a lapsed
// stream, whose Redis may not answer), then its last frame (endFrame: the
// shutdown's or the lifetime's retry, the token_expiring event) and the
// end of the body, as when its request held it: a client that reconnects
// once its body ended finds its place among its user's streams free. The
// drain stays busy: nothing is written after.
func (h *Hub) hangUp(st *stream, out *writer) {
	why := st.why
	h.cfg.Metrics.StreamEnded(KindRoom, why)
	h.cfg.Log.Debug("sse: stream ended", "room", st.lease.Room, "player", st.lease.PlayerID, "why", why)
	h.ended(st.room, st, why)
	st.line.End(endFrame(why, st.expires))
	h.mu.Lock()
	delete(h.lines, st)
	h.mu.Unlock()
}

// sweep is the shared clock of the streams, every lineTick (or half the
// heartbeat): a stream past its end ends (EndTokenExpiry, EndLifetime); a
// taken-over one whose client closed its connection ends (EndClientGone),
// as its Line's Alive says: on Linux the server's api.Hangups, told by the
// kernel, without a system call per stream (elsewhere, or without one, a
// read that does not block: one system call per stream and tick); one
// that would write nothing for a heartbeat is sent one (so a
// ping follows the last write within the heartbeat, at least a tick
// before it). A client that went away is thus noticed within a tick, and
// no stream needs a timer of its own.
func (h *Hub) sweep(context.Context) {
	h.mu.Lock()
	sts := make([]*stream, 0, len(h.lines))
	for st := range h.lines {
		sts = append(sts, st)
	}
	hds := make([]*held, 0, len(h.looped))
	for hd := range h.looped {
		hds = append(hds, hd)
	}
	h.mu.Unlock()
	now := time.Now()
	// a stream quiet for a heartbeat less one sweep gets its ping now: the
	// next sweep would be past the heartbeat (proxies' idle timeouts are
	// set from it)
	idle := now.Add(-(h.cfg.Heartbeat - sweepEvery(h.cfg.Heartbeat))).UnixNano()
	for _, st := range sts {
		switch {
		case !st.endAt.IsZero() && !now.Before(st.endAt):
			st.end(deadlineEnd(st.expires))
		case !st.line.Alive():
			st.end(EndClientGone)
		case st.lastWrite.Load() <= idle:
			st.kick(true)
		}
	}
	for _, hd := range hds {
		switch {
		case !hd.endAt.IsZero() && !now.Before(hd.endAt):
			hd.end(deadlineEnd(hd.expires))
		case hd.line != nil && !hd.line.Alive():
			hd.end(EndClientGone)
		case hd.lastWrite.Load() <= idle:
			hd.beat.Store(true)
			hd.signal()
		}
	}
}

// endLines ends every taken-over stream (EndShutdown) and waits, at most
// wait and until ctx ends, until they have hung up and released their
// leases; and, until ctx ends, until the detached looped streams (ended by
// the hub's done: looper.step) have too: those the HTTP server's shutdown
// used to wait for while their request held them, and one whose client
// stopped reading may take its write timeout. Returns how many had not
// by then.
func (h *Hub) endLines(ctx context.Context, wait time.Duration) (left int) {
	h.mu.Lock()
	sts := make([]*stream, 0, len(h.lines))
	for st := range h.lines {
		sts = append(sts, st)
	}
	h.mu.Unlock()
	for _, st := range sts {
		st.end(EndShutdown)
	}
	for deadline := time.Now().Add(wait); ; time.Sleep(10 * time.Millisecond) {
		h.mu.Lock()
		lines := len(h.lines)
		h.mu.Unlock()
		detached := int(h.detached.Load())
		if ctx.Err() != nil || detached == 0 && (lines == 0 || !time.Now().Before(deadline)) {
			return lines + detached
		}
	}
}
