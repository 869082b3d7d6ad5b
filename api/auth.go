package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/maypok86/otter/v2"

	"github.com/realsync/realsync/players"
	"github.com/realsync/realsync/rooms"
)

// GuestTokenTTL is how long a token the server issues (a guest token, a
// refreshed token) is valid.
const GuestTokenTTL = 24 * time.Hour

// Auth issues and verifies JWTs. Identity tokens are verified with
// REALSYNC_JWT_SECRET (HS256, kid "realsync" or none: the tokens the server
// issues itself) or with a studio's keys from the JWKS file (SetKeys); see
// Verify. Safe for concurrent use once configured.
type Auth struct {
	// Secret signs and verifies the server's own tokens (HS256).
	Secret []byte
	// GuestEnabled allows POST /v1/auth/guest, and the refresh of guest
	// tokens.
	GuestEnabled bool
	// Issuer and Audience, when set, must be the iss and one of the aud of
	// every token signed by a studio key (REALSYNC_JWT_ISSUER,
	// REALSYNC_JWT_AUDIENCE). The server's own tokens carry neither.
	Issuer, Audience string
	// Leeway is the clock skew tolerated on exp, nbf and iat
	// (REALSYNC_JWT_LEEWAY; cmd/realsyncd defaults it to 30s).
	Leeway time.Duration
	// Now is the clock; time.Now when nil.
	Now func() time.Time

	keys atomic.Pointer[[]Key] // the studio keys (JWKS file)

	// verified: the tokens already checked, until they expire; nil until
	// the first, replaced when the keys change (SetKeys)
	verified atomic.Pointer[otter.Cache[string, Identity]]
}

// Identity is a verified identity token: its user, when it expires, and
// whether the server signed it (only those are refreshed by
// POST /v1/auth/refresh; a studio's tokens are renewed by its own login).
type Identity struct {
	User         rooms.User
	Expires      time.Time
	ServerIssued bool
	// Stream is the one stream a stream token opens ("room:<id>",
	// "lobby"); "" for an identity token.
	Stream string
	// key is the print of the studio key that verified the token (of a
	// stream token: of its identity token); "" for the server's own.
	key string
	// use is a stream token's one use (streamUse); zero for an identity
	// token, and for a stream token issued without an id.
	use streamUse
	// apiKey is the API key the request came with (User is its user);
	// zero for a token
	apiKey APIKey
}

// maxVerifiedBytes bounds the cache of checked tokens, each weighed as its
// length plus verifiedEntryBytes (a server's guest token: 222 + 208 bytes,
// some 140 000 of them; a studio's RS256 token of 1 KiB: about 50 000): an
// instance serving more active users than that checks again the tokens of
// those it evicted, the least used first (otter's W-TinyLFU). Checking one
// costs about 13 µs and 89 allocations, finding it about 0.25 µs and none
// (BenchmarkVerify): a map emptied when full at 10 000, as before, made an
// instance of 30 000 active users check nearly every request's token again.
const maxVerifiedBytes = 64 << 20

// verifiedEntryBytes is what an entry holds besides its token (the
// Identity, otter's node; 208 bytes measured).
const verifiedEntryBytes = 256

type claims struct {
	Name string `json:"name,omitempty"`
	jwt.RegisteredClaims
}

func (a *Auth) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

// SetKeys replaces the studio keys and forgets every token checked so far,
// so a removed key stops verifying at once: the keys are stored before
// the cache is dropped, so a Verify that finds the next cache checks with
// the new keys, and one still holding the old cache remembers its token
// there, where nobody looks again.
func (a *Auth) SetKeys(keys []Key) {
	keys = slices.Clone(keys)
	for i := range keys {
		keys[i].print = keyPrint(keys[i])
	}
	a.keys.Store(&keys)
	a.verified.Store(nil)
}

// Keys returns the studio keys in use.
func (a *Auth) Keys() []Key {
	if ks := a.keys.Load(); ks != nil {
		return *ks
	}
	return nil
}

// Verify checks an identity token and returns its identity. The key is
// chosen by the token's kid (see pick), the algorithm is the key's own; exp
// is required, nbf and iat are honoured, each within Leeway; a studio
// token must carry Issuer and Audience when they are set. The subject must
// be 1..128 characters without control characters, not starting "key:" (the
// API keys' user ids, see APIKey.user); the name is cut to 32
// characters. The header and claims are read strictly (strictToken: no
// repeated name, no crit header, exp, nbf and iat numbers). A stream token
// is refused (errStreamTokenRequired): it opens one
// event stream only. Other failures are errUnauthenticated. A token once
// checked is remembered until it expires or the keys change: the signature
// check and JSON decoding cost more than the rest of a small request.
func (a *Auth) Verify(token string) (Identity, error) {
	now := a.now()
	cache := a.verified.Load()
	for cache == nil {
		a.verified.CompareAndSwap(nil, newVerified(a.Leeway, a.now))
		cache = a.verified.Load() // nil again only if SetKeys dropped it meanwhile
	}
	if v, ok := cache.GetIfPresent(token); ok && now.Before(v.Expires.Add(a.Leeway)) {
		return v, nil
	}
	id, err := a.verify(token) // the keys read after the cache (see SetKeys)
	if err != nil {
		return Identity{}, err
	}
	// a copy: token may be part of a larger string (a header's)
	cache.Set(strings.Clone(token), id)
	return id, nil
}

// newVerified is an empty cache of checked tokens, each kept until it
// expires (leeway past its exp, on now, the Auth's clock) or is evicted to
// keep maxVerifiedBytes. Verify checks the expiry again when it finds one.
func newVerified(leeway time.Duration, now func() time.Time) *otter.Cache[string, Identity] {
	return otter.Must(&otter.Options[string, Identity]{
		MaximumWeight: maxVerifiedBytes,
		Weigher: func(token string, _ Identity) uint32 {
			return uint32(min(len(token), maxVerifiedBytes)) + verifiedEntryBytes
		},
		ExpiryCalculator: otter.ExpiryWritingFunc(func(e otter.Entry[string, Identity]) time.Duration {
			return max(e.Value.Expires.Add(leeway).Sub(now()), time.Millisecond)
		}),
	})
}

func (a *Auth) verify(token string) (Identity, error) {
	if err := strictToken(token); err != nil {
		return Identity{}, fmt.Errorf("invalid token (%s): %w", reason(err), errUnauthenticated)
	}
	var c claims
	var key chosenKey
	t, err := jwt.ParseWithClaims(token, &c, func(t *jwt.Token) (any, error) { return a.pick(t, &key) },
		jwt.WithValidMethods(verifyingAlgs), jwt.WithExpirationRequired(), jwt.WithIssuedAt(),
		jwt.WithLeeway(a.Leeway), jwt.WithTimeFunc(a.now))
	if err == nil && isStreamToken(t, c.Audience) || err != nil && a.isStream(token) {
		return Identity{}, fmt.Errorf("a stream token only opens the event stream it was issued for; send the identity token: %w",
			errStreamTokenRequired)
	}
	if err != nil {
		return Identity{}, fmt.Errorf("invalid token (%s): %w", reason(err), errUnauthenticated)
	}
	if !key.server {
		if a.Issuer != "" && c.Issuer != a.Issuer {
			return Identity{}, fmt.Errorf("token issuer must be %q: %w", a.Issuer, errUnauthenticated)
		}
		if a.Audience != "" && !slices.Contains(c.Audience, a.Audience) {
			return Identity{}, fmt.Errorf("token audience must include %q: %w", a.Audience, errUnauthenticated)
		}
	}
	if players.CheckUserIDs([]string{c.Subject}, 1, 1) != nil { // else no message, invite or follow could name the user
		return Identity{}, fmt.Errorf("token subject must be a user id: 1..%d bytes of UTF-8 without commas, spaces, or control or format characters: %w",
			players.MaxUserIDLen, errUnauthenticated)
	}
	if strings.HasPrefix(c.Subject, keyUserPrefix) {
		return Identity{}, fmt.Errorf("token subject must not start with %q (the API keys' user ids): %w", keyUserPrefix, errUnauthenticated)
	}
	return Identity{User: rooms.User{ID: c.Subject, Name: tokenName(c.Name)}, Expires: c.ExpiresAt.Time,
		ServerIssued: key.server, key: key.key.print}, nil
}

// reason says in a few words why golang-jwt refused a token, without
// echoing any of it.
func reason(err error) string {
	var loose looseJWT
	switch {
	case errors.As(err, &loose):
		return loose.Error()
	case errors.Is(err, jwt.ErrTokenExpired):
		return "expired"
	case errors.Is(err, jwt.ErrTokenNotValidYet), errors.Is(err, jwt.ErrTokenUsedBeforeIssued):
		return "not valid yet"
	case errors.Is(err, jwt.ErrTokenRequiredClaimMissing):
		return "exp missing"
	case errors.Is(err, jwt.ErrTokenMalformed):
		return "malformed"
	case errors.Is(err, jwt.ErrTokenUnverifiable):
		return "no key verifies it"
	case errors.Is(err, jwt.ErrTokenSignatureInvalid):
		return "bad signature"
	}
	return "rejected"
}

type userKey struct{}

// userFrom returns the authenticated caller of a /v1 request.
func userFrom(ctx context.Context) rooms.User {
	return identityFrom(ctx).User
}

// identityFrom returns the verified token of a /v1 request: the request's
// exchange holds it (see asIdentity); a context without one may carry it
// as a value.
func identityFrom(ctx context.Context) Identity {
	if x := exchangeFrom(ctx); x != nil && x.authenticated {
		return x.identity
	}
	id, _ := ctx.Value(userKey{}).(Identity)
	return id
}

// publicRoutes need no token.
var publicRoutes = map[string]bool{"/v1/auth/guest": true}

// authenticate requires a valid bearer token on every /v1 route but the
// public ones and puts its identity in the request context: an API key
// (see serverCredential), or an identity token in the Authorization
// header; event streams also take a stream token as the query parameter
// token (see streamIdentity); an identity token in the query string is
// refused. A refused credential counts on the address's auth limit.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/v1/") || publicRoutes[r.URL.Path] {
			next.ServeHTTP(w, r)
			return
		}
		if isAdmin(r.URL.Path) {
			s.serveAdmin(next, w, r)
			return
		}
		k, found, err := s.serverCredential(r)
		if found || err != nil {
			if err != nil {
				if s.limitUnauthenticated(w, r) {
					s.writeError(w, r, err)
				}
				return
			}
			s.asIdentity(next, w, r, Identity{User: k.user(), apiKey: k})
			return
		}
		id, err := s.identity(r)
		if err == nil && s.usedStreamToken(r, id) {
			err = errStreamTokenUsed
		}
		if err != nil {
			if s.limitUnauthenticated(w, r) {
				s.writeError(w, r, err)
			}
			return
		}
		s.asIdentity(next, w, r, id)
	})
}

// asIdentity serves the request as id: the access log's user, userFrom,
// identityFrom. The identity goes into the request's exchange, already in
// its context (observe), rather than a new context value: a context value
// copies the whole request (WithContext) on every authenticated request.
func (s *Server) asIdentity(next http.Handler, w http.ResponseWriter, r *http.Request, id Identity) {
	if x := exchangeFrom(r.Context()); x != nil {
		x.user = id.User.ID // for the access log
		x.identity, x.authenticated = id, true
		next.ServeHTTP(w, r)
		return
	}
	next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), userKey{}, id)))
}

// identity verifies the request's credentials.
func (s *Server) identity(r *http.Request) (Identity, error) {
	if scope, ok := streamScope(r); ok {
		if id, done, err := s.streamIdentity(r, scope); done {
			return id, err
		}
	}
	token, ok := bearer(r)
	if !ok {
		return Identity{}, fmt.Errorf("missing bearer token: %w", errUnauthenticated)
	}
	return s.auth.Verify(token)
}

// isStream tells a request for an event-stream route (its path; the
// method is the caller's to check), which also takes a stream token as the
// query parameter token: EventSource cannot set headers. The query is
// never logged. It decides on routedPath, as the router does: every
// middleware that treats streams apart (admission, authentication, the
// request timeout, readiness, carryStreams) asks it, or streamScope on
// the same path (the stream token's), so that none takes
// GET /v1/rooms/x%2Fevents (the room "x/events" to the router) for a
// stream.
func isStream(r *http.Request) bool { return strings.HasSuffix(routedPath(r), "/events") }

// routedPath is the path the router (chi) matches r on: the path as sent
// (URL.RawPath) when it has escapes that the decoded URL.Path loses, such
// as "%2F", else URL.Path. Middlewares run before routing; one that
// decides by the path decides on this one to agree with the router.
func routedPath(r *http.Request) string {
	if r.URL.RawPath != "" {
		return r.URL.RawPath
	}
	return r.URL.Path
}

func bearer(r *http.Request) (string, bool) {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(token) == "" {
		return "", false
	}
	return strings.TrimSpace(token), true
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
