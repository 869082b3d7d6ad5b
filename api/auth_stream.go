package api

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/realsync/realsync/api/oapi"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/sse"
)

const (
	// StreamTokenTTL is the longest a stream token may wait to open its
	// stream: long enough for a client to open it (a browser may hold an
	// EventSource back while its connections to the origin are taken).
	// It opens it once (Server.useStreamToken): a token leaked from a
	// URL (proxy logs, browser history) after its client opened the
	// stream opens nothing.
	StreamTokenTTL = 60 * time.Second
	// streamTokenType is the JWT typ of stream tokens, and streamAudience
	// their aud: identity verification refuses both, so a stream token is
	// never a bearer token.
	streamTokenType = "rs-stream+jwt"
	streamAudience  = "realsync:stream"
	// streamKeyID is the kid of stream tokens (signed with the server's
	// secret).
	streamKeyID = "realsync-stream"
	// streamLeeway tolerates the clock skew between instances on a stream
	// token's exp and iat: one instance issues it, another may check it.
	streamLeeway = 5 * time.Second
	// streamEndLead is how long before its identity token expires a stream
	// ends (with a token_expiring event): time for the client to refresh
	// its token, fetch a stream token and resume before the old token
	// expires. A token with less than twice that left gets half of what is
	// left.
	streamEndLead = 30 * time.Second
)

// streamClaims are a stream token's claims: the user, the one stream it
// opens (Scope: "room:<id>" or "lobby") and the expiry of the identity
// token it was issued for (ParentExp, Unix seconds), which bounds the
// stream's life.
type streamClaims struct {
	Name      string `json:"name,omitempty"`
	Scope     string `json:"scope"`
	ParentExp int64  `json:"pexp"`
	// ParentKey is the print of the studio key that verified the identity
	// token (Key.print; none for the server's own tokens): the stream
	// token opens nothing once that key is out of force.
	ParentKey string `json:"pkey,omitempty"`
	jwt.RegisteredClaims
}

// isStreamToken tells a stream token by its typ or audience.
func isStreamToken(t *jwt.Token, aud jwt.ClaimStrings) bool {
	return t.Header["typ"] == streamTokenType || slices.Contains(aud, streamAudience)
}

// isStream reports whether token is a valid stream token.
func (a *Auth) isStream(token string) bool {
	_, err := a.parseStream(token)
	return err == nil
}

// IssueStream returns a stream token for id opening scope's stream: valid
// StreamTokenTTL, never past id's own expiry, and named by a random id
// (jti, 128 bits) for its one use (Server.useStreamToken). An identity
// that expired already (accepted within the verifier's leeway) gets none,
// errUnauthenticated: its token could open nothing.
func (a *Auth) IssueStream(id Identity, scope string) (oapi.StreamToken, error) {
	now := a.now()
	exp := now.Add(StreamTokenTTL).Truncate(time.Second)
	if id.Expires.Before(exp) {
		exp = id.Expires.Truncate(time.Second)
	}
	if !exp.After(now) {
		return oapi.StreamToken{}, fmt.Errorf("this token expired at %s: a stream token is never valid past it; renew the token first: %w",
			id.Expires.UTC().Format(time.RFC3339), errUnauthenticated)
	}
	c := streamClaims{Name: id.User.Name, Scope: scope, ParentExp: id.Expires.Unix(), ParentKey: id.key,
		RegisteredClaims: jwt.RegisteredClaims{Subject: id.User.ID, Audience: jwt.ClaimStrings{streamAudience},
			ExpiresAt: jwt.NewNumericDate(exp), IssuedAt: jwt.NewNumericDate(now), ID: randomHex(16)}}
	t := jwt.NewWithClaims(jwt.SigningMethodHS256, c)
	t.Header["typ"], t.Header["kid"] = streamTokenType, streamKeyID
	tok, err := t.SignedString(a.Secret)
	return oapi.StreamToken{Token: tok, ExpiresAt: exp.UTC()}, err
}

// VerifyStream checks a stream token for scope's stream and returns its
// identity, whose Expires is the identity token's. A valid stream token
// for another stream, or an identity token, is errStreamTokenRequired;
// anything else errUnauthenticated, as is one whose identity token's studio
// key is no longer in force (removed from the keys file, or given other
// material). That a token opens its stream once is the opening's to check
// (Server.useStreamToken): the identity carries the token's id.
func (a *Auth) VerifyStream(token, scope string) (Identity, error) {
	c, err := a.parseStream(token)
	if err != nil {
		if _, idErr := a.verify(token); idErr == nil {
			return Identity{}, identityInURL(scope, "")
		}
		return Identity{}, fmt.Errorf("invalid stream token (%s): %w", reason(err), errUnauthenticated)
	}
	if c.Scope != scope {
		return Identity{}, fmt.Errorf("this stream token opens another stream (%s); fetch one for this stream: %w",
			c.Scope, errStreamTokenRequired)
	}
	if c.Subject == "" {
		return Identity{}, fmt.Errorf("stream token without subject: %w", errUnauthenticated)
	}
	if c.ParentKey != "" && !a.inForce(c.ParentKey) {
		return Identity{}, fmt.Errorf("the key that signed the identity token this stream token was issued for is no longer in force: %w", errUnauthenticated)
	}
	id := Identity{User: rooms.User{ID: c.Subject, Name: c.Name}, Expires: time.Unix(c.ParentExp, 0), Stream: c.Scope, key: c.ParentKey}
	if c.ID != "" {
		id.use = streamUse{id: c.ID, until: c.ExpiresAt.Add(streamUseKept)}
	}
	return id, nil
}

// inForce reports whether a studio key of print p is among the keys in use.
func (a *Auth) inForce(p string) bool {
	for _, k := range a.Keys() {
		if k.print == p {
			return true
		}
	}
	return false
}

// identityInURL is the refusal of an identity token in the URL of scope's
// stream (as param, when named): it names the route that issues a stream
// token for that stream.
func identityInURL(scope, param string) error {
	return fmt.Errorf("an identity token is not accepted in a URL%s: fetch a stream token (%s) and pass it as token, or send the identity token in the Authorization header: %w",
		param, streamTokenRoute(scope), errStreamTokenRequired)
}

// streamTokenRoute is the route that issues stream tokens for scope's
// stream.
func streamTokenRoute(scope string) string {
	switch {
	case scope == meScope:
		return "POST /v1/me/stream-token"
	case scope == lobbyScope:
		return "POST /v1/lobby/stream-token"
	case strings.HasPrefix(scope, "room:"):
		return "POST /v1/rooms/{roomId}/stream-token"
	}
	return "POST /v1/rooms/{roomId}/stream-token, /v1/lobby/stream-token or /v1/me/stream-token"
}

// parseStream checks a stream token's signature (the server's secret),
// typ, kid, audience and times, its JSON read strictly (strictToken).
func (a *Auth) parseStream(token string) (streamClaims, error) {
	var c streamClaims
	if err := strictToken(token); err != nil {
		return c, err
	}
	_, err := jwt.ParseWithClaims(token, &c, func(t *jwt.Token) (any, error) {
		if t.Header["kid"] != streamKeyID || t.Header["typ"] != streamTokenType {
			return nil, errors.New("not a stream token")
		}
		return a.Secret, nil
	}, jwt.WithValidMethods([]string{"HS256"}), jwt.WithExpirationRequired(), jwt.WithIssuedAt(),
		jwt.WithAudience(streamAudience), jwt.WithLeeway(streamLeeway), jwt.WithTimeFunc(a.now))
	return c, err
}

// roomScope and lobbyScope name the stream a stream token opens.
func roomScope(id string) string { return "room:" + id }

const lobbyScope = "lobby"

// meScope names the personal stream (any platform).
const meScope = "me"

// streamScope returns the scope of the event stream r asks for, false when
// the route r reaches is none. It reads routedPath, as the router and
// isStream do: GET /v1/rooms/x%2Fevents reaches GET /v1/rooms/{roomId},
// where a token in the query is nobody's credential. A room's id is its
// path segment as the route's handler gets it: unescaped when the path
// came with escapes (URL.RawPath), as the generated router binds roomId.
func streamScope(r *http.Request) (string, bool) {
	path := routedPath(r)
	switch path {
	case "/v1/lobby/events":
		return lobbyScope, true
	case "/v1/me/events":
		return meScope, true
	}
	id, ok := strings.CutPrefix(path, "/v1/rooms/")
	id, ok2 := strings.CutSuffix(id, "/events")
	if !ok || !ok2 || id == "" || strings.Contains(id, "/") {
		return "", false
	}
	if r.URL.RawPath != "" {
		var err error
		if id, err = url.PathUnescape(id); err != nil {
			return "", false
		}
	}
	return roomScope(id), true
}

// streamIdentity authenticates an event-stream request by its query: a
// stream token as token; an identity token as access_token is refused with
// errStreamTokenRequired, a token parameter given more than once with
// errUnauthenticated (which one counts would depend on who reads the URL).
// done is false when the query carries neither: the Authorization header
// decides.
func (s *Server) streamIdentity(r *http.Request, scope string) (id Identity, done bool, err error) {
	q := r.URL.Query()
	if q.Has("access_token") {
		return Identity{}, true, identityInURL(scope, " (access_token)")
	}
	if !q.Has("token") {
		return Identity{}, false, nil
	}
	if n := len(q["token"]); n > 1 {
		return Identity{}, true, fmt.Errorf("the URL has %d token parameters: send one stream token, once: %w", n, errUnauthenticated)
	}
	id, err = s.auth.VerifyStream(q.Get("token"), scope)
	return id, true, err
}

// CreateRoomStreamToken implements POST /v1/rooms/{roomId}/stream-token:
// members only (a private room's non-member gets 404, as from GET).
func (s *Server) CreateRoomStreamToken(w http.ResponseWriter, r *http.Request, roomID oapi.RoomId) {
	id := identityFrom(r.Context())
	if _, err := s.rooms.CheckMember(r.Context(), id.User, roomID); err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeStreamToken(w, r, id, roomScope(roomID))
}

// CreateLobbyStreamToken implements POST /v1/lobby/stream-token.
func (s *Server) CreateLobbyStreamToken(w http.ResponseWriter, r *http.Request) {
	s.writeStreamToken(w, r, identityFrom(r.Context()), lobbyScope)
}

func (s *Server) writeStreamToken(w http.ResponseWriter, r *http.Request, id Identity, scope string) {
	tok, err := s.auth.IssueStream(id, scope)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusCreated, tok)
}

// untilTokenExpiry arranges for the stream on ctx of identity id to end
// streamEndLead before its identity token expires, or, for an API key, once
// the key is revoked (sse.WithTokenExpiry); and, for a player's stream,
// at its lifetime (Config.StreamLifetime) when that comes first
// (sse.EndLifetime).
func (s *Server) untilTokenExpiry(ctx context.Context, id Identity) context.Context {
	if u := id.User; u.Server && s.keys != nil {
		// an API key has no expiry, but may be revoked
		return sse.WithTokenExpiry(ctx, s.keys.revoked(ctx, id.apiKey))
	}
	var end, exp time.Time
	if exp = id.Expires; !exp.IsZero() {
		left := exp.Sub(s.auth.now())
		end = time.Now().Add(left - min(streamEndLead, left/2))
	}
	if life := s.streamLife(); life > 0 && (end.IsZero() || time.Now().Add(life).Before(end)) {
		return sse.WithLifetime(ctx, time.Now().Add(life))
	}
	if end.IsZero() {
		return ctx
	}
	return sse.WithTokenDeadline(ctx, end, exp)
}

// streamLife is a new stream's lifetime: uniformly random within the
// upper half of Config.StreamLifetime, so that the streams opened at
// once (after a restart) do not all end at once; 0: none.
func (s *Server) streamLife() time.Duration {
	if s.streamLifetime <= 0 {
		return 0
	}
	half := s.streamLifetime / 2
	return half + rand.N(s.streamLifetime-half+1)
}
