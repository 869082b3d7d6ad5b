package realsync

import (
	"context"
	"net/http"
	"sync"
	"time"
)

// guestRenewBefore is how long before its expiry a guest token is renewed.
const guestRenewBefore = 5 * time.Minute

// Guest fetches a guest token (POST /v1/auth/guest; name "" lets the server
// pick one) and makes it the client's credential, renewed with
// POST /v1/auth/refresh when it has less than five minutes left by the
// client's clock, or when the server refused it or a stream's
// token_expiring says it expires soon by the server's (the user, and so
// the rooms, stay the same). For bots, tests and tools; game
// servers use an API key. Errors: *Error 403 GUEST_AUTH_DISABLED when the
// server has guests off, 422 VALIDATION_FAILED for a bad name.
func (c *Client) Guest(ctx context.Context, name string) (*GuestToken, error) {
	var body GuestRequest
	if name != "" {
		body.Name = &name
	}
	r, err := c.API.CreateGuestTokenWithResponse(anonymous(ctx), body)
	if err != nil {
		return nil, err
	}
	if err := expect(r.HTTPResponse, r.Body, http.StatusCreated); err != nil {
		return nil, err
	}
	g := &guestSource{c: c, tok: *r.JSON201}
	c.cred.Store(&credential{source: g.token})
	return r.JSON201, nil
}

// RefreshToken renews the caller's identity token (POST /v1/auth/refresh):
// a new token for the same user, valid 24 hours. Only tokens the server
// signed are renewed (a studio's token is 403 REFRESH_NOT_ALLOWED). It
// does not change the client's credential (Guest's renews itself).
func (c *Client) RefreshToken(ctx context.Context) (*GuestToken, error) {
	r, err := c.API.RefreshTokenWithResponse(ctx)
	if err != nil {
		return nil, err
	}
	if err := expect(r.HTTPResponse, r.Body, http.StatusCreated); err != nil {
		return nil, err
	}
	return r.JSON201, nil
}

// guestSource is the token source of Guest: the token it holds, renewed
// before it expires.
type guestSource struct {
	c  *Client
	mu sync.Mutex
	// tok is the current token.
	tok GuestToken
}

func (g *guestSource) token(ctx context.Context, refused string) (string, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if refused == "" && time.Until(g.tok.ExpiresAt) > guestRenewBefore {
		return g.tok.Token, nil
	}
	if refused != "" && refused != g.tok.Token {
		return g.tok.Token, nil // renewed since that request was sent
	}
	// The refresh is sent with the current token, not through the source.
	r, err := g.c.API.RefreshTokenWithResponse(anonymous(ctx), func(_ context.Context, req *http.Request) error {
		req.Header.Set("Authorization", "Bearer "+g.tok.Token)
		return nil
	})
	if err != nil {
		return "", err
	}
	if err := expect(r.HTTPResponse, r.Body, http.StatusCreated); err != nil {
		return "", err
	}
	g.tok = *r.JSON201
	return g.tok.Token, nil
}
