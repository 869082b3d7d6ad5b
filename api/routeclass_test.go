package api

import (
	"net/http"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"

	"github.com/realsync/realsync/internal/limits"
)

// Every /v1 route of openapi.yaml (as generated into the router) has a
// rate-limit class, and every class and extra limit is a known limit.
func TestEveryRouteClassified(t *testing.T) {
	h := NewHandler(Config{Auth: &Auth{}}) // the admin routes are registered all the same
	n := 0
	err := chi.Walk(h.(chi.Routes), func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		if !strings.HasPrefix(route, "/v1/") {
			return nil
		}
		n++
		if _, ok := routeClasses[method+" "+route]; !ok {
			t.Errorf("%s %s has no rate-limit class: add it to routeClasses", method, route)
		}
		return nil
	})
	if err != nil || n < 15 {
		t.Fatalf("walked %d /v1 routes: %v", n, err)
	}
	for route, class := range routeClasses {
		if len(limits.Scopes(class)) == 0 {
			t.Errorf("%s: unknown class %q", route, class)
		}
	}
	for route, extra := range routeExtras {
		if len(limits.Scopes(extra)) == 0 || routeClasses[route] == "" {
			t.Errorf("%s: extra %q unknown or route unclassified", route, extra)
		}
	}
}
