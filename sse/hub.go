package sse

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/realsync/realsync/rooms"
)

// Config tunes a Hub. Zero durations and sizes take the defaults.
type Config struct {
	Source Source
	// Lobby reads rooms for the lobby streams.
	Lobby LobbySource
	// Users serves the personal streams (ServeMe); none when nil.
	Users UserSource
	// Feed builds the instance's subscription, delivering to the hub.
	Feed func(Sink) Feed
	// RoomJSON renders a room for snapshot events as the REST API does.
	RoomJSON func(rooms.Room) any
	// Heartbeat: a ": ping" comment after this much write-idle time;
	// default 15s.
	Heartbeat time.Duration
	// PresenceTTL is the lifetime of a stream's presence lease, renewed
	// every third of it, and after a failed renewal every second (a
	// fifteenth of it when shorter) until renewed; default 15s. It must
	// match the store's.
	PresenceTTL time.Duration
	// QueueSize bounds each stream's unsent events; a stream whose queue
	// is full is ended and its client resumes with Last-Event-ID. Default 256.
	QueueSize int
	// ReplayLimit is the most events a resume replays; beyond it the client
	// gets a snapshot. Default DefaultReplayLimit.
	ReplayLimit int
	// CheckInterval: how often every watched room's version is compared
	// with the store's, to repair a subscription that went silent, and to
	// end the streams of a room whose data vanished (room_closed, reason
	// gone); default 30s.
	CheckInterval time.Duration
	// Instance names this instance's streams; random when empty.
	Instance string
	Log      *slog.Logger
	// Metrics observes streams and events; none when nil.
	Metrics Metrics
	// AfterBurst, when set, is called once a burst of at least
	// BurstOpenings stream openings (of any kind, at least a twentieth of
	// that each half second and 4 times the usual pace) is over (a second
	// without such a pace), at most once every 10 seconds, with the
	// burst's openings (burst.go).
	// Calls come one at a time from a goroutine of the hub's, which they
	// may block; Close waits for one under way. cmd/realsyncd gives the
	// burst's memory back to the OS.
	AfterBurst func(openings int64)
	// BurstOpenings: how many openings make a burst; default 1000.
	BurstOpenings int
	// ShutdownSpread: Close ends the streams open then in a random order
	// over this long, not all at once (drain.go); 0 ends them at once.
	ShutdownSpread time.Duration
	// ShutdownRate: the fewest streams a second the spread ends (fewer
	// streams end within less than the spread); default
	// DefaultShutdownRate.
	ShutdownRate int
}

// DefaultShutdownRate is Config.ShutdownRate's default: 100 streams a
// second, a few of an instance's openings at once.
const DefaultShutdownRate = 100

func (c Config) withDefaults() Config {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.Heartbeat, 15*time.Second)
	def(&c.PresenceTTL, 15*time.Second)
	def(&c.CheckInterval, 30*time.Second)
	if c.QueueSize <= 0 {
		c.QueueSize = 256
	}
	if c.ReplayLimit <= 0 {
		c.ReplayLimit = DefaultReplayLimit
	}
	if c.BurstOpenings <= 0 {
		c.BurstOpenings = defaultBurstOpenings
	}
	if c.ShutdownRate <= 0 {
		c.ShutdownRate = DefaultShutdownRate
	}
	if c.Instance == "" {
		b := make([]byte, 4)
		rand.Read(b)
		c.Instance = hex.EncodeToString(b)
	}
	if c.Log == nil {
		c.Log = slog.Default()
	}
	if c.Metrics == nil {
		c.Metrics = noMetrics{}
	}
	return c
}

// Hub fans room events out to this instance's streams. Safe for concurrent
// use; Close ends every stream.
type Hub struct {
	cfg     Config
	feed    Feed
	done    chan struct{}
	ctx     context.Context // of the background loops, cancelled by Close
	cancel  context.CancelFunc
	closing sync.Once
	closed  chan struct{} // closed once Close's work is done
	// linesLeft: the taken-over streams Close's wait left behind
	linesLeft atomic.Int64
	// detached: the looped streams running on a goroutine of their own,
	// their connection taken over (detachLooper)
	detached atomic.Int64
	// releasing: streams' releases under way (releaseAlone: an ended
	// stream's, awaitRelease; a slow stream's at its cut), which Close
	// waits for after the ends
	releasing atomic.Int64
	loops     sync.WaitGroup
	seq       atomic.Int64
	// openings counts the streams opened; burst, of the watch loop, when
	// their bursts end (burst.go)
	openings atomic.Int64
	burst    burstWatch

	mu      sync.Mutex
	rooms   map[string]*room
	streams map[*stream]struct{}
	lines   map[*stream]struct{} // the streams taken over (line.go)
	looped  map[*held]struct{}   // the streams served by a looper

	lobby lobbyHub
	me    meHub
}

var (
	_ Sink        = (*Hub)(nil)
	_ SilenceSink = (*Hub)(nil)
)

// NewHub starts a hub: its feed, lease renewal and position checks.
func NewHub(cfg Config) *Hub {
	ctx, cancel := context.WithCancel(context.Background())
	h := &Hub{cfg: cfg.withDefaults(), done: make(chan struct{}), closed: make(chan struct{}), ctx: ctx, cancel: cancel,
		rooms: map[string]*room{}, streams: map[*stream]struct{}{}, lines: map[*stream]struct{}{}, looped: map[*held]struct{}{},
		lobby: lobbyHub{streams: map[*lobbyStream]struct{}{}, pending: map[string]LobbyNotice{}},
		me: meHub{users: map[string]map[*meStream]struct{}{}, follows: map[string]map[*meStream]struct{}{},
			streams: map[*meStream]struct{}{}}}
	h.feed = cfg.Feed(h)
	h.loops.Add(1)
	go h.renewLoop()
	h.every(h.cfg.CheckInterval, h.check)
	h.every(lobbyCoalesce, h.flushLobby)
	if h.cfg.Users != nil {
		h.every(lobbyCoalesce, h.reloadStatuses)
	}
	h.every(sweepEvery(h.cfg.Heartbeat), h.sweep)
	if h.cfg.AfterBurst != nil {
		h.burst.least = int64(h.cfg.BurstOpenings)
		h.every(burstLook, h.watchBursts)
	}
	return h
}

// Close ends every stream and the feed, and stops the background loops
// (their store calls are cancelled). Each stream ends with a retry line of
// 0.5 to 2 s, jittered so its clients do not all reconnect at once, then
// resumes (on another instance) with Last-Event-ID; with a ShutdownSpread,
// the streams open then end in a random order over it first (or less:
// ShutdownRate), and the rest (opened meanwhile) at its end. Close returns without
// waiting for the streams' handlers to return; it waits (a few seconds at
// most, closeWait) for the streams it took over (Detacher) to be ended and
// their leases released, since the HTTP server no longer knows of them.
func (h *Hub) Close() { _ = h.CloseContext(context.Background()) }

// CloseContext is Close within ctx: it returns when ctx ends at the
// latest, and a shutdown's deadline is kept even when Redis does not
// answer. What is not done by then (a lease release, a loop's store call
// waiting for its reply) goes on in the background until the process
// exits; a lease not released lapses after the presence TTL, as a killed
// instance's does. A later Close or CloseContext waits for the same
// close, within its own ctx. The error says what was left: ctx ended
// first, or taken-over streams had not hung up and released their leases
// within closeWait (a client that stopped reading).
func (h *Hub) CloseContext(ctx context.Context) error {
	h.closing.Do(func() {
		go func() {
			if h.cfg.ShutdownSpread > 0 {
				h.spreadEnds(ctx, h.cfg.ShutdownSpread)
			}
			close(h.done)
			h.mu.Lock()
			for hd := range h.looped {
				hd.signal() // its looper sees done (looper.step)
			}
			h.mu.Unlock()
			h.linesLeft.Store(int64(h.endLines(ctx, closeWait)))
			// the releases an end did not wait for (a Redis that does not
			// answer: each within storeTimeout); ctx's end leaves them
			for h.releasing.Load() > 0 {
				time.Sleep(10 * time.Millisecond)
			}
			h.cancel()
			h.loops.Wait()
			h.feed.Close()
			close(h.closed)
		}()
	})
	select {
	case <-h.closed:
		if n := h.linesLeft.Load(); n > 0 {
			return fmt.Errorf("sse: %d streams had not ended within %s", n, closeWait)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("sse: the hub's close was left running (its streams' ends and lease releases): %w", ctx.Err())
	}
}

// closeWait bounds how long Close waits for the taken-over streams: their
// last write has a short deadline of its own, their lease release
// storeTimeout.
const closeWait = storeTimeout + 2*time.Second

// Instance is the name of this instance's streams.
func (h *Hub) Instance() string { return h.cfg.Instance }

// Streams returns the number of open room, lobby and personal streams.
func (h *Hub) Streams() int {
	h.mu.Lock()
	n := len(h.streams)
	h.mu.Unlock()
	h.lobby.mu.Lock()
	n += len(h.lobby.streams)
	h.lobby.mu.Unlock()
	h.me.mu.Lock()
	defer h.me.mu.Unlock()
	return n + len(h.me.streams)
}

// every runs f every d until Close.
func (h *Hub) every(d time.Duration, f func(context.Context)) {
	h.loops.Add(1)
	go func() {
		defer h.loops.Done()
		t := time.NewTicker(d)
		defer t.Stop()
		for {
			select {
			case <-h.done:
				return
			case <-t.C:
				f(h.ctx)
			}
		}
	}()
}

// Deliver implements Sink.
func (h *Hub) Deliver(id string, e Event) {
	if r := h.room(id); r != nil {
		r.push(e)
	}
}

// Resubscribed implements Sink: catch up from the log, or for the lobby
// send fresh lists.
func (h *Hub) Resubscribed(id string) {
	if id == "" {
		h.lobbyResync()
	} else if r := h.room(id); r != nil {
		r.kick()
	}
}

// FeedSilent implements SilenceSink: a warning; the catch-up follows from
// the resubscriptions.
func (h *Hub) FeedSilent(shard, channels int) {
	h.cfg.Log.Warn("sse: a Pub/Sub connection went silent (its probe did not come back): reopened on the shard's current node, its streams catch up from the logs",
		"shard", shard, "channels", channels)
}

func (h *Hub) room(id string) *room {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.rooms[id]
}

// attach adds st to the room's streams, subscribing the room when st is its
// first local stream, and returns once the subscription is confirmed: from
// then on every event published reaches st's queue.
func (h *Hub) attach(ctx context.Context, id string, st *stream) (*room, error) {
	r, err := h.use(ctx, id)
	if err != nil {
		return nil, err
	}
	r.add(st)
	select {
	case <-r.ready:
	case <-ctx.Done():
		h.detach(r, st)
		return nil, ctx.Err()
	}
	if r.err != nil {
		h.detach(r, st)
		return nil, r.err
	}
	return r, nil
}

// use returns the room's entry with one more reference, creating it when
// there is none. A room being unsubscribed is waited for, so subscribing
// and unsubscribing one room never overlap.
func (h *Hub) use(ctx context.Context, id string) (*room, error) {
	for {
		h.mu.Lock()
		r := h.rooms[id]
		if r == nil {
			r = newRoom(h, id)
			h.rooms[id] = r
			go r.setup()
		}
		if !r.closing {
			r.refs++
			h.mu.Unlock()
			return r, nil
		}
		h.mu.Unlock()
		select {
		case <-r.closed:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// detach removes st; the room's last stream unsubscribes it.
func (h *Hub) detach(r *room, st *stream) {
	r.remove(st)
	h.mu.Lock()
	r.refs--
	last := r.refs == 0 && h.rooms[r.id] == r
	r.closing = last
	h.mu.Unlock()
	if !last {
		return
	}
	close(r.stop)
	<-r.ready
	if r.err == nil {
		h.feed.Unsubscribe(r.id)
	}
	h.mu.Lock()
	delete(h.rooms, r.id)
	h.mu.Unlock()
	close(r.closed)
}

// forget drops a room whose subscription failed, so the next stream tries
// again.
func (h *Hub) forget(r *room) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.rooms[r.id] == r {
		delete(h.rooms, r.id)
	}
}

func (h *Hub) streamName() string {
	return h.cfg.Instance + "." + strconv.FormatInt(h.seq.Add(1), 36)
}

// renewChunk is the most leases one renewal call extends; each call's
// success or failure counts for its own streams only.
const renewChunk = 256

// renewRetry is the longest wait before a failed renewal is tried again
// (renewLoop); a fifteenth of the TTL when that is shorter.
const renewRetry = time.Second

// renewLoop renews the leases every third of the TTL (renew). After a
// round in which renewals failed (a failover, Redis out of reach), the
// leases whose renewal failed are tried again every renewRetry (at most a
// fifteenth of the TTL) until they are renewed, or ended once a whole TTL
// passed since their last renewal: a lease is renewed within renewRetry
// of Redis answering again, not a third of the TTL later, so a failover
// ends no stream unless it kept the lease unrenewed for a whole TTL (an
// 8.3 s failover with two ticks failing let 15 s leases lapse before the
// third). A retry renews only the leases left unrenewed, one call per
// renewChunk of them, so it costs at most those calls once a retry
// interval, for as long as the failure lasts.
func (h *Hub) renewLoop() {
	defer h.loops.Done()
	every := h.cfg.PresenceTTL / 3
	retry := max(min(renewRetry, h.cfg.PresenceTTL/15), 10*time.Millisecond)
	t := time.NewTimer(every)
	defer t.Stop()
	round := time.Now() // the last full round's start
	failed := false
	for {
		select {
		case <-h.done:
			return
		case <-t.C:
		}
		now := time.Now()
		if !failed || now.Sub(round) >= every {
			round = now
			failed = h.renew(h.ctx, 0)
		} else {
			failed = h.renew(h.ctx, every)
		}
		next := every - time.Since(round)
		if failed {
			next = min(next, retry)
		}
		t.Reset(max(next, 0))
	}
}

// renew extends the leases of every open stream, of rooms and of the
// lobby, a chunk at a time; a lease that lapsed (this instance was cut off
// from Redis longer than the TTL) is recorded again if its stream is still
// open, and the stream ends (EndLapsed) when its user's streams were
// filled up meanwhile (ErrStreamLimit). A stream whose lease went a whole
// TTL without a renewal ends: the lease has lapsed, the other instances
// already show its player disconnected (and no longer count the stream
// among its user's), and the room's events may not be reaching this
// instance either, so the stream cannot vouch for being live. Its client
// reconnects, to an instance that reaches Redis, and resumes with
// Last-Event-ID. A slow renewal (Redis busy with a burst of streams
// opening) only counts once it fails, so it ends nothing by itself.
// With stale > 0 only the leases not renewed for stale are (renewLoop's
// retries). Reports whether a renewal failed.
func (h *Hub) renew(ctx context.Context, stale time.Duration) (failed bool) {
	if mine := unrenewed(h.meLeased(), stale); len(mine) > 0 {
		failed = h.renewSessions(ctx, mine)
	}
	sts := unrenewed(h.leased(), stale)
	// A room's leases together: a chunk spans few rooms.
	slices.SortFunc(sts, func(a, b leased) int { return strings.Compare(a.holding().lease.Room, b.holding().lease.Room) })
	call := func(ctx context.Context, chunk []leased) ([]Lease, error) {
		leases := make([]Lease, len(chunk))
		for i, st := range chunk {
			leases[i] = st.holding().lease
		}
		return h.cfg.Source.RenewStreams(ctx, leases)
	}
	lost := func(st leased, l Lease) {
		if h.open(st) {
			h.record(ctx, st, l)
		}
	}
	nfailed, err := renewChunks(ctx, h.cfg.PresenceTTL, sts, call, func(l Lease) string { return l.Stream }, lost)
	if err != nil {
		h.cfg.Log.Warn("sse: renewing presence", "leases", nfailed, "of", len(sts), "err", err)
	}
	return failed || err != nil
}

// renewChunks renews the leases of sts, one call per renewChunk of them,
// each call bounded by the lease's ttl (a renewal that takes longer comes
// too late anyway). A call that succeeds marks its streams renewed now;
// one that fails ends those of its streams whose lease went a whole ttl
// without a renewal (EndLapsed). lost is called with each lease a call
// reports lost and the stream it names (by id). Returns how many leases
// failed to renew and the last call's error.
func renewChunks[L any](ctx context.Context, ttl time.Duration, sts []leased,
	call func(context.Context, []leased) ([]L, error), id func(L) string, lost func(leased, L)) (nfailed int, lastErr error) {
	for chunk := range slices.Chunk(sts, renewChunk) {
		cctx, cancel := context.WithTimeout(ctx, ttl)
		gone, err := call(cctx, chunk)
		cancel()
		now := time.Now()
		for _, st := range chunk {
			if err == nil {
				st.holding().renewed.Store(now.UnixNano())
			} else if now.Sub(time.Unix(0, st.holding().renewed.Load())) >= ttl {
				st.end(EndLapsed)
			}
		}
		if err != nil {
			nfailed, lastErr = nfailed+len(chunk), err
		}
		if len(gone) == 0 {
			continue
		}
		byID := make(map[string]leased, len(chunk))
		for _, st := range chunk {
			byID[st.holding().lease.Stream] = st
		}
		for _, l := range gone {
			if st := byID[id(l)]; st != nil {
				lost(st, l)
			}
		}
	}
	return nfailed, lastErr
}

// unrenewed returns the streams of sts whose lease was not renewed for
// stale (all of them when stale is 0).
func unrenewed(sts []leased, stale time.Duration) []leased {
	if stale <= 0 {
		return sts
	}
	now := time.Now()
	return slices.DeleteFunc(sts, func(st leased) bool {
		return now.Sub(time.Unix(0, st.holding().renewed.Load())) < stale
	})
}

// leased returns every open stream whose lease the hub renews.
func (h *Hub) leased() []leased {
	h.mu.Lock()
	sts := make([]leased, 0, len(h.streams))
	for st := range h.streams {
		if st.holds.Load() { // not one whose cut gave its lease back (held.end)
			sts = append(sts, st)
		}
	}
	h.mu.Unlock()
	h.lobby.mu.Lock()
	for st := range h.lobby.streams {
		// the server's lobby stream holds no lease; one cut as slow gave
		// its back (held.end)
		if !st.lease.Server && st.holds.Load() {
			sts = append(sts, st)
		}
	}
	h.lobby.mu.Unlock()
	return sts
}

// record records lost lease l of open stream st again; st ends when its
// user holds the most streams allowed by now. A stream that gave its
// lease back meanwhile (it ended, or was cut as slow, after the renewal
// found it open) has the lease dropped again: its release may have run
// before the record, and nothing would renew the lease or drop it before
// it lapsed (its player shown connected, a place of its user's taken).
// A release after the look at the stream comes after the record, and
// drops it.
func (h *Hub) record(ctx context.Context, st leased, l Lease) {
	var err error
	if l.Room == "" {
		err = h.cfg.Source.OpenLobby(ctx, l)
	} else {
		_, err = h.cfg.Source.OpenStream(ctx, l, ReadNone, Cursor{}, 0)
	}
	switch {
	case errors.Is(err, rooms.ErrStreamLimit):
		st.end(EndLapsed)
		return
	case err != nil || h.open(st):
	case l.Room == "":
		err = h.cfg.Source.CloseLobby(ctx, l)
	default:
		err = h.cfg.Source.CloseStream(ctx, l)
	}
	if err != nil {
		h.cfg.Log.Debug("sse: re-recording presence", "room", l.Room, "err", err)
	}
}

// open reports whether stream st is still open and holds its lease.
func (h *Hub) open(st leased) bool {
	if ls, ok := st.(*lobbyStream); ok {
		h.lobby.mu.Lock()
		defer h.lobby.mu.Unlock()
		_, ok := h.lobby.streams[ls]
		return ok && ls.holds.Load()
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	_, ok := h.streams[st.(*stream)]
	return ok && st.holding().holds.Load()
}

// check compares every watched room's version with the store's and catches
// up the rooms that fell behind: after a failover a subscription can go
// silent while publishes succeed. Within the interval, the streams of a
// room that no longer exists end (room.confirmGone), and those of a room
// restored to an older version get a snapshot of it.
func (h *Hub) check(ctx context.Context) {
	h.mu.Lock()
	rs := make([]*room, 0, len(h.rooms))
	ids := make([]string, 0, len(h.rooms))
	for id, r := range h.rooms {
		rs = append(rs, r)
		ids = append(ids, id)
	}
	h.mu.Unlock()
	if len(ids) == 0 {
		return
	}
	vs, err := h.cfg.Source.Versions(ctx, ids)
	if err != nil {
		return
	}
	for i, r := range rs {
		switch last := r.last.Load(); {
		case vs[i] == 0 && last > 0:
			r.vanished()
		case vs[i] != last:
			// ahead: events were missed; behind: events may have arrived
			// since the read, or a restore brought back an older history,
			// which the catch-up finds in the log
			r.kick()
		}
	}
}

func (h *Hub) track(st *stream) {
	h.mu.Lock()
	h.streams[st] = struct{}{}
	h.mu.Unlock()
}

func (h *Hub) untrack(st *stream) {
	h.mu.Lock()
	delete(h.streams, st)
	h.mu.Unlock()
}

// DefaultReplayLimit is Config.ReplayLimit's default: the most events a
// resume replays (the personal logs keep as many delivered ones for it:
// store/userlog's ResumeMargin).
const DefaultReplayLimit = 1000
