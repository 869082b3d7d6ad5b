package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/golang-jwt/jwt/v5"

	"github.com/realsync/realsync/api/oapi"
	"github.com/realsync/realsync/rooms"
)

// GuestTokenTTL is how long a guest token is valid.
const GuestTokenTTL = 24 * time.Hour

// Auth issues and verifies HS256 JWTs.
type Auth struct {
	Secret []byte
	// GuestEnabled allows POST /v1/auth/guest.
	GuestEnabled bool
	// Now is the clock; time.Now when nil.
	Now func() time.Time

	mu       sync.Mutex
	verified map[string]verified // tokens already checked, until they expire
}

// verified is a checked token's user and expiry.
type verified struct {
	user rooms.User
	exp  time.Time
}

// maxVerified bounds the cache of checked tokens; it is emptied when full.
const maxVerified = 10_000

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

// Issue returns a token for a new guest user named name ("" for a
// generated name).
func (a *Auth) Issue(name string) (oapi.GuestToken, error) {
	if name == "" {
		name = "guest-" + randomHex(2)
	}
	exp := a.now().Add(GuestTokenTTL).Truncate(time.Second)
	userID := "g_" + randomHex(12)
	c := claims{Name: name, RegisteredClaims: jwt.RegisteredClaims{Subject: userID, ExpiresAt: jwt.NewNumericDate(exp),
		IssuedAt: jwt.NewNumericDate(a.now())}}
	tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(a.Secret)
	return oapi.GuestToken{Token: tok, UserId: userID, Name: name, ExpiresAt: exp.UTC()}, err
}

// Verify checks a token's signature, algorithm and expiry (required) and
// returns its user. The subject must be 1..128 characters without control
// characters; the name is cut to 32 characters. A token once checked is
// remembered until it expires: the signature check and JSON decoding cost
// more than the rest of a small request.
func (a *Auth) Verify(token string) (rooms.User, error) {
	now := a.now()
	a.mu.Lock()
	v, ok := a.verified[token]
	a.mu.Unlock()
	if ok && now.Before(v.exp) {
		return v.user, nil
	}
	u, exp, err := a.verify(token)
	if err != nil {
		return rooms.User{}, err
	}
	a.mu.Lock()
	if a.verified == nil || len(a.verified) >= maxVerified {
		a.verified = map[string]verified{}
	}
	a.verified[token] = verified{u, exp}
	a.mu.Unlock()
	return u, nil
}

func (a *Auth) verify(token string) (rooms.User, time.Time, error) {
	var c claims
	_, err := jwt.ParseWithClaims(token, &c, func(*jwt.Token) (any, error) { return a.Secret, nil },
		jwt.WithValidMethods([]string{"HS256"}), jwt.WithExpirationRequired(), jwt.WithTimeFunc(a.now))
	if err != nil {
		return rooms.User{}, time.Time{}, fmt.Errorf("invalid token: %w", errUnauthenticated)
	}
	if n := utf8.RuneCountInString(c.Subject); n < 1 || n > 128 || strings.IndexFunc(c.Subject, unicode.IsControl) >= 0 {
		return rooms.User{}, time.Time{}, fmt.Errorf("token subject must be 1..128 characters without control characters: %w", errUnauthenticated)
	}
	return rooms.User{ID: c.Subject, Name: displayName(c.Name)}, c.ExpiresAt.Time, nil
}

func displayName(n string) string {
	n = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return -1
		}
		return r
	}, n)
	if utf8.RuneCountInString(n) > 32 {
		n = string([]rune(n)[:32])
	}
	return n
}

type userKey struct{}

// userFrom returns the authenticated caller of a /v1 request.
func userFrom(ctx context.Context) rooms.User {
	u, _ := ctx.Value(userKey{}).(rooms.User)
	return u
}

// publicRoutes need no token.
var publicRoutes = map[string]bool{"/v1/auth/guest": true}

// authenticate requires a valid bearer token on every /v1 route but the
// public ones (on event streams, the header or access_token), or an API key
// (see serverCredential), and puts its user in the request context.
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
		u, found, err := s.serverCredential(r)
		if found || err != nil {
			if err != nil {
				s.writeError(w, r, err)
				return
			}
			s.asUser(next, w, r, u)
			return
		}
		token, ok := bearer(r)
		if !ok && isStream(r.URL.Path) {
			token = r.URL.Query().Get("access_token")
			ok = token != ""
		}
		if !ok {
			if s.limitUnauthenticated(w, r) {
				s.writeError(w, r, fmt.Errorf("missing bearer token: %w", errUnauthenticated))
			}
			return
		}
		u, err = s.auth.Verify(token)
		if err != nil {
			if s.limitUnauthenticated(w, r) {
				s.writeError(w, r, err)
			}
			return
		}
		s.asUser(next, w, r, u)
	})
}

// asUser serves the request as u: the access log's user, userFrom.
func (s *Server) asUser(next http.Handler, w http.ResponseWriter, r *http.Request, u rooms.User) {
	if x := exchangeFrom(r.Context()); x != nil {
		x.user = u.ID // for the access log
	}
	next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), userKey{}, u)))
}

// isStream tells event-stream routes, which also take the token as the
// query parameter access_token: EventSource cannot set headers. The query
// is never logged.
func isStream(path string) bool { return strings.HasSuffix(path, "/events") }

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

type guestRequest struct {
	Name *string `json:"name"`
}

// CreateGuestToken implements POST /v1/auth/guest.
func (s *Server) CreateGuestToken(w http.ResponseWriter, r *http.Request) {
	if !s.auth.GuestEnabled {
		s.writeError(w, r, fmt.Errorf("guest tokens are turned off on this server: %w", errGuestDisabled))
		return
	}
	var req guestRequest
	if err := decodeBody(r, &req, true, jsonType); err != nil {
		s.writeError(w, r, err)
		return
	}
	name := ""
	if req.Name != nil {
		name = *req.Name
		if n := utf8.RuneCountInString(name); n < 1 || n > 32 || strings.IndexFunc(name, unicode.IsControl) >= 0 {
			s.writeError(w, r, rooms.Invalid("name", "must be 1..32 characters without control characters"))
			return
		}
	}
	tok, err := s.auth.Issue(name)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, tok)
}
