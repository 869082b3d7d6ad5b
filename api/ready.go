package api

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/realsync/realsync/rooms"
)

// errNotReady is why a route that needs the store is refused before the
// instance connected to it.
var errNotReady = fmt.Errorf("the instance is not connected to the store yet: %w", rooms.ErrUnavailable)

// requireStore refuses every /v1 route that needs the store while
// s.available reports false (the instance has not yet connected to Redis
// and checked its layout: nothing may read or write it before): 503
// STORE_UNAVAILABLE, and on event streams the 200 with a retry line that
// EventSource needs to come back. Guest tokens, refreshed tokens and lobby
// stream tokens need no store and are served.
// storelessRoutes need a token but no store.
var storelessRoutes = map[string]bool{"/v1/auth/refresh": true, "/v1/lobby/stream-token": true}

func (s *Server) requireStore(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.available == nil || s.available() || !strings.HasPrefix(r.URL.Path, "/v1/") || publicRoutes[r.URL.Path] ||
			storelessRoutes[r.URL.Path] {
			next.ServeHTTP(w, r)
			return
		}
		if isStream(r) && r.Method == http.MethodGet {
			s.refuseStream(w, r, s.streamClient(w, r), errNotReady) // no token claimed: nothing touches Redis
			return
		}
		s.writeError(w, r, errNotReady)
	})
}
