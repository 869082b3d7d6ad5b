package api

import (
	"fmt"
	"net/http"
	"strings"
)

// apiKeyHeader carries an API key; `Authorization: Bearer rsk_...` too.
const apiKeyHeader = "X-API-Key"

// serverCredential reads an API key off the request: the X-API-Key
// header, or a bearer token starting with rsk_. found is false when the
// request carries none (then the player token rules apply). Errors, all
// 401 UNAUTHENTICATED: both an X-API-Key and an Authorization header (one
// credential per request), an unknown or revoked key, a key in an event
// stream's query string, as any value of token or access_token (a URL
// ends up in proxy logs and browser history; servers set headers):
// keyInURL, and an event stream's query credential (token; an
// access_token is refused anyway, streamIdentity) beside a header one
// (X-API-Key or Authorization, whatever it holds): which one opened the stream would depend on the header, and a
// header a proxy adds would silently change who the stream is opened as.
func (s *Server) serverCredential(r *http.Request) (k APIKey, found bool, err error) {
	if err := oneCredential(r); err != nil {
		return APIKey{}, true, err
	}
	key := r.Header.Get(apiKeyHeader)
	if isStream(r) {
		q := r.URL.Query()
		for _, param := range []string{"token", "access_token"} {
			for _, v := range q[param] { // every value: a key second is as exposed as one first
				if strings.HasPrefix(v, APIKeyPrefix) {
					return APIKey{}, true, keyInURL(param)
				}
			}
		}
		if q.Has("token") && (key != "" || r.Header.Get("Authorization") != "") {
			return APIKey{}, true, fmt.Errorf("send one credential: a stream token in the URL (token) or a header (X-API-Key, Authorization), not both: %w", errUnauthenticated)
		}
	}
	if key == "" {
		if t, ok := bearer(r); ok && strings.HasPrefix(t, APIKeyPrefix) {
			key = t
		}
	}
	if key == "" {
		return APIKey{}, false, nil
	}
	k, ok := s.keys.find(strings.TrimSpace(key))
	if !ok {
		return APIKey{}, true, fmt.Errorf("unknown or revoked API key: %w", errUnauthenticated)
	}
	return k, true, nil
}

// oneCredential refuses a request whose headers carry more than one
// credential: two Authorization or two X-API-Key headers, or one of each.
// Which one counted would depend on the headers' order, and a header a
// proxy adds would silently change who the request acts as.
func oneCredential(r *http.Request) error {
	if len(r.Header.Values("Authorization")) > 1 || len(r.Header.Values(apiKeyHeader)) > 1 {
		return fmt.Errorf("send one credential, in one header: %w", errUnauthenticated)
	}
	if r.Header.Get(apiKeyHeader) != "" && r.Header.Get("Authorization") != "" {
		return fmt.Errorf("send one credential, X-API-Key or Authorization, not both: %w", errUnauthenticated)
	}
	return nil
}

// keyInURL is the refusal of an API key in an event stream's URL (as
// param): where the key goes instead, and that this one is exposed.
func keyInURL(param string) error {
	return fmt.Errorf("an API key is not accepted in a URL (%s): send it in the X-API-Key header (or Authorization: Bearer), "+
		"which event streams take too; a URL is kept by proxies, logs and browser history, so rotate this key: %w", param, errUnauthenticated)
}
