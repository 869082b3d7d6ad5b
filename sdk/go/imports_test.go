package realsync_test

import (
	"os/exec"
	"strings"
	"testing"
)

// A game server importing the client pulls in none of the server: no
// package of this module but the client itself, no Redis, no router, no
// metrics library.
func TestImportsNoServer(t *testing.T) {
	const self = "github.com/realsync/realsync/sdk/go"
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", self).Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 {
		t.Fatalf("go list listed %d packages: %q", len(deps), deps)
	}
	for _, dep := range deps {
		if dep == self || strings.HasPrefix(dep, "vendor/") {
			continue
		}
		for _, bad := range []string{"github.com/realsync/realsync", "go-redis", "go-chi", "miniredis", "prometheus", "jwt"} {
			if strings.Contains(dep, bad) {
				t.Errorf("%s depends on %s", self, dep)
			}
		}
	}
}
