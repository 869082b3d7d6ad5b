package api

import (
	"fmt"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/realsync/realsync/rooms"
)

// keyRoutes are the routes that take an API key, with the scope each
// needs (openapi.yaml says the same as x-api-key-scope; a test holds them
// together). Every other authenticated route is for players only: a key
// gets 403 SCOPE_REQUIRED there, so a new route refuses keys until it is
// given a row here.
var keyRoutes = map[string]rooms.Scope{
	"GET /v1/rooms":                                rooms.ScopeRead,
	"GET /v1/rooms/{roomId}":                       rooms.ScopeRead,
	"PATCH /v1/rooms/{roomId}":                     rooms.ScopeWrite,
	"POST /v1/rooms/{roomId}/reservations":         rooms.ScopeWrite,
	"DELETE /v1/rooms/{roomId}":                    rooms.ScopeAdmin,
	"DELETE /v1/rooms/{roomId}/players/{playerId}": rooms.ScopeAdmin,
	"GET /v1/rooms/{roomId}/state":                 rooms.ScopeRead,
	"PATCH /v1/rooms/{roomId}/state":               rooms.ScopeWrite,
	"GET /v1/rooms/{roomId}/events":                rooms.ScopeRead,
	"GET /v1/rooms/{roomId}/messages":              rooms.ScopeRead,
	"POST /v1/rooms/{roomId}/messages":             rooms.ScopeWrite,
	"GET /v1/lobby/stats":                          rooms.ScopeRead,
	"GET /v1/lobby/events":                         rooms.ScopeRead,
	"GET /v1/presence":                             rooms.ScopeRead,
	"POST /v1/users/{userId}/messages":             rooms.ScopeWrite,
	"POST /v1/rooms/{roomId}/invites":              rooms.ScopeWrite,
	// matchmaking (issue 17)
	"GET /v1/matchmaking/tickets/{ticketId}":    rooms.ScopeRead,
	"DELETE /v1/matchmaking/tickets/{ticketId}": rooms.ScopeWrite,
}

// streamRoutes are the event-stream routes, the only ones a stream token
// opens.
var streamRoutes = map[string]bool{"GET /v1/rooms/{roomId}/events": true, "GET /v1/lobby/events": true,
	"GET /v1/me/events": true}

// checkScope runs inside each route (its pattern is known there): an API
// key on a route not in keyRoutes, or without the route's scope, is 403
// SCOPE_REQUIRED before anything else is looked at. Players pass: their
// rules are the rooms package's.
func (s *Server) checkScope(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := identityFrom(r.Context())
		if id.Stream == "" && !id.User.Server {
			next.ServeHTTP(w, r) // a player's identity token: nothing to check
			return
		}
		pattern := r.Method + " " + chi.RouteContext(r.Context()).RoutePattern()
		if id.Stream != "" && !streamRoutes[pattern] {
			// authenticate reads a stream token only on a stream's path,
			// as the router matches it (streamScope); the route matched
			// is the word that counts, should the two ever disagree
			s.writeError(w, r, fmt.Errorf("a stream token opens its event stream only: %w", errStreamTokenRequired))
			return
		}
		u := userFrom(r.Context())
		if !u.Server {
			next.ServeHTTP(w, r)
			return
		}
		sc, ok := keyRoutes[pattern]
		switch {
		case !ok:
			s.writeError(w, r, rooms.PlayersOnly(u))
		case !u.Can(sc):
			s.writeError(w, r, rooms.ScopeRequired(sc))
		default:
			next.ServeHTTP(w, r)
		}
	})
}
