package api

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/realsync/realsync/rooms"
)

// MaxBodyBytes is the largest request body of any route (413 past it).
const MaxBodyBytes = 128 << 10

// Body caps per route, each just above the largest valid request of the
// route as a JSON encoder writes it: keys and names ASCII, every other
// character of free text (names, attribute values, message types) as a
// 6-byte \u escape (Go's encoder writes <, > and & so), numbers at their
// longest accepted form, no spaces. TestLargestValidBodies builds each
// such body, sends it, and sees it accepted; the sizes it measured are in
// the comments.
var bodyLimits = map[string]int64{
	// {"name": 32 characters}: 0.2 KiB.
	"POST /v1/auth/guest": 1 << 10,
	// name, mode, region, 16 attributes of 128 characters and a state at
	// its totals (256 keys, 64 KiB): 78.5 KiB.
	"POST /v1/rooms": 96 << 10,
	// {"inviteCode": a code}: well under 1 KiB.
	"POST /v1/rooms/join-by-code": 1 << 10,
	// name, status, locked, maxPlayers, visibility, 16 attributes: 12.9 KiB.
	"PATCH /v1/rooms/{roomId}": 16 << 10,
	// a full state's 256 keys deleted and 256 others set up to the 64 KiB
	// total: 83.3 KiB.
	"PATCH /v1/rooms/{roomId}/state": 96 << 10,
	// type, 4 KiB of compact data, 100 recipients: 6.1 KiB.
	"POST /v1/rooms/{roomId}/messages": 8 << 10,
	// mode, 10 regions, 8 string filters of 128 characters and a create
	// with 16 attributes of 128 characters, 8 of them the filtered ones
	// with the filters' values (a create may repeat what it filters on,
	// and must not contradict it): 19.7 KiB. (8 range filters with bounds
	// of 63 characters: the create then holds their keys as numbers, a
	// smaller body.)
	"POST /v1/matchmaking/quick-join": 24 << 10,
	// mode, 8 regions, a rating, 16 attributes of 128 characters and a
	// party of 63 user ids of 128 bytes (a match of 64): 21.0 KiB.
	"POST /v1/matchmaking/tickets": 24 << 10,
	// 500 user ids of 128 bytes: 64.0 KiB. A user id is a token's
	// subject, not free text: it counts as its UTF-8 bytes (an id of
	// characters a JSON encoder escapes, " and \ twice their size, <, >
	// and & six times, may pass the cap).
	"PUT /v1/me/following": 80 << 10,
	// {"leaderUserId": a user id of 128 bytes, escaped as \u sequences
	// where a JSON encoder writes them so}: 0.4 KiB.
	"PUT /v1/me/party": 1 << 10,
	// no body
	"POST /v1/rooms/{roomId}/join":                               noBodyBytes,
	"POST /v1/rooms/{roomId}/leave":                              noBodyBytes,
	"POST /v1/auth/refresh":                                      noBodyBytes,
	"POST /v1/rooms/{roomId}/stream-token":                       noBodyBytes,
	"POST /v1/lobby/stream-token":                                noBodyBytes,
	"POST /v1/me/stream-token":                                   noBodyBytes,
	"POST /v1/admin/webhooks/dead-letters/{deadLetterId}/replay": noBodyBytes,
}

// Caps of the routes bodyLimits does not list: a route that reads no body
// (GET, HEAD, DELETE, OPTIONS) takes at most noBodyBytes, any other at
// most otherBodyBytes.
const (
	noBodyBytes    = 1 << 10
	otherBodyBytes = 16 << 10
)

// bodyLimit is the cap of a request to the route pattern (chi's, "" when
// none matched).
func bodyLimit(method, pattern string) int64 {
	if n, ok := bodyLimits[method+" "+pattern]; ok {
		return n
	}
	switch method {
	case http.MethodPost, http.MethodPatch, http.MethodPut:
		if pattern != "" {
			return otherBodyBytes
		}
	}
	return noBodyBytes
}

// MaxHeaderBytes bounds a request's line and header block, the server's
// http.Server.MaxHeaderBytes (431, from net/http, past it plus its 4 KiB
// of slack; net/http's default is 1 MiB). It must hold the largest valid
// request line: GET /v1/presence with 100 user ids of 128 bytes of UTF-8,
// each byte percent-encoded (3 bytes), the commas too, is 38 733 bytes;
// 64 KiB leaves some 26 KiB for the headers (a JWT of a few KiB, the
// cookies and forwarding headers proxies add). TestLargestValidQuery.
const MaxHeaderBytes = 64 << 10

// DefaultRequestTimeout bounds reading a request's body and answering it
// (REALSYNC_REQUEST_TIMEOUT); event streams have their own deadlines.
const DefaultRequestTimeout = 10 * time.Second

// limitBody reads the whole body, before any other check (authentication
// included), within the request timeout of the headers' arrival: 413
// past the route's cap (bodyLimit), 408 when the body is not all there in
// time; then it hands the handlers the buffered body.
//
// The deadline is the connection's read deadline, set through
// http.ResponseController and cleared once the body is read. Not
// http.Server.ReadTimeout: net/http leaves that deadline on the connection
// while the handler runs, where its background read (which watches for the
// client going away) hits it and cancels the request's context, so every
// event stream would end ReadTimeout after it opened.
func (s *Server) limitBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength == 0 && (r.Body == nil || r.Body == http.NoBody) {
			next.ServeHTTP(w, r) // no body: no cap to look up (a router walk)
			return
		}
		limit := bodyLimit(r.Method, routePattern(r))
		if r.ContentLength > limit {
			s.tooLarge(w, r, limit)
			return
		}
		if r.Body == nil || r.Body == http.NoBody {
			next.ServeHTTP(w, r)
			return
		}
		rc := http.NewResponseController(w)
		deadlineSet := rc.SetReadDeadline(time.Now().Add(s.requestTimeout)) == nil
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
		if deadlineSet {
			rc.SetReadDeadline(time.Time{})
		}
		var mbe *http.MaxBytesError
		switch {
		case errors.As(err, &mbe):
			s.tooLarge(w, r, limit)
			return
		case errors.Is(err, os.ErrDeadlineExceeded):
			s.closeAfter(w, r, min(s.requestTimeout, bodyDrain)) // its body late already: drained briefly
			s.writeError(w, r, fmt.Errorf("the request body did not arrive within %s of its headers: %w", s.requestTimeout, errRequestTimeout))
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		next.ServeHTTP(w, r)
	})
}

func (s *Server) tooLarge(w http.ResponseWriter, r *http.Request, limit int64) {
	s.closeAfter(w, r, s.requestTimeout)
	s.writeError(w, r, fmt.Errorf("request body over %d bytes: %w", limit, rooms.ErrTooLarge))
}

// closeAfter makes the HTTP/1.1 connection of a request whose body is not
// read whole close once its answer is written, within wait: "Connection:
// close", and a read deadline. net/http reads what is left of a declared
// body (up to 256 KiB) before it answers and closes a connection, so that
// a client still sending it reads the answer rather than a reset; with no
// deadline it waited for a client that sends nothing for good: each such
// connection held its descriptor and a goroutine, past the idle timeout
// and the shutdown's (an abuse tester's 3 000 of them, 56 MB; 400 took an
// instance's last descriptors). TestUnreadBodyClosesTheConnection. A body
// that did not arrive within the request timeout is drained for
// bodyDrain at most: its connection was held a whole timeout past its 408
// (TestBodyDeadline). Over HTTP/2 nothing is done: the body is the
// stream's, reset with it, and "Connection: close" would end the
// connection every other stream of the client shares (a GOAWAY:
// TestHTTP2StreamsShareOneConnection).
func (s *Server) closeAfter(w http.ResponseWriter, r *http.Request, wait time.Duration) {
	if r.ProtoMajor >= 2 {
		return
	}
	w.Header().Set("Connection", "close")
	http.NewResponseController(w).SetReadDeadline(time.Now().Add(wait)) //nolint:errcheck // a connection without deadlines: closed all the same
}

// bodyDrain is how long a body that came too late is still read before
// its 408's connection closes: a client still sending it (one that reads
// only once its request is sent) reads the answer rather than a reset, as
// net/http's own close waits before it resets.
const bodyDrain = 500 * time.Millisecond

// routePattern is the pattern of the route r will reach ("" for none).
// The middlewares run before routing; this asks the router.
func routePattern(r *http.Request) string {
	rctx := chi.RouteContext(r.Context())
	if rctx == nil || rctx.Routes == nil {
		return ""
	}
	return rctx.Routes.Find(chi.NewRouteContext(), r.Method, routedPath(r))
}

// limitTime gives every request but event streams the request timeout:
// its context ends then (store calls give up, 503), and its answer must be
// written within a few seconds more. Event streams bound each write
// themselves (a write deadline over HTTP/1.1, the stall watch over
// HTTP/2: see streamClient.Send).
func (s *Server) limitTime(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if isStream(r) {
			next.ServeHTTP(w, r)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), s.requestTimeout)
		defer cancel()
		http.NewResponseController(w).SetWriteDeadline(time.Now().Add(s.requestTimeout + writeGrace))
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// writeGrace is how long past its request timeout an answer may take to
// write (the answer of a request that timed out among them).
const writeGrace = 5 * time.Second
