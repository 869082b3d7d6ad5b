package api

import (
	"net/http"

	"github.com/rs/cors"
)

// CORS: the headers a browser game on another origin may send and read,
// and how long it may keep a preflight's answer.
var (
	corsRequestHeaders = []string{"Authorization", "Content-Type", "If-Match", "Last-Event-ID", "X-API-Key",
		"X-Request-Id", "Idempotency-Key"}
	corsExposedHeaders = []string{"ETag", "Location", "Retry-After", "RateLimit", "RateLimit-Policy", "X-Request-Id",
		"Idempotent-Replayed"}
	corsMethods = []string{http.MethodGet, http.MethodPost, http.MethodPatch, http.MethodPut, http.MethodDelete}
)

// corsMaxAge (seconds) is how long a browser keeps a preflight's answer:
// 10 minutes, Chromium's own cap (Firefox allows a day), so a changed
// allow-list reaches browsers within that.
const corsMaxAge = 600

// newCORS returns the CORS middleware for origins (REALSYNC_CORS_ORIGINS),
// or nil when there are none: then no CORS header is ever sent and
// browsers keep other origins out. "*" (alone) allows any origin; no
// credentials mode is allowed, since tokens travel in headers, never in
// cookies. A preflight (OPTIONS with Access-Control-Request-Method) is
// answered by the middleware itself, before authentication, which a
// preflight never carries.
func newCORS(origins []string) func(http.Handler) http.Handler {
	if len(origins) == 0 {
		return nil
	}
	return cors.New(cors.Options{
		AllowedOrigins:   origins,
		AllowedMethods:   corsMethods,
		AllowedHeaders:   corsRequestHeaders,
		ExposedHeaders:   corsExposedHeaders,
		MaxAge:           corsMaxAge,
		AllowCredentials: false,
	}).Handler
}
