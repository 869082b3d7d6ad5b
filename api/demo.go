package api

import "net/http"

// demoPolicy is the Content-Security-Policy of the demo's pages: scripts,
// styles, images and connections of the server alone (the pages have no
// inline script or style), and no site may frame them. A browser tester's
// find: without it any site could frame the demo's Join, Leave and Kick
// buttons (clickjacking), and no policy backed the pages' escaping up.
const demoPolicy = "default-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// demoHeaders serves the demo's files with demoPolicy, and
// X-Frame-Options for browsers that do not read frame-ancestors.
func demoHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", demoPolicy)
		w.Header().Set("X-Frame-Options", "DENY")
		next.ServeHTTP(w, r)
	})
}
