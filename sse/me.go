package sse

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/realsync/realsync/internal/jsonout"
	"github.com/realsync/realsync/players"
	"github.com/realsync/realsync/rooms"
)

// EndGap is why a personal stream ended when its live feed skipped events
// its user's log no longer holds: the client resumes with Last-Event-ID
// and gets a snapshot (resync).
const EndGap = "gap"

// SessionMetrics, when the hub's Metrics implement it too, observes the
// personal streams' sessions.
type SessionMetrics interface {
	// SessionOpened and SessionEnded bracket a session of platform on this
	// instance.
	SessionOpened(platform string)
	SessionEnded(platform string)
	// SessionsReplaced counts sessions of platform that a new one replaced.
	SessionsReplaced(platform string, n int)
}

// meHub feeds the personal streams of an instance: each user's channel is
// subscribed while a stream of the user is open here, each followed user's
// status channel while a stream here follows the user.
type meHub struct {
	sub     sync.Mutex // held while subscribing or unsubscribing
	mu      sync.Mutex
	users   map[string]map[*meStream]struct{} // by the stream's user
	follows map[string]map[*meStream]struct{} // by followed user
	streams map[*meStream]struct{}
	reload  statusReload
}

// meItem is one thing a personal stream's goroutine handles: a logged
// event (or a following change: ev.Control), a followed user's status, or
// a catch-up from the log (catchUp).
type meItem struct {
	ev      *UserEvent
	status  *players.Status
	catchUp bool
}

// meStream is one client's personal stream. seen (the status version sent
// per followed user) and follows belong to its goroutine.
type meStream struct {
	held
	session Session
	q       queue[meItem]
	seen    map[string]int64
	follows []string
	// lost: a renewal found the session's lease gone (see renewSessions)
	lost atomic.Bool
	// written: the last logged events written, at written[seq %
	// len(written)]: a live event of a seq written already is a
	// duplicate when its tag is the one written (its message came after
	// the opening's or a catch-up's read of the log), else another
	// history's (see meItem)
	written [16]mePos
}

// wrote says whether st wrote logged event e as it is (its seq and tag),
// among its last len(st.written) logged events.
func (st *meStream) wrote(e *UserEvent) bool {
	return st.written[e.Seq%int64(len(st.written))] == mePos{seq: e.Seq, tag: e.Tag}
}

func (st *meStream) offer(it meItem) bool {
	if !st.q.push(it) {
		st.end(EndSlow)
		return false
	}
	st.signal()
	return true
}

// DeliverUser implements UserSink.
func (h *Hub) DeliverUser(uid string, e UserEvent) {
	if !e.Control {
		e.parse()
	}
	dropped := 0
	h.me.mu.Lock()
	for st := range h.me.users[uid] {
		if !st.offer(meItem{ev: &e}) && !e.Control {
			dropped++
		}
	}
	h.me.mu.Unlock()
	if dropped > 0 {
		h.cfg.Metrics.Events(KindMe, 0, dropped)
	}
}

// DeliverStatus implements UserSink.
func (h *Hub) DeliverStatus(s players.Status) {
	dropped := 0
	h.me.mu.Lock()
	for st := range h.me.follows[s.UserID] {
		if !st.offer(meItem{status: &s}) {
			dropped++
		}
	}
	h.me.mu.Unlock()
	if dropped > 0 {
		h.cfg.Metrics.Events(KindMe, 0, dropped)
	}
}

// ResubscribedUser implements UserSink: the streams of uid catch up from
// the log, and load their following again.
func (h *Hub) ResubscribedUser(uid string) {
	h.me.mu.Lock()
	defer h.me.mu.Unlock()
	for st := range h.me.users[uid] {
		st.offer(meItem{catchUp: true})
	}
}

// ServeMe streams user u's personal events to a session of platform,
// resuming after c: first a retry line; then a snapshot event (a fresh
// stream, or a resume the log could not serve) or the logged events after
// c and a resumed event; then the current status of every followed user
// (presence, no id); then live: logged events, and followed users'
// statuses when they change, until ctx ends, the session is replaced
// (session_replaced is its last event), the client cannot keep up, its
// lease lapsed, the hub closes or the token expiry set with
// WithTokenExpiry comes. The session holds a lease, renewed with the
// hub's other leases: while any session of u holds one, u is online.
// Errors, when nothing was started: players.ErrInvalidPlatform,
// players.ErrPlayersOnly (a server credential), players.ErrSessionExists,
// rooms.ErrStreamLimit, rooms.ErrUnavailable.
func (h *Hub) ServeMe(ctx context.Context, client Client, u rooms.User, platform string, c Cursor) error {
	if u.Server {
		return players.ErrPlayersOnly
	}
	if err := players.CheckPlatform(platform); err != nil {
		return err
	}
	feed, ok := h.feed.(UserFeed)
	if !ok || h.cfg.Users == nil {
		return rooms.ErrUnavailable
	}
	sess := Session{UserID: u.ID, Platform: platform, ID: h.streamName()}
	st := &meStream{session: sess, q: queue[meItem]{max: h.cfg.QueueSize}, seen: map[string]int64{},
		held: newHeld(h, Lease{UserID: u.ID, Stream: sess.ID, Platform: platform})}
	st.free = func() { h.closeSession(st) }
	// subscribe first, then open (which reads the log's position): an
	// event published in between is queued and dropped as already sent
	if err := h.meJoin(ctx, h.me.users, u.ID, st, feed.SubscribeUser); err != nil {
		return err
	}
	var opened undo
	defer opened.runUnlessCarried()
	opened.add(func() { h.meLeave(h.me.users, u.ID, st, feed.UnsubscribeUser) })
	o, err := h.cfg.Users.OpenSession(ctx, sess, c, h.cfg.ReplayLimit)
	if err != nil {
		return err
	}
	sm, _ := h.cfg.Metrics.(SessionMetrics)
	if sm != nil {
		sm.SessionOpened(platform)
		opened.add(func() { sm.SessionEnded(platform) })
		if o.Replaced > 0 {
			sm.SessionsReplaced(platform, o.Replaced)
		}
	}
	st.renewed.Store(time.Now().UnixNano())
	h.me.mu.Lock()
	h.me.streams[st] = struct{}{}
	h.me.mu.Unlock()
	st.opened()
	opened.add(st.giveBack)
	opened.add(func() { h.unfollow(feed, st, st.follows) }) // the follows of its end
	ids, err := h.cfg.Users.Following(ctx, u.ID)
	if err != nil {
		return err
	}
	first, err := h.follow(ctx, feed, st, ids)
	if err != nil {
		return err
	}
	start := StartFresh
	switch {
	case c.Set && (o.Gap || !c.Verifiable()):
		start = StartSnapshot
	case c.Set:
		start = StartReplay
	}
	h.streamOpened(KindMe, start)
	client.Start()
	out := lent(client, h.cfg.Metrics, KindMe)
	out.write(retryFrame(0))
	at := mePos{seq: o.From, tag: o.Tag}
	if start != StartReplay {
		pending := 0
		for i := range o.Replay {
			if st.writes(&o.Replay[i]) {
				pending++
			}
		}
		st.writeSnapshot(out, o.Tag, o.From, c.Set || o.Lost, pending)
	}
	end := ""
	for i := range o.Replay {
		at = mePos{seq: o.Replay[i].Seq, tag: o.Replay[i].Tag}
		if end = st.writeLogged(out, &o.Replay[i]); end != "" {
			break
		}
	}
	if end == "" && o.Past > at.seq {
		at = mePos{seq: o.Past, tag: o.PastTag} // the lost events after the replay's
	}
	if start == StartReplay && end == "" {
		st.writeResumed(out, at.seq)
	}
	if end == "" && at.seq < o.Seq {
		// the replay ended short of the log (its rest trimmed or rewritten
		// while it was read: UserSource.OpenSession): a catch-up from
		// there, first thing, reads what is left or finds the gap, so the
		// stream does not wait for the user's next event to learn it
		st.offer(meItem{catchUp: true})
	}
	for _, s := range first {
		st.writeStatus(out, s)
	}
	l := h.pumpMe(ctx, feed, st, out, at)
	// a lost inbox's snapshot, once written, moves the cursor past what is
	// gone, replay or none
	replayed := len(o.Replay) > 0 || o.Lost
	l.begin = func(ctx context.Context) string {
		if end != "" {
			out.flush()
			return end
		}
		if replayed && out.flush() == nil {
			h.delivered(ctx, st, at)
		}
		return ""
	}
	carryLooper(&opened, client, l, func(why string) {
		h.cfg.Metrics.StreamEnded(KindMe, why)
	})
	return nil
}

// mePos is a personal stream's position in its user's log: the seq of
// the last logged event written (or of the opening's snapshot) and the
// tag of its write (an event's id is "<seq>-<tag>"), or the history's
// for a position without an event (see UserOpening.Tag).
type mePos struct {
	seq int64
	tag string
}

// pumpMe is the rest of personal stream st (see looper): it writes the
// stream's events after the opening (up to log position at), with
// heartbeats while idle. Each logged event written is acknowledged once
// flushed (Delivered), so the platform's offline inbox starts after it.
func (h *Hub) pumpMe(ctx context.Context, feed UserFeed, st *meStream, out *writer, at mePos) *looper {
	return newLooper(ctx, h, &st.held, out, func(ctx context.Context) (why string) {
		batch := st.q.take()
		defer st.q.recycle(batch)
		for _, it := range batch {
			was := at
			at, why = h.meItem(ctx, feed, st, out, it, at)
			if at != was && out.flush() == nil {
				h.delivered(ctx, st, at)
			}
			if why != "" {
				return why
			}
		}
		return ""
	})
}

// delivered records that st's client was written its user's log up to
// at. A failure is logged: the events after the last recorded position
// go out again to the platform's next session without Last-Event-ID.
func (h *Hub) delivered(ctx context.Context, st *meStream, at mePos) {
	if err := h.cfg.Users.Delivered(ctx, st.session, at.tag, at.seq); err != nil {
		h.cfg.Log.Debug("sse: recording a delivery", "user", st.session.UserID, "seq", at.seq, "err", err)
	}
}

// meItem writes what item it calls for; returns the log position sent and
// why the stream ends ("" when it goes on).
func (h *Hub) meItem(ctx context.Context, feed UserFeed, st *meStream, out *writer, it meItem, at mePos) (mePos, string) {
	switch {
	case it.status != nil:
		st.writeStatus(out, *it.status)
	case it.catchUp, it.ev != nil && it.ev.Control:
		if it.catchUp {
			// lost before the catch-up reads the session's tombstone: a
			// replacement would have left one (or its session_replaced
			// logged), so a catch-up that ends nothing means lapsed
			lost := st.lost.Load()
			var end string
			if at, end = h.catchUp(ctx, st, out, at, nil); end != "" {
				return at, end
			}
			if lost {
				return at, EndLapsed
			}
		}
		ids, err := h.cfg.Users.Following(ctx, st.session.UserID)
		if err != nil {
			return at, storeEnd(ctx)
		}
		var added, dropped []string
		for _, id := range ids {
			if !slices.Contains(st.follows, id) {
				added = append(added, id)
			}
		}
		for _, id := range st.follows {
			if !slices.Contains(ids, id) {
				dropped = append(dropped, id)
			}
		}
		h.unfollow(feed, st, dropped)
		for _, id := range dropped {
			delete(st.seen, id)
		}
		st.follows = slices.DeleteFunc(st.follows, func(id string) bool { return slices.Contains(dropped, id) })
		ss, err := h.follow(ctx, feed, st, added)
		if err != nil {
			return at, storeEnd(ctx)
		}
		for _, s := range ss {
			st.writeStatus(out, s)
		}
	case it.ev.Notice:
		// session_replaced, not logged: this session's ends it, after the
		// logged events before it that the stream missed (lost messages);
		// another session's is none of this stream's (nor is its position)
		if it.ev.Seq > at.seq && st.writes(it.ev) {
			return h.catchUp(ctx, st, out, at, it.ev)
		}
		return at, st.writeLogged(out, it.ev)
	case it.ev.Seq == at.seq && it.ev.Tag == at.tag, it.ev.Seq < at.seq && st.wrote(it.ev):
		// written already (published while the stream opened, or before
		// a catch-up read it from the log)
	case it.ev.Seq != at.seq+1:
		// missed events, or another write of a seq written already (the
		// history changed: a failover lost events, or the log expired
		// while the stream was idle and a new history starts at 1): catch
		// up from the log, which tells a gap (EndGap: the client resumes,
		// and a resume from a lost event gets a snapshot)
		return h.meItem(ctx, feed, st, out, meItem{catchUp: true}, at)
	default:
		return mePos{seq: it.ev.Seq, tag: it.ev.Tag}, st.writeLogged(out, it.ev)
	}
	return at, ""
}

// catchUp writes st the logged events after at from its user's log, when
// the log still holds at's event (the same write: a failover may have
// lost it) or position, else ends the stream (EndGap); returns the
// position sent and why the stream ends ("" when it goes on).
// It then reads its session's tombstone (Replaced; repl, when not nil, is
// the session_replaced already received): a catch-up follows a lost
// message (a resubscription, a gap in the live events, a renewal that
// found the lease gone), which may have been the session's
// session_replaced. When a new session replaced it, it writes the events
// logged before the replacement (those after are the new session's), then
// its session_replaced, and ends replaced, even when the log cannot serve
// them (a gap, an error). The log is read before the tombstone: a
// replacement after the log was read logged nothing st should not write,
// one before has its tombstone by the time it is read. An older release's
// replacement logged session_replaced instead: the log has it, and it
// ends the stream the same way.
func (h *Hub) catchUp(ctx context.Context, st *meStream, out *writer, at mePos, repl *UserEvent) (mePos, string) {
	evs, gap, err := h.cfg.Users.UserLog(ctx, st.session.UserID, at.seq, at.tag, h.cfg.ReplayLimit)
	if repl == nil {
		e, ok, rerr := h.cfg.Users.Replaced(ctx, st.session)
		switch {
		case rerr != nil:
			return at, storeEnd(ctx)
		case ok:
			repl = &e
		}
	}
	switch {
	case repl != nil && (err != nil || gap):
		evs = nil
	case err != nil:
		return at, storeEnd(ctx)
	case gap:
		return at, EndGap
	}
	for i := range evs {
		if repl != nil && evs[i].Seq > repl.Seq {
			break
		}
		evs[i].parse()
		if end := st.writeLogged(out, &evs[i]); end != "" {
			return mePos{seq: evs[i].Seq, tag: evs[i].Tag}, end
		}
		at = mePos{seq: evs[i].Seq, tag: evs[i].Tag}
	}
	if repl != nil {
		repl.parse()
		return at, st.writeLogged(out, repl)
	}
	return at, ""
}

func storeEnd(ctx context.Context) string {
	if ctx.Err() != nil {
		return EndClientGone
	}
	return EndStoreError
}

// follow subscribes the status channels of ids for st, then loads their
// statuses: every change after the load reaches st's queue, and those not
// newer than the status loaded are dropped (writeStatus).
func (h *Hub) follow(ctx context.Context, feed UserFeed, st *meStream, ids []string) ([]players.Status, error) {
	for _, id := range ids {
		if err := h.meJoin(ctx, h.me.follows, id, st, feed.SubscribeStatus); err != nil {
			return nil, err
		}
		st.follows = append(st.follows, id)
		st.seen[id] = -1 // the current status goes out, whatever it is
	}
	return h.cfg.Users.Statuses(ctx, ids)
}

func (h *Hub) unfollow(feed UserFeed, st *meStream, ids []string) {
	for _, id := range ids {
		h.meLeave(h.me.follows, id, st, feed.UnsubscribeStatus)
	}
}

// meJoin registers st under key in index, subscribing the key's channel
// (subscribe) for its first stream on this instance.
func (h *Hub) meJoin(ctx context.Context, index map[string]map[*meStream]struct{}, key string, st *meStream, subscribe func(context.Context, string) error) error {
	h.me.sub.Lock()
	defer h.me.sub.Unlock()
	h.me.mu.Lock()
	first := len(index[key]) == 0
	h.me.mu.Unlock()
	if first {
		if err := subscribe(ctx, key); err != nil {
			return err
		}
	}
	h.me.mu.Lock()
	if index[key] == nil {
		index[key] = map[*meStream]struct{}{}
	}
	index[key][st] = struct{}{}
	h.me.mu.Unlock()
	return nil
}

// meLeave drops st from index under key, unsubscribing the last.
func (h *Hub) meLeave(index map[string]map[*meStream]struct{}, key string, st *meStream, unsubscribe func(string)) {
	h.me.sub.Lock()
	defer h.me.sub.Unlock()
	h.me.mu.Lock()
	delete(index[key], st)
	last := len(index[key]) == 0
	if last {
		delete(index, key)
	}
	h.me.mu.Unlock()
	if last {
		unsubscribe(key)
	}
}

// closeSession ends st's session, even when the request is gone.
func (h *Hub) closeSession(st *meStream) {
	h.me.mu.Lock()
	delete(h.me.streams, st)
	h.me.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	if err := h.cfg.Users.CloseSession(ctx, st.session); err != nil {
		h.cfg.Log.Debug("sse: closing session", "user", st.session.UserID, "err", err)
	}
}

// renewSessions extends the leases of the personal streams sts; a stream
// whose session is no longer held first catches up (replaced: its
// session_replaced, missed on the live feed, is kept as its session's
// tombstone, or in its user's log when an older release replaced it, and
// ends it; see catchUp), and ends (EndLapsed) when that catch-up finds
// no replacement, or when the next renewal still finds it gone before the
// catch-up ran; one whose lease went a whole TTL without a renewal ends
// (see renew). Reports whether a renewal failed.
func (h *Hub) renewSessions(ctx context.Context, sts []leased) (failed bool) {
	call := func(ctx context.Context, chunk []leased) ([]Session, error) {
		ss := make([]Session, len(chunk))
		for i, st := range chunk {
			l := st.holding().lease
			ss[i] = Session{UserID: l.UserID, Platform: l.Platform, ID: l.Stream}
		}
		return h.cfg.Users.RenewSessions(ctx, ss)
	}
	lost := func(st leased, _ Session) {
		me, _ := st.(*meStream)
		switch {
		case me == nil:
		case me.lost.CompareAndSwap(false, true):
			// replaced, its session_replaced not received (a lost
			// Pub/Sub message): its tombstone (or the log) has it,
			// and the catch-up writes it and ends the stream
			me.offer(meItem{catchUp: true})
		default: // lost twice: lapsed (its catch-up not run yet)
			me.end(EndLapsed)
		}
	}
	nfailed, err := renewChunks(ctx, h.cfg.PresenceTTL, sts, call, func(s Session) string { return s.ID }, lost)
	if err != nil {
		h.cfg.Log.Warn("sse: renewing sessions", "sessions", nfailed, "of", len(sts), "err", err)
	}
	return err != nil
}

// meLeased returns the open personal streams.
func (h *Hub) meLeased() []leased {
	h.me.mu.Lock()
	defer h.me.mu.Unlock()
	out := make([]leased, 0, len(h.me.streams))
	for st := range h.me.streams {
		out = append(out, st)
	}
	return out
}

// writes says whether st writes event e (logged, or a notice): every one
// but another session's session_replaced.
func (st *meStream) writes(e *UserEvent) bool {
	e.parse()
	return e.meta.Type != players.EventSessionReplaced || e.meta.Session == st.session.ID
}

// writeLogged writes event e (logged, or a notice) when st writes it;
// returns EndReplaced when it ends this session.
func (st *meStream) writeLogged(out *writer, e *UserEvent) string {
	if !st.writes(e) {
		return ""
	}
	out.writeEvent(e.frame)
	if !e.Notice {
		st.written[e.Seq%int64(len(st.written))] = mePos{seq: e.Seq, tag: e.Tag}
	}
	if e.meta.Type == players.EventSessionReplaced {
		return EndReplaced
	}
	return ""
}

// writeStatus writes s when st follows its user and it is newer than the
// status sent.
func (st *meStream) writeStatus(out *writer, s players.Status) {
	seen, ok := st.seen[s.UserID]
	if !ok || s.Version <= seen {
		return
	}
	st.seen[s.UserID] = s.Version
	data, _ := jsonout.Marshal(s.Event(stamp(time.Now())))
	out.writeEvent(appendFrame(nil, "", players.EventPresence, data))
}

func (st *meStream) writeSnapshot(out *writer, tag string, seq int64, resync bool, pending int) {
	data, _ := jsonout.Marshal(players.SnapshotEvent{UserEventHeader: players.UserEventHeader{Type: players.EventSnapshot,
		UserID: st.session.UserID, Seq: seq, TS: stamp(time.Now())}, Platform: st.session.Platform,
		Session: st.session.ID, Resync: resync, Pending: pending})
	out.writeEvent(appendFrame(nil, formatID(seq, tag), players.EventSnapshot, data))
}

func (st *meStream) writeResumed(out *writer, seq int64) {
	data, _ := jsonout.Marshal(players.ResumedEvent{UserEventHeader: players.UserEventHeader{Type: players.EventResumed,
		UserID: st.session.UserID, Seq: seq, TS: stamp(time.Now())}})
	out.write(appendFrame(nil, "", players.EventResumed, data))
}
