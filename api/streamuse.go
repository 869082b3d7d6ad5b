package api

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// StreamTokenUses records the stream tokens that opened a stream, so that
// each opens one: a stream token is in a URL, and a URL leaks (proxy and
// browser history, a shared screenshot of the network panel). Replayed,
// a personal stream's token opened a session of every platform, ending
// the user's own (a tester's find); now the URL opens nothing once its
// client opened the stream. The store keeps each use until the token
// stops verifying.
type StreamTokenUses interface {
	// Use records the token id of userID as used by opening (a nonce of
	// the opening's own) for keep; false: another opening used it
	// (finished or not). Sent again with the same opening, it answers as
	// the first time. Errors: rooms.ErrUnavailable.
	Use(ctx context.Context, userID, id, opening string, keep time.Duration) (bool, error)
	// Release forgets the use opening recorded (its opening was refused),
	// so that the token may open the stream again; a no-op when another
	// opening holds it.
	Release(ctx context.Context, userID, id, opening string) error
	// Used reports whether an opening holds the token's use: a read, so
	// that a replay is refused before it is charged to the user's rate
	// limits (usedStreamToken).
	Used(ctx context.Context, userID, id string) (bool, error)
}

// errStreamTokenUsed refuses an opening whose stream token opened a
// stream already.
var errStreamTokenUsed = fmt.Errorf("this stream token has opened its stream already: a stream token opens one stream, once; fetch a new one for each connection: %w", errUnauthenticated)

// streamUse is a stream token's id and when its use may be forgotten:
// once no instance accepts the token, its expiry plus the leeway each
// instance grants, on clocks that may be a leeway apart either way from
// the one that records the use (streamUseKept).
type streamUse struct {
	id    string
	until time.Time
}

// streamUseKept is how long past its token's expiry a use is kept: the
// leeway every instance grants, and as much again for each of the
// recording instance's clock and the checking one's being up to a leeway
// off.
const streamUseKept = 3 * streamLeeway

// useStreamToken claims the one use of the stream token r came with,
// before the stream's opening changes anything (a personal stream's
// session replaces the user's own); release gives it back when the
// opening was refused (refused): a refusal does not use the token, so
// that a client may read why its EventSource was refused by asking the
// same URL again (the TypeScript SDK does), and try again. A token used
// already, or being used by another opening at the same moment, is 401
// UNAUTHENTICATED. Nothing to claim (release a no-op): an identity token,
// an API key, a stream token without an id (issued before ids were, by an
// instance of an older version during a rolling upgrade: it opens its
// stream any number of times within its minute, as then), or no store of
// uses (Config.StreamTokens nil).
func (s *Server) useStreamToken(r *http.Request) (release func(), err error) {
	id := identityFrom(r.Context())
	if id.use.id == "" || s.streamTokens == nil {
		return func() {}, nil
	}
	uid, opening := id.User.ID, randomHex(8)
	fresh, err := s.streamTokens.Use(r.Context(), uid, id.use.id, opening, id.use.until.Sub(s.auth.now()))
	switch {
	case err != nil:
		return nil, err
	case !fresh:
		s.metrics.StreamTokenReused(scopeKind(id.Stream))
		return nil, errStreamTokenUsed
	}
	return func() {
		if err := s.streamTokens.Release(context.WithoutCancel(r.Context()), uid, id.use.id, opening); err != nil {
			// the token stays used: its client's next opening gets 401 and
			// fetches another
			s.log.Warn("a refused stream opening's token stays used", "err", err, "request_id", requestID(r.Context()))
		}
	}, nil
}

// scopeKind is the kind of stream a stream token's scope opens, as the
// metrics name it: "room", "lobby" or "me".
func scopeKind(scope string) string {
	if strings.HasPrefix(scope, "room:") {
		return "room"
	}
	return scope
}

// refused reports whether err, an opening's error before anything was
// sent, is a refusal that left the store as it was (a 4xx of the error
// table: not a member, no such room, a session or stream limit, bad
// input), whose stream token is given back. A store failure (its write
// may have been applied, its reply lost: a session opened, a user's own
// replaced), an unknown error or an ended request (a hang-up midway) keeps
// the token used: the client fetches another.
func refused(err error) bool {
	if contextEnded(err) {
		return false
	}
	p, ok := lookup(err)
	return ok && p.status >= 400 && p.status < 500
}

// usedStreamToken reports whether id is a stream token's whose use an
// opening holds: authenticate refuses it as a refused credential, on the
// address's auth limit, before the user's limits are charged. Without it
// a URL found in a log, replayed, spent its user's stream and opening
// limits while its token verified (65 s), the user's own reconnects
// then refused 429 (a tester's find). A read that fails, or an instance
// not yet connected to the store, lets the opening's claim decide.
func (s *Server) usedStreamToken(r *http.Request, id Identity) bool {
	if id.use.id == "" || s.streamTokens == nil || (s.available != nil && !s.available()) {
		return false
	}
	used, err := s.streamTokens.Used(r.Context(), id.User.ID, id.use.id)
	if err != nil || !used {
		return false
	}
	s.metrics.StreamTokenReused(scopeKind(id.Stream))
	return true
}
