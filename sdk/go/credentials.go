package realsync

import (
	"context"
	"fmt"
	"io"
	"net/http"
)

// TokenSource returns the identity token (a guest token, a studio's JWT)
// to send as `Authorization: Bearer`. It is called before every request
// and every event stream connection, so it should return a cached token
// and renew it before it expires. refused is "" on those calls; after the
// server answered 401 to a token it is that token, and the request is sent
// once more with what the source returns then: renew the token (a studio
// login) or return an error. Called from any goroutine.
type TokenSource func(ctx context.Context, refused string) (string, error)

// WithToken authenticates as a player with an identity token (a guest
// token, a refreshed token, or a studio's JWT), sent as
// `Authorization: Bearer`. A 401 is final, and an event stream opened
// with it ends 30 s before the token expires (token_expiring, then 401
// on reconnecting): use WithTokenSource (or Guest) for tokens that must
// be renewed.
func WithToken(token string) Option {
	return func(c *Client) { c.cred.Store(&credential{token: token}) }
}

// WithTokenSource authenticates as a player with the tokens ts returns.
func WithTokenSource(ts TokenSource) Option {
	return func(c *Client) { c.cred.Store(&credential{source: ts}) }
}

// WithAPIKey authenticates as a server (a dedicated game server, a back
// office) with an API key ("rsk_..."), sent as the X-API-Key header, never
// in a URL. Routes for players only (create, join, leave, quick-join) are
// 403 SCOPE_REQUIRED with a key.
func WithAPIKey(key string) Option {
	return func(c *Client) { c.cred.Store(&credential{apiKey: key}) }
}

// credential is what a Client sends: one of a token, a token source or an
// API key.
type credential struct {
	token  string
	source TokenSource
	apiKey string
}

// apply sets the credential's header on req and returns the token it sent
// ("" for an API key). refused is passed to the token source.
func (cr *credential) apply(req *http.Request, refused string) (string, error) {
	switch {
	case cr.apiKey != "":
		req.Header.Set("X-API-Key", cr.apiKey)
		return "", nil
	case cr.source != nil:
		t, err := cr.source(req.Context(), refused)
		if err != nil {
			return "", fmt.Errorf("realsync: token source: %w", err)
		}
		req.Header.Set("Authorization", "Bearer "+t)
		return t, nil
	case cr.token != "":
		req.Header.Set("Authorization", "Bearer "+cr.token)
		return cr.token, nil
	}
	return "", nil
}

// authDoer sends requests with the client's credential. A 401 to a token
// from a token source is retried once with the token the source gives
// for it (a request answered 401 changed nothing on the server).
type authDoer struct{ c *Client }

func (d authDoer) Do(req *http.Request) (*http.Response, error) {
	cr := d.c.cred.Load()
	if cr == nil || req.Context().Value(anonymousKey{}) != nil {
		return d.c.hc.Do(req)
	}
	sent, err := cr.apply(req, "")
	if err != nil {
		return nil, err
	}
	res, err := d.c.hc.Do(req)
	if err != nil || res.StatusCode != http.StatusUnauthorized || cr.source == nil || (req.Body != nil && req.GetBody == nil) {
		return res, err
	}
	io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10))
	res.Body.Close()
	again := req.Clone(req.Context())
	if req.GetBody != nil {
		if again.Body, err = req.GetBody(); err != nil {
			return nil, err
		}
	}
	if _, err := cr.apply(again, sent); err != nil {
		return nil, err
	}
	return d.c.hc.Do(again)
}

// server reports whether the client authenticates with an API key (a
// server, never a player of the rooms it watches).
func (c *Client) server() bool {
	cr := c.cred.Load()
	return cr != nil && cr.apiKey != ""
}
