package api

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/realsync/realsync/api/oapi"
	"github.com/realsync/realsync/rooms"
)

// Issue returns a token for a new guest user named tokenName(name) (a
// generated name for ""): the name the answer, the token and so every
// later answer (a refresh, from.name) carry alike, its white space folded.
func (a *Auth) Issue(name string) (oapi.GuestToken, error) {
	if name = tokenName(name); name == "" {
		name = "guest-" + randomHex(2)
	}
	return a.issue(rooms.User{ID: rooms.GuestPrefix + randomHex(12), Name: name})
}

// issue signs a token for u with the server's secret, valid GuestTokenTTL,
// with kid "realsync" so it never competes with a studio key of the JWKS
// file.
func (a *Auth) issue(u rooms.User) (oapi.GuestToken, error) {
	now := a.now()
	exp := now.Add(GuestTokenTTL).Truncate(time.Second)
	c := claims{Name: u.Name, RegisteredClaims: jwt.RegisteredClaims{Subject: u.ID, ExpiresAt: jwt.NewNumericDate(exp),
		IssuedAt: jwt.NewNumericDate(now)}}
	t := jwt.NewWithClaims(jwt.SigningMethodHS256, c)
	t.Header["kid"] = serverKeyID
	tok, err := t.SignedString(a.Secret)
	return oapi.GuestToken{Token: tok, UserId: u.ID, Name: u.Name, ExpiresAt: exp.UTC()}, err
}

// Refresh returns a new token for the same user as id, valid GuestTokenTTL
// from now. Only the server's own tokens are refreshed
// (errRefreshNotAllowed for a studio's: its login renews them), guest
// tokens only while guest tokens are on (errGuestDisabled), and only before
// they expire (errUnauthenticated): the verifier's leeway
// (REALSYNC_JWT_LEEWAY) is for clocks that differ, and the server's own
// tokens are renewed by its own clock, so a token taken after it expired
// is not made new again.
func (a *Auth) Refresh(id Identity) (oapi.GuestToken, error) {
	if !id.ServerIssued {
		return oapi.GuestToken{}, fmt.Errorf("this token was signed by a studio key: renew it with the studio's login: %w", errRefreshNotAllowed)
	}
	if !id.Expires.After(a.now()) {
		return oapi.GuestToken{}, fmt.Errorf("this token expired at %s: renew a token before it expires; an expired one is not renewed: %w",
			id.Expires.UTC().Format(time.RFC3339), errUnauthenticated)
	}
	if strings.HasPrefix(id.User.ID, rooms.GuestPrefix) && !a.GuestEnabled {
		return oapi.GuestToken{}, fmt.Errorf("guest tokens are turned off on this server: %w", errGuestDisabled)
	}
	return a.issue(id.User)
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
		if !validGuestName(name) {
			s.writeError(w, r, rooms.Invalid("name", displayNameRule))
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

// RefreshToken implements POST /v1/auth/refresh: 201 with a new token for
// the caller, who keeps their user id and name.
func (s *Server) RefreshToken(w http.ResponseWriter, r *http.Request) {
	tok, err := s.auth.Refresh(identityFrom(r.Context()))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, tok)
}
