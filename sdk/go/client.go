package realsync

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
)

// Client calls a RealSync server with one credential (a player token, a
// token source, or an API key). Its methods cover what a dedicated game
// server and a tool do; API reaches every route of the contract. Safe for
// concurrent use.
type Client struct {
	base    string
	hc      *http.Client
	cred    atomic.Pointer[credential]
	backoff Backoff
	// players holds the caller's own playerId per room id, as
	// CreateRoom, JoinRoom, JoinByCode and QuickJoin answered: a Stream
	// of that room knows its player without AsPlayer.
	players sync.Map

	// API is the client generated from openapi.yaml, for every route
	// (the methods of Client are built on it). It sends this client's
	// credential; its answers are the generated *Response types, whose
	// error statuses are not turned into *Error.
	API *ClientWithResponses
}

// Option configures a Client (New).
type Option func(*Client)

// WithHTTP sends the requests with hc instead of a new http.Client. Event
// streams are long requests: hc must have no Timeout (bound single calls
// with their context instead).
func WithHTTP(hc *http.Client) Option { return func(c *Client) { c.hc = hc } }

// WithBackoff sets how event streams wait between reconnection attempts
// (DefaultBackoff otherwise).
func WithBackoff(b Backoff) Option { return func(c *Client) { c.backoff = b } }

// New returns a client of the server at baseURL ("http://localhost:8080";
// a path prefix is kept). Without a credential option it sends none (for
// POST /v1/auth/guest and the health routes; see Guest).
func New(baseURL string, opts ...Option) *Client {
	c := &Client{base: strings.TrimRight(baseURL, "/"), backoff: DefaultBackoff}
	for _, o := range opts {
		o(c)
	}
	if c.hc == nil {
		c.hc = &http.Client{}
	}
	// NewClientWithResponses fails only when one of its options does;
	// these cannot.
	c.API, _ = NewClientWithResponses(c.base, WithHTTPClient(authDoer{c}), WithRequestEditorFn(sendHTMLAsIs))
	return c
}

// joined notes the caller's playerId in room roomID (see players) and
// returns v.
func joined[T any](c *Client, v *T, roomID string, playerID int) *T {
	c.players.Store(roomID, playerID)
	return v
}

// BaseURL returns the server's URL as given to New, without a trailing
// slash.
func (c *Client) BaseURL() string { return c.base }

// anonymousKey marks a request's context: send it without the credential.
type anonymousKey struct{}

// anonymous returns ctx for a request that must carry no credential.
func anonymous(ctx context.Context) context.Context {
	return context.WithValue(ctx, anonymousKey{}, true)
}
