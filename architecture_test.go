package realsync_test

import (
	"os/exec"
	"strings"
	"testing"
)

// The domain imports no adapter: rooms and lobby know nothing of HTTP or
// Redis, store and its packages know nothing of HTTP, and only cmd/ wires things together.
func TestImportDirection(t *testing.T) {
	forbidden := map[string][]string{
		"./rooms":           {"/store", "/api", "go-redis", "chi", "net/http", "miniredis", "prometheus"},
		"./lobby":           {"/store", "/api", "go-redis", "chi", "net/http", "miniredis", "prometheus"},
		"./sse":             {"/store", "/api", "go-redis", "chi", "net/http", "miniredis", "prometheus"},
		"./internal/limits": {"/store", "/api", "go-redis", "chi", "net/http", "miniredis", "prometheus"},
		"./internal/fleet":  {"/store", "/api", "go-redis", "chi", "net/http", "miniredis", "prometheus"},
		"./players":         {"/store", "/api", "go-redis", "chi", "net/http", "miniredis", "prometheus"},
		"./matchmaking":     {"/store", "/api", "go-redis", "chi", "net/http", "miniredis", "prometheus"},
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
