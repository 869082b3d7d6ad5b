package realsync_test

import (
	"os/exec"
	"strings"
	"testing"
)

// The domain imports no adapter: rooms, lobby, players and matchmaking
// know nothing of event streams, HTTP or Redis; sse and the internal
// packages the domain shares nothing of HTTP or Redis; store and its
// packages nothing of HTTP; and only cmd/ wires things together.
func TestImportDirection(t *testing.T) {
	noIO := []string{"/store", "/api", "go-redis", "chi", "net/http", "miniredis", "prometheus"}
	domain := append([]string{"/sse"}, noIO...)
	forbidden := map[string][]string{
		"./rooms":           domain,
		"./lobby":           domain,
		"./players":         domain,
		"./matchmaking":     domain,
		"./sse":             noIO,
		"./internal/limits": noIO,
		"./internal/fleet":  noIO,
		"./store/...":       {"/api", "chi", "net/http", "prometheus"},
		"./api":             {"/store", "go-redis", "miniredis"},
	}
	for pkg, bad := range forbidden {
		out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", pkg).Output()
		if err != nil {
			t.Fatalf("go list %s: %v", pkg, err)
		}
		for _, dep := range strings.Fields(string(out)) {
			for _, b := range bad {
				if strings.Contains(dep, b) && !strings.HasPrefix(dep, "vendor/") {
					t.Errorf("%s depends on %s", pkg, dep)
				}
			}
		}
	}
}
