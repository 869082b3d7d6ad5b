package realsync

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"strings"
	"time"
)

// ErrStreamEnded is what Next returns after the stream's Closed event.
var ErrStreamEnded = errors.New("realsync: stream ended")

// defaultIdleTimeout: a connection that brings no byte (no event, no
// heartbeat) for this long is taken for dead and replaced. The server
// sends a heartbeat every 15 s of silence; a half-open TCP connection
// would otherwise wait forever.
const defaultIdleTimeout = 45 * time.Second

// StreamOption configures a stream (Client.Stream, Client.LobbyStream).
type StreamOption func(*Stream)

// AfterEventID resumes the stream after the event with this id (an
// Header.ID kept from an earlier stream) instead of starting with a
// snapshot.
func AfterEventID(id string) StreamOption { return func(s *Stream) { s.lastID = id } }

// AsPlayer tells the stream its own playerId, so that the player_left of
// that player ends it at once with ClosedLeft. It is needed only when the
// room was not created or joined with this Client (CreateRoom, JoinRoom,
// JoinByCode and QuickJoin note the playerId); without it the stream
// learns it from the answer to its reconnection (403 NOT_A_MEMBER or
// 404 right after a player_left ends it with ClosedLeft).
func AsPlayer(playerID int) StreamOption { return func(s *Stream) { s.playerID = playerID } }

// IdleTimeout replaces a connection silent for d (45 s by default; the
// server's heartbeat is 15 s), and one whose answer (its headers) has not
// come within d. Zero or less turns the watchdog off, as the TypeScript
// and C# SDKs' 0 does: a connection then waits for as long as its
// transport lets it.
func IdleTimeout(d time.Duration) StreamOption { return func(s *Stream) { s.idle = d } }

// LobbyFilter selects the rooms of a lobby stream ("" for any).
type LobbyFilter struct {
	Mode, Region string
}

// Stream reads a room's events (GET /v1/rooms/{roomId}/events) as the
// client's credential, in the Authorization or X-API-Key header (never in
// the URL). It connects on the first Next, and reconnects by itself after
// a drop, sending Last-Event-ID so the server replays exactly what was
// missed (or sends a new snapshot, reported by Resumed). It ends with a
// Closed item: after Close or the end of ctx, after room_closed or the
// own player's player_left, or on a permanent error.
func (c *Client) Stream(ctx context.Context, roomID string, opts ...StreamOption) *Stream {
	s := c.newStream(ctx, roomEventTypes, func(ctx context.Context, last string) (*http.Request, error) {
		var p StreamRoomEventsParams
		if last != "" {
			p.LastEventID = &last
		}
		req, err := NewStreamRoomEventsRequest(c.base, roomID, &p)
		if err != nil {
			return nil, err
		}
		return req.WithContext(ctx), nil
	}, opts)
	if id, ok := c.players.Load(roomID); ok && s.playerID == 0 && !c.server() {
		s.playerID = id.(int)
	}
	return s
}

// LobbyStream reads the lobby (GET /v1/lobby/events): a LobbyRooms list,
// then a LobbyChange for each room that becomes, stays or stops being
// joinable. A reconnection starts over with a new list (Resumed with
// Snapshot true). It ends as Stream does, but for room_closed and left.
func (c *Client) LobbyStream(ctx context.Context, f LobbyFilter, opts ...StreamOption) *Stream {
	return c.newStream(ctx, lobbyEventTypes, func(ctx context.Context, _ string) (*http.Request, error) {
		var p StreamLobbyEventsParams
		if f.Mode != "" {
			p.Mode = &f.Mode
		}
		if f.Region != "" {
			p.Region = &f.Region
		}
		req, err := NewStreamLobbyEventsRequest(c.base, &p)
		if err != nil {
			return nil, err
		}
		return req.WithContext(ctx), nil
	}, opts)
}

// Stream is a live event stream (Client.Stream, Client.LobbyStream). Read
// it with Events or Next from one goroutine; Close may be called from any.
type Stream struct {
	c     *Client
	types map[string]func() headed
	build func(ctx context.Context, lastID string) (*http.Request, error)
	lobby bool

	ctx    context.Context
	cancel context.CancelFunc

	playerID int
	idle     time.Duration

	phase    phase
	p        *sseParser         // the open connection's reader; nil when none
	conn     context.CancelFunc // ends the open connection
	watchdog *time.Timer        // ends it when it stays silent for idle
	wait     time.Duration      // the next phaseWait's delay

	lastID   string
	attempt  int       // connection attempts since the stream was last open
	failures int       // transient failures since a connection stayed open for Backoff.Reset
	started  bool      // a connection brought an event: later ones resume
	openedAt time.Time // of the open connection
	// retryFloor is the least delay before the next attempt: the retry:
	// a connection ended with, no event after it (a shutdown's 0.5–2 s, a
	// store-down answer's 5 s); kept for the attempts after it until a
	// connection brings a retry: or an event, so a stream's first retry:,
	// superseded by its events, leaves a dropped stream at the backoff's pace.
	retryFloor time.Duration
	resuming   bool           // a reopened connection's resumed event or snapshot is still due
	token      string         // the identity token the open (or last) connection was sent with
	expiring   *TokenExpiring // the last event was this token_expiring: renew, and reconnect at once
	renewed    string         // the token to send next, just renewed after token_expiring
	lastExp    time.Time      // the expiresAt of the last token_expiring whose token was renewed
	left       bool           // the last event was a player_left that may be the own one
	public     bool           // the room is public, as its last snapshot or room_updated said
	ready      bool           // the first snapshot (rooms list) was read

	pending []item
	ended   bool
	endErr  error
}

type item struct {
	ev  Event
	err error
}

type phase int

const (
	phaseConnect phase = iota // announce an attempt
	phaseDial                 // send the request
	phaseRead                 // read the open connection
	phaseWait                 // wait before the next attempt
)

func (c *Client) newStream(ctx context.Context, types map[string]func() headed,
	build func(context.Context, string) (*http.Request, error), opts []StreamOption) *Stream {
	s := &Stream{c: c, types: types, build: build, lobby: types["rooms"] != nil, idle: defaultIdleTimeout}
	s.ctx, s.cancel = context.WithCancel(ctx)
	for _, o := range opts {
		o(s)
	}
	return s
}

// Close ends the stream: the item being waited for, if any, or else the
// next one is the Closed event with ClosedByCaller, and the items read but
// not yet returned by Next (those Ready read, say) are dropped (the end of
// the stream's context does the same). A stream that had ended already
// keeps its own Closed item. Safe to call more than once, from any
// goroutine.
func (s *Stream) Close() error {
	s.cancel()
	return nil
}

// LastEventID is the id of the last room event read ("" before one, and
// on lobby streams): pass it to AfterEventID to resume elsewhere.
func (s *Stream) LastEventID() string { return s.lastID }

// Next returns the next item: a server event or a lifecycle notice. The
// last item is a *Closed; err is nil but with it, where it is Closed.Err
// (a permanent error). After it, Next returns (nil, ErrStreamEnded).
// Next blocks until an item is ready; Close unblocks it.
func (s *Stream) Next() (Event, error) {
	for {
		if !s.ended && s.ctx.Err() != nil {
			s.finish(ClosedByCaller, nil) // which drops what is queued
		}
		if len(s.pending) > 0 {
			break
		}
		if s.ended {
			return nil, ErrStreamEnded
		}
		s.step()
	}
	it := s.pending[0]
	s.pending = s.pending[1:]
	return it.ev, it.err
}

// Events iterates over the items of Next up to and with the Closed one
// (paired with its error, if any). Breaking out of the loop closes the
// stream.
//
//	for ev, err := range s.Events() {
//		if err != nil {
//			return err
//		}
//		...
//	}
func (s *Stream) Events() iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		for {
			ev, err := s.Next()
			if errors.Is(err, ErrStreamEnded) {
				return
			}
			if !yield(ev, err) {
				s.Close()
				return
			}
		}
	}
}

// Ready reads the stream until its first snapshot (room) or rooms list
// (lobby) was read (with AfterEventID: until the server accepted the
// connection), and returns nil; or the error that ended the stream
// before that (ErrStreamEnded wrapped with the context's error after
// Close). What it reads stays queued for Next: nothing is skipped.
func (s *Stream) Ready() error {
	for !s.ready {
		if s.ended {
			return s.endErr
		}
		s.step()
	}
	return nil
}

func (s *Stream) emit(ev Event) { s.pending = append(s.pending, item{ev: ev}) }

// step advances the stream by one phase, queueing what it produced.
func (s *Stream) step() {
	if s.ctx.Err() != nil {
		s.finish(ClosedByCaller, nil)
		return
	}
	switch s.phase {
	case phaseConnect:
		if ev := s.expiring; ev != nil {
			// not an outage: renew the token and resume at once
			t, err := s.renew(ev)
			var te *TokenError
			switch {
			case err != nil && s.ctx.Err() != nil:
				s.finish(ClosedByCaller, nil)
				return
			case errors.As(err, &te) && te.transient():
				s.retry(err, 0) // renew again before the next attempt
				return
			case err != nil:
				s.finish(ClosedError, err)
				return
			}
			s.expiring, s.renewed = nil, t
		}
		s.attempt++
		s.emit(&Connecting{Attempt: s.attempt})
		s.phase = phaseDial
	case phaseDial:
		s.dial()
	case phaseWait:
		t := time.NewTimer(s.wait)
		select {
		case <-t.C:
		case <-s.ctx.Done():
			t.Stop()
		}
		s.phase = phaseConnect
	case phaseRead:
		s.read()
	}
}

// dial opens a connection, or decides what a refusal means.
func (s *Stream) dial() {
	ctx, cancel := context.WithCancel(s.ctx)
	req, err := s.build(withToken(ctx, s.renewed), s.lastID)
	s.renewed = ""
	if err != nil {
		cancel()
		s.finish(ClosedError, err)
		return
	}
	req.Header.Set("Accept", "text/event-stream")
	// the answer's headers are awaited no longer than a silent stream
	answered := s.afterIdle(cancel)
	res, token, err := authDoer{s.c}.send(req)
	if err != nil {
		stopTimer(answered)
		cancel()
		if errors.Is(err, context.Canceled) && s.ctx.Err() == nil {
			err = fmt.Errorf("realsync: no answer within %s: %w", s.idle, err)
		}
		var te *TokenError
		if errors.As(err, &te) && !te.transient() && s.ctx.Err() == nil {
			// the source cannot give a token: retrying cannot cure it
			s.finish(ClosedError, err)
			return
		}
		s.retry(err, 0)
		return
	}
	if res.StatusCode == http.StatusOK && strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		s.conn, s.token, s.attempt = cancel, token, 0
		s.p = newSSEParser(res.Body)
		s.resetWatchdog(answered)
		s.watchdog = answered
		s.openedAt, s.resuming = time.Now(), s.started
		if !s.started && s.lastID != "" {
			s.ready = true // AfterEventID: the caller has the room; a replay follows
		}
		s.phase = phaseRead
		s.emit(&Opened{})
		return
	}
	body, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
	res.Body.Close()
	stopTimer(answered)
	cancel()
	e := newError(res, body)
	if e.Status == http.StatusOK {
		e.Detail = fmt.Sprintf("the answer is %q, not an event stream (text/event-stream): %s", res.Header.Get("Content-Type"), e.Detail)
	}
	switch {
	case s.left && (e.Code == "NOT_A_MEMBER" || e.Status == http.StatusNotFound):
		// the player_left just read was the own player's
		s.finish(ClosedLeft, nil)
	case s.started && !s.lobby && e.Status == http.StatusNotFound && e.Code == "ROOM_NOT_FOUND" && (s.public || s.c.server()):
		// a public room answers non-members 403, and an API key sees every
		// room: its 404 after the stream was open means the room is gone
		s.finishRemoved(ClosedRoomClosed, e)
	case s.started && !s.lobby && !s.c.server() && (e.Status == http.StatusForbidden && e.Code == "NOT_A_MEMBER" ||
		e.Status == http.StatusNotFound && e.Code == "ROOM_NOT_FOUND"):
		// removed while away (REALSYNC_DISCONNECT_GRACE ran out, kicked): a
		// private room answers non-members 404 too, removed or gone alike
		s.finishRemoved(ClosedLeft, e)
	case permanent(e):
		s.finish(ClosedError, e)
	default:
		s.retry(e, e.RetryAfter)
	}
}

// permanent tells the refusals that reconnecting cannot cure: every 4xx
// but 408 and 429, and an answer that is no event stream.
func permanent(e *Error) bool {
	switch {
	case e.Status == http.StatusRequestTimeout, e.Status == http.StatusTooManyRequests:
		return false
	case e.Status >= 500:
		return false
	}
	return true
}

// read reads one frame of the open connection.
func (s *Stream) read() {
	f, err := s.p.next()
	if s.p.retry > 0 {
		s.retryFloor, s.p.retry = s.p.retry, 0
	}
	if err != nil {
		s.drop(err)
		return
	}
	s.resetWatchdog(s.watchdog)
	if !f.comment {
		s.retryFloor = 0 // an event after the retry: supersedes it
	}
	if f.comment {
		if s.resuming && !s.lobby && string(f.data) == "ping" {
			// a server older than the resumed event: it writes the
			// snapshot or replay before any heartbeat, so a heartbeat
			// still resuming means the replay is over
			s.resuming = false
			s.emit(&Resumed{Snapshot: false})
		}
		return
	}
	if f.event == resumedEvent && !s.lobby {
		// the end of a replay from Last-Event-ID (none after a
		// snapshot): no room event, no id, Version unchanged
		s.started = true
		if s.resuming {
			s.resuming = false
			s.emit(&Resumed{Snapshot: false})
		}
		return
	}
	ev, err := decodeEvent(s.types, f)
	if err != nil {
		ev = &UnknownEvent{Header: Header{Type: f.event, ID: f.id, Raw: f.data}, Err: err}
	}
	s.started = true
	if f.hasID {
		s.lastID = f.id
	}
	if _, snap := ev.(*Snapshot); s.resuming && (snap || s.lobby) {
		s.resuming = false
		s.emit(&Resumed{Snapshot: true})
	}
	s.left = false
	s.emit(ev)
	switch ev := ev.(type) {
	case *Snapshot:
		s.ready, s.public = true, ev.Room.Visibility == Public
	case *LobbyRooms:
		s.ready = true
	case *RoomUpdated:
		if v, ok := ev.Changes["visibility"]; ok {
			s.public = string(v) == `"public"`
		}
	case *RoomClosed:
		s.finish(ClosedRoomClosed, nil)
	case *PlayerLeft:
		if s.playerID != 0 && ev.PlayerID == s.playerID {
			s.finish(ClosedLeft, nil)
		} else if s.playerID == 0 && ev.Reason != "disconnected" && !s.c.server() {
			s.left = true
		}
	case *TokenExpiring:
		s.expiring = ev
	}
}

// resumedEvent is the type of the event that ends a replay from
// Last-Event-ID (room streams).
const resumedEvent = "resumed"

// errServerEnded is a Reconnecting error: the server ended the response.
var errServerEnded = errors.New("realsync: the server ended the event stream")

// drop closes the connection that failed with err and schedules the next.
func (s *Stream) drop(err error) {
	s.closeConn()
	if s.ctx.Err() != nil {
		s.finish(ClosedByCaller, nil)
		return
	}
	if time.Since(s.openedAt) >= s.c.backoff.Reset {
		s.failures = 0
	}
	if s.expiring != nil {
		s.phase = phaseConnect // which renews the token first
		return
	}
	switch {
	case errors.Is(err, io.EOF):
		err = errServerEnded
	case errors.Is(err, context.Canceled):
		err = fmt.Errorf("realsync: no data for %s: %w", s.idle, err)
	}
	s.retry(err, 0)
}

// retry queues Reconnecting and waits before the next attempt: the
// backoff's delay, at least floor (a refusal's Retry-After) and
// s.retryFloor (a retry: the last connection ended with), each counted up
// to Backoff.Max however long it asks (a mistaken or hostile answer must
// not stall the stream for days).
func (s *Stream) retry(err error, floor time.Duration) {
	if s.ctx.Err() != nil {
		s.finish(ClosedByCaller, nil)
		return
	}
	s.failures++
	d := max(s.c.backoff.delay(s.failures), min(max(floor, s.retryFloor), s.c.backoff.Max))
	s.emit(&Reconnecting{Attempt: s.attempt + 1, Delay: d, Err: err})
	s.wait, s.phase = d, phaseWait
}

func (s *Stream) closeConn() {
	if s.conn != nil {
		stopTimer(s.watchdog)
		s.conn()
		s.conn = nil
	}
}

// afterIdle calls cancel once the stream's idle timeout passes; nil (no
// timer) when the watchdog is off.
func (s *Stream) afterIdle(cancel func()) *time.Timer {
	if s.idle <= 0 {
		return nil
	}
	return time.AfterFunc(s.idle, cancel)
}

// resetWatchdog starts t's idle timeout again (nothing when it is off).
func (s *Stream) resetWatchdog(t *time.Timer) {
	if t != nil {
		t.Reset(s.idle)
	}
}

func stopTimer(t *time.Timer) {
	if t != nil {
		t.Stop()
	}
}

// finish ends the stream with its Closed item; ClosedByCaller (Close, or
// the end of the stream's context) drops the items queued before it.
func (s *Stream) finish(reason string, err error) {
	s.closeConn()
	s.p = nil
	s.cancel()
	s.ended = true
	if reason == ClosedByCaller {
		s.pending = nil
	}
	s.endErr = err
	if err == nil && !s.ready {
		s.endErr = fmt.Errorf("%w before it was ready: %s", ErrStreamEnded, reason)
	}
	s.pending = append(s.pending, item{ev: &Closed{Reason: reason, Err: err}, err: err})
}

// finishRemoved ends the stream as an event would have (reason, no
// error paired with the Closed item: the room or the player's place in it
// is gone, as a room_closed or the own player_left says), with the
// reconnection's refusal e as Closed.Err, for the caller to tell.
func (s *Stream) finishRemoved(reason string, e *Error) {
	s.finish(reason, nil)
	s.pending[len(s.pending)-1].ev.(*Closed).Err = e
}

// expiringFloor: while the token of a token_expiring has this long left,
// a token source still giving that token is asked again at the next
// token_expiring (the stream reconnects with it at once); below it, the
// stream ends with 401 UNAUTHENTICATED. The TypeScript and C# SDKs' 5 s.
const expiringFloor = 5 * time.Second

// renew returns the identity token to reconnect with after token_expiring
// ev ("" for a credential without one): the token source is asked as if
// the server had refused the stream's token, and the token it gives must
// expire after ev.ExpiresAt (when it says, as a JWT does; else it must
// differ). A source still giving a token that expires then (a cached token
// it renews later) is taken while that token has expiringFloor left: the
// stream reconnects with it (the server keeps a stream opened with under a
// minute left for half of it) and asks the source again at the next
// token_expiring. Otherwise it returns the 401 UNAUTHENTICATED the next
// connection would meet (a *TokenError with the source's error when it
// failed): reconnecting with that token would only open ever shorter
// streams.
func (s *Stream) renew(ev *TokenExpiring) (string, error) {
	fail := func(why string, cause error) error {
		e := &Error{Status: http.StatusUnauthorized, Code: "UNAUTHENTICATED", Title: "Unauthenticated",
			Detail: fmt.Sprintf("the identity token expires at %s and %s", ev.ExpiresAt.Format(time.RFC3339), why)}
		if cause != nil {
			return &TokenError{Err: cause, Refused: e}
		}
		return e
	}
	cr := s.c.cred.Load()
	switch {
	case cr == nil || cr.apiKey != "":
		return "", nil // no identity token (a server's stream never expires)
	case cr.source == nil:
		return "", fail("cannot be renewed: use WithTokenSource or Guest", nil)
	case ev.ExpiresAt.Equal(s.lastExp):
		return "", fail("was not renewed", nil) // the renewed token expires as the last one
	}
	t, err := cr.source(s.ctx, s.token)
	if err != nil {
		return "", fail("the token source failed", err)
	}
	if exp, ok := tokenExpiry(t); ok && !exp.After(ev.ExpiresAt) || !ok && t == s.token {
		if time.Until(ev.ExpiresAt) >= expiringFloor {
			return t, nil // the source may have a new one by the next token_expiring
		}
		return "", fail("the token source still gives no later one: return a new token at least a minute before the old one expires", nil)
	}
	s.lastExp = ev.ExpiresAt
	return t, nil
}

// tokenExpiry reads the exp claim of a JWT without checking the token
// (the server does); ok is false when t is no JWT or has no exp.
func tokenExpiry(t string) (exp time.Time, ok bool) {
	parts := strings.Split(t, ".")
	if len(parts) != 3 {
		return time.Time{}, false
	}
	payload, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return time.Time{}, false
	}
	var claims struct {
		Exp *float64 `json:"exp"`
	}
	if json.Unmarshal(payload, &claims) != nil || claims.Exp == nil {
		return time.Time{}, false
	}
	return time.Unix(int64(*claims.Exp), 0), true
}
