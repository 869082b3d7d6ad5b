package realsync_test

import (
	"os"
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

// scripts/fuzz.sh fuzzes every fuzz target of the repository: a target
// only its seeds run (plain `go test`) checks only those (FuzzAppendRoom,
// which compares the hand-written room JSON with encoding/json's, was
// missing from the list).
func TestFuzzScriptRunsEveryTarget(t *testing.T) {
	script, err := os.ReadFile("scripts/fuzz.sh")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("git", "grep", "-n", "-E", `^func Fuzz[A-Za-z0-9_]*\(`, "--", "*_test.go").Output()
	if err != nil {
		t.Fatalf("git grep: %v", err)
	}
	targets := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		file, rest, _ := strings.Cut(line, ":")
		_, decl, _ := strings.Cut(rest, ":")
		name := strings.TrimPrefix(decl[:strings.IndexByte(decl, '(')], "func ")
		entry := `"./` + filepath.Dir(file) + " " + name + `"`
		targets++
		if !strings.Contains(string(script), entry) {
			t.Errorf("%s (%s) is not in scripts/fuzz.sh's targets: add %s", name, file, entry)
		}
	}
	if targets == 0 {
		t.Fatal("no fuzz target found")
	}
}
