package realsync_test

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The repository tracks no symbolic link that leads out of it: a clean
// clone must work on a machine that has nothing but the clone (a link to
// one engineer's node_modules once made CI pass on the machine that had
// them, and would have failed `npm ci` anywhere else).
func TestNoLinkLeavesTheRepository(t *testing.T) {
	out, err := exec.Command("git", "ls-files", "-s").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if !strings.HasPrefix(line, "120000 ") {
			continue
		}
		path := line[strings.IndexByte(line, '\t')+1:]
		target, err := exec.Command("git", "cat-file", "-p", strings.Fields(line)[1]).Output()
		if err != nil {
			t.Fatalf("git cat-file %s: %v", path, err)
		}
		dest := string(target)
		if filepath.IsAbs(dest) || strings.HasPrefix(filepath.Clean(filepath.Join(filepath.Dir(path), dest)), "..") {
			t.Errorf("%s links to %s, outside the repository", path, dest)
		}
	}
}
