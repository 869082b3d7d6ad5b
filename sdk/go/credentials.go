package realsync

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
)

// TokenSource returns the identity token (a guest token, a studio's JWT)
// to send as `Authorization: Bearer`. It is called before every request
// and every event stream connection, so it should return a cached token
// and renew it before it expires. refused is "" on those calls; after the
// server answered 401 to a token it is that token, and the request is sent
// once more with what the source returns then: renew the token (a studio
// login) or return an error. An event stream's token_expiring asks it the
// same way (refused: the stream's token), and the token returned should
// expire later (a JWT's exp; a token that is no JWT must differ): while
// the expiring token has 5 s left, a source still returning it (its cached
// token, not renewed yet) is asked again at the next token_expiring, the
// stream reconnecting with that token meanwhile (the server then keeps it
// for half of what is left); below that the stream ends with 401
// UNAUTHENTICATED. So renew at least a minute before the token expires.
// Its error is returned as a *TokenError; a stream retries it only when
// it is a network error or a 5xx, 408 or 429 *Error, and else ends with
// it (ClosedError). Called from any goroutine.
type TokenSource func(ctx context.Context, refused string) (string, error)

// WithToken authenticates as a player with an identity token (a guest
// token, a refreshed token, or a studio's JWT), sent as
// `Authorization: Bearer`. A 401 is final, and an event stream opened
// with it ends 30 s before the token expires: a TokenExpiring event, then
// Closed with ClosedError and a 401 UNAUTHENTICATED *Error, without
// reconnecting. Use WithTokenSource (or Guest) for tokens that must be
// renewed.
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
// ("" for an API key). refused is passed to the token source; a token in
// req's context (withToken) is sent without asking it. A token source's
// error comes back as a *TokenError.
func (cr *credential) apply(req *http.Request, refused string) (string, error) {
	switch {
	case cr.apiKey != "":
		req.Header.Set("X-API-Key", cr.apiKey)
		return "", nil
	case cr.source != nil:
		t, _ := req.Context().Value(tokenKey{}).(string)
		if t == "" || refused != "" {
			var err error
			if t, err = cr.source(req.Context(), refused); err != nil {
				return "", &TokenError{Err: err}
			}
		}
		req.Header.Set("Authorization", "Bearer "+t)
		return t, nil
	case cr.token != "":
		req.Header.Set("Authorization", "Bearer "+cr.token)
		return cr.token, nil
	}
	return "", nil
}

// tokenKey holds in a request's context the token to send (one a stream
// just got from its token source), instead of asking the source again.
type tokenKey struct{}

// withToken returns ctx for a request that sends token ("" for the
// source's current one).
func withToken(ctx context.Context, token string) context.Context {
	if token == "" {
		return ctx
	}
	return context.WithValue(ctx, tokenKey{}, token)
}

// TokenError is the error of a TokenSource (or of Guest's renewal), as
// requests and streams return it: Err is the source's error; Refused is
// the server's 401 that made the client ask the source for a new token
// (nil when the source failed on an ordinary call). errors.As finds the
// *Error of either (Err's first). A stream ends with it (ClosedError)
// unless Err is a network failure or a 5xx, 408 or 429 *Error.
type TokenError struct {
	Err     error
	Refused *Error
}

// Error reads "realsync: token source: <Err>" (", after 401 ..." when the
// server had refused the token).
func (e *TokenError) Error() string {
	if e.Refused != nil {
		return "realsync: token source: " + e.Err.Error() + " (asked after " + e.Refused.Error() + ")"
	}
	return "realsync: token source: " + e.Err.Error()
}

// Unwrap returns Err and Refused.
func (e *TokenError) Unwrap() []error {
	if e.Refused != nil {
		return []error{e.Err, e.Refused}
	}
	return []error{e.Err}
}

// transient reports whether the source failed for a reason a later try
// may not meet: a network failure or timeout, or a server's 5xx, 408 or
// 429.
func (e *TokenError) transient() bool {
	var se *Error
	if errors.As(e.Err, &se) {
		return !permanent(se)
	}
	var ne net.Error
	return errors.As(e.Err, &ne) || errors.Is(e.Err, context.DeadlineExceeded) ||
		errors.Is(e.Err, io.ErrUnexpectedEOF) || errors.Is(e.Err, io.EOF)
}

// authDoer sends requests with the client's credential. A 401 to a token
// from a token source is retried once with the token the source gives
// for it (a request answered 401 changed nothing on the server).
type authDoer struct{ c *Client }

func (d authDoer) Do(req *http.Request) (*http.Response, error) {
	res, _, err := d.send(req)
	return res, err
}

// send is Do, also returning the token the answer was to ("" for none or
// an API key). A source that fails after a 401 gives a *TokenError with
// that 401 as Refused.
func (d authDoer) send(req *http.Request) (*http.Response, string, error) {
	cr := d.c.cred.Load()
	if cr == nil || req.Context().Value(anonymousKey{}) != nil {
		res, err := d.c.hc.Do(req)
		return res, "", err
	}
	sent, err := cr.apply(req, "")
	if err != nil {
		return nil, "", err
	}
	res, err := d.c.hc.Do(req)
	if err != nil || res.StatusCode != http.StatusUnauthorized || cr.source == nil || (req.Body != nil && req.GetBody == nil) {
		return res, sent, err
	}
	body, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
	res.Body.Close()
	again := req.Clone(req.Context())
	if req.GetBody != nil {
		if again.Body, err = req.GetBody(); err != nil {
			return nil, "", err
		}
	}
	if sent, err = cr.apply(again, sent); err != nil {
		var te *TokenError
		if errors.As(err, &te) {
			te.Refused = newError(res, body)
		}
		return nil, "", err
	}
	res, err = d.c.hc.Do(again)
	return res, sent, err
}

// server reports whether the client authenticates with an API key (a
// server, never a player of the rooms it watches).
func (c *Client) server() bool {
	cr := c.cred.Load()
	return cr != nil && cr.apiKey != ""
}
