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
	// the opening's own) until until; false: another opening used it
	// (finished or not). Sent again with the same opening, it answers as
	// the first time. Errors: rooms.ErrUnavailable.
	Use(ctx context.Context, userID, id, opening string, until time.Time) (bool, error)
	// Release forgets the use opening recorded (its opening was refused),
	// so that the token may open the stream again; a no-op when another
	// opening holds it.
	Release(ctx context.Context, userID, id, opening string) error
}

// streamUse is a stream token's id and when its use may be forgotten: its
// expiry plus the leeway every instance grants, after which it verifies
// nowhere.
type streamUse struct {
	id    string
	until time.Time
}

// useStreamToken claims the one use of the stream token r came with,
// before the stream's opening changes anything (a personal stream's
// session replaces the user's own); release gives it back, for an
// opening that is then refused: a refusal does not use the token, so that
// a client may read why its EventSource was refused by asking the same
// URL again (the TypeScript SDK does), and try again. A token used
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
	fresh, err := s.streamTokens.Use(r.Context(), uid, id.use.id, opening, id.use.until)
	switch {
	case err != nil:
		return nil, err
	case !fresh:
		s.metrics.StreamTokenReused(scopeKind(id.Stream))
		return nil, fmt.Errorf("this stream token has opened its stream already: a stream token opens one stream, once; fetch a new one for each connection: %w", errUnauthenticated)
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
