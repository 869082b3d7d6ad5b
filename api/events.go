package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/realsync/realsync/api/oapi"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/sse"
)

// StreamRoomEvents implements GET /v1/rooms/{roomId}/events: the hub
// streams, until streamEndLead before the caller's token expires; errors
// before the stream opens are answered as usual.
func (s *Server) StreamRoomEvents(w http.ResponseWriter, r *http.Request, roomID oapi.RoomId, params oapi.StreamRoomEventsParams) {
	if !rooms.ValidRoomID(roomID) {
		s.writeError(w, r, rooms.ErrRoomNotFound)
		return
	}
	if err := streamFor(r.Context(), roomScope(roomID)); err != nil {
		s.writeError(w, r, err)
		return
	}
	id := deref(params.LastEventID) // the header wins over the query parameter
	if id == "" {
		id = deref(params.LastEventId)
	}
	s.stream(w, r, func(ctx context.Context, c sse.Client) error {
		return s.events.Serve(ctx, c, userFrom(r.Context()), roomID, sse.ParseCursor(id))
	})
}

// StreamLobbyEvents implements GET /v1/lobby/events.
func (s *Server) StreamLobbyEvents(w http.ResponseWriter, r *http.Request, params oapi.StreamLobbyEventsParams) {
	mode, region := deref(params.Mode), deref(params.Region)
	if err := s.lobby.CheckFilter(mode, region); err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := streamFor(r.Context(), lobbyScope); err != nil {
		s.writeError(w, r, err)
		return
	}
	s.stream(w, r, func(ctx context.Context, c sse.Client) error {
		return s.events.ServeLobby(ctx, c, userFrom(r.Context()), mode, region)
	})
}

// streamFor checks that a stream token, when the request came with one,
// opens this stream (authenticate checked it against the path already;
// this checks it against the parameters the handler got).
func streamFor(ctx context.Context, scope string) error {
	if id := identityFrom(ctx); id.Stream != "" && id.Stream != scope {
		return fmt.Errorf("this stream token opens another stream; fetch one for this stream: %w", errStreamTokenRequired)
	}
	return nil
}

// stream runs serve with the stream's context (streamContext, ended at
// the token's end: untilTokenExpiry) and the response as its client, once
// the stream token it came with, if any, is claimed (useStreamToken).
// serve reads what it needs of r (the user) from r's context, which the
// stream does not keep. An error means
// nothing was sent yet: the token is given back when it is a refusal
// (refused), and the error answered as usual, except that the store being
// down is answered 200 with a retry line (the token kept used: a
// hand-written client's EventSource, which reconnects with the same URL,
// is then refused 401 and stops; the SDKs fetch a new token).
func (s *Server) stream(w http.ResponseWriter, r *http.Request, serve func(context.Context, sse.Client) error) {
	c := s.streamClient(w, r)
	release, err := s.useStreamToken(r)
	if err == nil {
		if r.ProtoMajor >= 2 {
			s.stalls.watch(&c.stall, c.ctx, c.rc)
		}
		if err = serve(s.untilTokenExpiry(c.ctx, identityFrom(r.Context())), c); err != nil && refused(err) {
			release() // before the answer, which its client may act on at once
		}
	}
	s.refuseStream(w, r, c, err)
}

// streamClient is r's response as an event stream's client.
func (s *Server) streamClient(w http.ResponseWriter, r *http.Request) *streamClient {
	return &streamClient{w: w, rc: http.NewResponseController(w), ctx: streamContext(r),
		x: exchangeFrom(r.Context()), takeable: takeable(r), hangups: s.hangups,
		carrying: carryingFrom(r.Context())}
}

// streamContext is the context r's stream runs on. A stream whose rest
// is carried (carryStreams: every stream not taken over) runs on its
// request's context as net/http made it: not on r's, whose values (the
// exchange, the route's context, the identity, each middleware's) an
// idle stream would keep for its whole life, about 1 KiB. The opening
// needs none of them: its handler reads what it needs from r first.
// Any other stream runs on r's context.
func streamContext(r *http.Request) context.Context {
	if c := carryingFrom(r.Context()); c != nil && !c.opensOnly {
		return c.base
	}
	return r.Context()
}

// refuseStream answers a stream request refused with err (nil: none, the
// stream was served) through its client c: as usual, except that the
// store being down is answered 200 with a retry line.
func (s *Server) refuseStream(w http.ResponseWriter, r *http.Request, c *streamClient, err error) {
	switch {
	case errors.Is(err, errNotReady):
		// starting: the store is most often connected within a second (a
		// restart's clients, coming back at once, waited 5 s: the SDK tester)
		c.Start()
		c.Send([]byte("retry: " + strconv.Itoa(startingRetry) + "\n: starting, retry soon\n\n"))
	case errors.Is(err, rooms.ErrUnavailable):
		// Any other status than 200 makes EventSource give up for good:
		// ask it to come back later instead.
		s.log.Warn("event stream refused: store unavailable", "err", err, "request_id", requestID(r.Context()))
		c.Start()
		c.Send([]byte("retry: " + strconv.Itoa(unavailableRetry) + "\n: store unavailable, retry later\n\n"))
	case err != nil:
		s.writeError(w, r, err)
	}
}

// errHandlerPanicked fails the writes of a carried stream whose handler's
// goroutine panicked: the stream ends without writing.
var errHandlerPanicked = errors.New("the stream's handler panicked")

// unavailableRetry (ms) is when a client refused for want of the store
// should come back; startingRetry, one refused by an instance not yet
// connected to it at its start.
const unavailableRetry, startingRetry = 5000, 1000

// streamWriteTimeout bounds each write to a stream's client: a server-wide
// WriteTimeout would cut every long-lived stream, and a client that stops
// reading must not hold its stream forever. Over HTTP/1.1 a write deadline
// bounds it, over HTTP/2 the server's stall watch (stalls.go).
const streamWriteTimeout = 10 * time.Second

// streamClient is an SSE response (sse.Client).
type streamClient struct {
	w   http.ResponseWriter
	rc  *http.ResponseController
	ctx context.Context // the stream's (streamContext)
	// x: the request's exchange, which logs a stream taken over when it
	// ends (Detach); nil once its rest is carried, which does not keep it
	x        *exchange
	deadline time.Time // of writes over HTTP/1.1, moved at most once a second
	// stall: an HTTP/2 stream's part in the server's stall watch, which
	// bounds its writes (stalls.go); none over HTTP/1.1
	stall stallable
	// takeable: a plain HTTP/1.1 GET, whose connection the hub may take
	// over (Detach); its response says Connection: close, since the
	// connection ends with the stream.
	takeable bool
	// hangups watches the connection once taken over (Config.Hangups);
	// nil: its line peeks
	hangups *Hangups
	// carrying: the request came through carryStreams, which runs the
	// rest of the stream it is handed (Carry)
	carrying *carrying
}

// takeable: a plain HTTP/1.1 GET, whose connection the hub may take over
// (Detach).
func takeable(r *http.Request) bool {
	return r.ProtoMajor == 1 && r.ProtoMinor >= 1 && r.TLS == nil && r.Method == http.MethodGet
}

// Carry implements sse.Carrier: rest runs once the handler returned (see
// carryStreams), when the request came through carryStreams and is not a
// taken-over stream's (whose stream, refused here, stays with its
// handler). Either way the opening is over: its place is given back.
func (c *streamClient) Carry(rest sse.Rest) bool {
	if c.carrying == nil || c.carrying.rest != nil {
		return false
	}
	c.carrying.leave()
	if c.carrying.opensOnly {
		return false
	}
	c.carrying.rest = rest
	c.x = nil
	if x, ok := c.w.(*exchange); ok {
		// the rest writes to net/http's writer itself: the exchange has
		// recorded the answer (observe), and an idle stream does not keep
		// it (streamContext)
		c.w = x.ResponseWriter
		c.stall.mu.Lock() // the stall watch's cut uses rc
		*c.rc = *http.NewResponseController(c.w)
		c.stall.mu.Unlock()
	}
	return true
}

// Detachable implements sse.Detacher: a plain HTTP/1.1 stream's
// connection can be taken over (Detach).
func (c *streamClient) Detachable() bool { return c.takeable }

// Detach implements sse.Detacher: a plain HTTP/1.1 stream's connection is
// hijacked, after its headers and opening were flushed as chunks, and
// becomes an eventLine writing the rest of the chunked body itself,
// watched by the server's Hangups when it has one; net/http's reader
// goroutine and buffers go away with the handler (a room stream's, and a
// lobby or personal stream's, whose rest the hub then runs on a goroutine
// of its own). nil for HTTP/2 and TLS (their streams stay with their
// request: see carryStreams).
func (c *streamClient) Detach() sse.Line {
	if !c.takeable {
		return nil
	}
	conn, _, err := c.rc.Hijack()
	if err != nil {
		return nil
	}
	l := &eventLine{conn: conn, watch: c.hangups.watch(conn)}
	if c.x != nil {
		c.x.line = l // the request is counted and logged when the stream ends
	}
	return l
}

// Start sends the headers at once, so the client knows the stream is open
// before any event.
func (c *streamClient) Start() {
	h := c.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	if c.takeable {
		h.Set("Connection", "close")
	}
	c.w.WriteHeader(http.StatusOK)
}

// Send writes and flushes frames: over HTTP/1.1 within 9 to 10 s
// (streamWriteTimeout: a write deadline moved forward at most once a
// second, since setting one costs about as much as the write of a small
// event); over HTTP/2 the stall watch resets the stream once a Send has
// been under way for 10 to 11 s, and the Send fails. The first Send is the
// opening's write: its place among the openings is given back first, so
// that a client reading slowly (or not at all, with a small receive
// window) holds none while the write waits for it.
func (c *streamClient) Send(frames []byte) error {
	if c.carrying != nil {
		if c.carrying.broken {
			return errHandlerPanicked
		}
		c.carrying.leave()
	}
	if c.stall.watched() {
		c.stall.begin()
		defer c.stall.ended()
	} else if now := time.Now(); c.deadline.Sub(now) < streamWriteTimeout-time.Second {
		c.deadline = now.Add(streamWriteTimeout)
		if err := c.rc.SetWriteDeadline(c.deadline); err != nil && !errors.Is(err, http.ErrNotSupported) {
			return err
		}
	}
	if _, err := c.w.Write(frames); err != nil {
		return err
	}
	return c.rc.Flush()
}

// RoomJSON renders a room for events as the REST API does: with its
// players when it was read with them (snapshots, like GET
// /v1/rooms/{roomId}), without for lobby events (like list items).
func RoomJSON(r rooms.Room) any { return roomBody(r, len(r.Players) > 0) }
