package api

// routeClasses puts every /v1 route ("METHOD pattern", the pattern as in
// openapi.yaml) in the rate-limit class it is counted in. A /v1 route of
// openapi.yaml without a row fails TestEveryRouteClassified, so a new route
// is classified on purpose. Routes outside /v1 (probes, metrics, the spec)
// are not limited.
var routeClasses = map[string]string{
	"POST /v1/auth/guest":   "auth",
	"POST /v1/auth/refresh": "auth",

	"POST /v1/rooms": "create",

	"POST /v1/rooms/{roomId}/join":    "join",
	"POST /v1/rooms/join-by-code":     "join",
	"POST /v1/matchmaking/quick-join": "join",

	"PATCH /v1/rooms/{roomId}/state":               "write",
	"POST /v1/rooms/{roomId}/messages":             "write",
	"PATCH /v1/rooms/{roomId}":                     "write",
	"POST /v1/rooms/{roomId}/leave":                "write",
	"DELETE /v1/rooms/{roomId}/players/{playerId}": "write",
	"DELETE /v1/rooms/{roomId}":                    "write",
	"POST /v1/rooms/{roomId}/reservations":         "write",

	"GET /v1/rooms":                   "read",
	"GET /v1/rooms/{roomId}":          "read",
	"GET /v1/rooms/{roomId}/state":    "read",
	"GET /v1/rooms/{roomId}/messages": "read",
	"GET /v1/me/rooms":                "read",
	"GET /v1/lobby/stats":             "read",
	"GET /v1/admin/instances":         "read",

	"GET /v1/rooms/{roomId}/events":        "stream",
	"GET /v1/lobby/events":                 "stream",
	"POST /v1/rooms/{roomId}/stream-token": "stream",
	"POST /v1/lobby/stream-token":          "stream",

	// players (issue 16)
	"GET /v1/me/events":                "stream",
	"POST /v1/me/stream-token":         "stream",
	"PUT /v1/me/following":             "write",
	"PUT /v1/me/party":                 "write",
	"DELETE /v1/me/party":              "write",
	"GET /v1/me/party":                 "read",
	"GET /v1/me/party/members":         "read",
	"POST /v1/users/{userId}/messages": "direct", // "write" for API keys (checksOf)
	"POST /v1/rooms/{roomId}/invites":  "direct",
	"GET /v1/presence":                 "read",

	// webhook admin (issue 16 item 6)
	"GET /v1/admin/webhooks/dead-letters":                        "read",
	"POST /v1/admin/webhooks/dead-letters/{deadLetterId}/replay": "write",
	// matchmaking tickets (issue 17)
	"POST /v1/matchmaking/tickets":              "join",
	"GET /v1/matchmaking/tickets/{ticketId}":    "read",
	"DELETE /v1/matchmaking/tickets/{ticketId}": "write",
}

// routeExtras are the limits some routes are counted on besides their
// class's: stream opens per user (STREAM_OPENS_LIMITED), invite-code guesses
// (CODE_GUESSES_LIMITED, only failed ones stay counted), guest accounts
// made per address (GUESTS_LIMITED), and the room's message and
// state-patch caps (ROOM_RATE_LIMITED).
var routeExtras = map[string]string{
	"POST /v1/auth/guest":              "guests",
	"GET /v1/rooms/{roomId}/events":    "opens",
	"GET /v1/lobby/events":             "opens",
	"GET /v1/me/events":                "opens",
	"POST /v1/rooms/join-by-code":      "guess",
	"POST /v1/rooms/{roomId}/messages": "messages",
	"POST /v1/rooms/{roomId}/invites":  "messages",
	"POST /v1/users/{userId}/messages": "messages", // the recipient's inbox as the room
	"PATCH /v1/rooms/{roomId}/state":   "patches",
}
