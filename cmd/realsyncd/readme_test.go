package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestREADMEWalkthrough runs the README's walkthrough block as written,
// with bash, curl and jq, against a realsyncd on the embedded store (what
// a newcomer starts) and on a real Redis, with the default limits. Every
// call must answer 2xx unless the lines after it show a problem code;
// every "# →" line must appear in what the command before it printed, in
// order ("..." matches anything). An example that fails, fails here.
func TestREADMEWalkthrough(t *testing.T) {
	for _, tool := range []string{"bash", "curl", "jq"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("the walkthrough needs %s (scripts/test.sh installs it): %v", tool, err)
		}
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	block, err := shellBlock(string(readme), "## Walkthrough with curl")
	if err != nil {
		t.Fatal(err)
	}
	steps, err := parseWalkthrough(block)
	if err != nil {
		t.Fatal(err)
	}
	bin := buildBinary(t)
	for _, backend := range []string{"embedded", "standalone"} {
		t.Run(backend, func(t *testing.T) {
			var env []string
			if backend != "embedded" {
				env, _, _ = sharedBackend(t, backend)
			}
			in := start(t, bin, env...)
			outs := runWalkthrough(t, steps, strings.TrimPrefix(in.url, "http://"))
			for i, s := range steps {
				if err := matchInOrder(outs[i], s.expect); err != nil {
					t.Errorf("README walkthrough, after\n%s\n%v; it printed:\n%s", s.code, err, outs[i])
				}
			}
			// What the two background streams printed by the end: the
			// lobby saw the room leave when it started; the room's stream
			// saw the chat message.
			last := func(pred func(step) bool) string {
				for i := len(steps) - 1; i >= 0; i-- {
					if pred(steps[i]) {
						return outs[i]
					}
				}
				return ""
			}
			lobby := last(func(s step) bool { return s.background && strings.Contains(s.code, "/v1/lobby/events") })
			room := last(func(s step) bool {
				return s.background && strings.Contains(s.code, "/events?token=") && !strings.Contains(s.code, "lobby")
			})
			if !strings.Contains(lobby, "event: room_removed") {
				t.Errorf("the lobby stream did not print room_removed when the room started:\n%s", lobby)
			}
			if !strings.Contains(room, "event: message") || !strings.Contains(room, `"gl hf"`) {
				t.Errorf("the room stream did not print the chat message:\n%s", room)
			}
		})
	}
}

// step is one command of a walkthrough (continuation lines joined as
// written) and the "# →" lines after it.
type step struct {
	code       string
	expect     []string
	background bool // ends with & (a stream), maybe followed by "sleep N"
}

var backgroundRE = regexp.MustCompile(`[^&]&(\s*sleep [0-9.]+)?\s*$`)

// shellBlock returns the first ```sh block after the heading.
func shellBlock(md, heading string) (string, error) {
	i := strings.Index(md, "\n"+heading+"\n")
	if i < 0 {
		return "", fmt.Errorf("no %q in the README", heading)
	}
	rest := md[i:]
	j := strings.Index(rest, "\n```sh\n")
	if j < 0 {
		return "", fmt.Errorf("no sh block after %q", heading)
	}
	rest = rest[j+len("\n```sh\n"):]
	k := strings.Index(rest, "\n```")
	if k < 0 {
		return "", fmt.Errorf("unterminated sh block after %q", heading)
	}
	return rest[:k+1], nil
}

// parseWalkthrough splits a shell block into commands: comments and blank
// lines are dropped, a line ending in a backslash continues, "# → " lines
// belong to the command before them.
func parseWalkthrough(block string) ([]step, error) {
	var steps []step
	var cur []string
	for n, line := range strings.Split(block, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(trimmed, "# → "):
			if len(cur) > 0 || len(steps) == 0 {
				return nil, fmt.Errorf("line %d: %q follows no command", n+1, line)
			}
			steps[len(steps)-1].expect = append(steps[len(steps)-1].expect, strings.TrimPrefix(trimmed, "# → "))
		case trimmed == "" || strings.HasPrefix(trimmed, "#"):
			if len(cur) > 0 {
				return nil, fmt.Errorf("line %d: a comment inside a continued command", n+1)
			}
		default:
			cur = append(cur, line)
			if !strings.HasSuffix(line, `\`) {
				code := strings.Join(cur, "\n")
				steps = append(steps, step{code: code, background: backgroundRE.MatchString(code)})
				cur = nil
			}
		}
	}
	if len(cur) > 0 {
		return nil, fmt.Errorf("the block ends inside a continued command")
	}
	return steps, nil
}

// walkthroughPrelude makes curl fail (exit 22) on an HTTP error unless
// the step shows one, and tells which call it was.
const walkthroughPrelude = `set -euo pipefail
curl() {
  local h; h="$(mktemp -p "$RS_OUT")"
  command curl -D "$h" "$@" || return
  local st; st="$(sed -n '1s/^HTTP\/[0-9.]* \([0-9]*\).*/\1/p' "$h")"
  if [ -z "${RS_ALLOW_ERROR:-}" ] && [ "${st:-0}" -ge 400 ]; then
    echo "walkthrough: HTTP $st from curl $*" >&2
    return 22
  fi
}
`

// runWalkthrough runs the steps in one bash, with localhost:8080 replaced
// by addr, and returns what each printed. The whole process group is
// killed at the end, the background streams with it.
func runWalkthrough(t *testing.T, steps []step, addr string) []string {
	t.Helper()
	dir := t.TempDir()
	var sb strings.Builder
	sb.WriteString(walkthroughPrelude)
	for i, s := range steps {
		code := strings.ReplaceAll(s.code, "localhost:8080", addr)
		allowError := false
		for _, e := range s.expect {
			allowError = allowError || strings.Contains(e, `"code":"`)
		}
		if allowError {
			sb.WriteString("RS_ALLOW_ERROR=1\n")
		}
		fmt.Fprintf(&sb, "{\n%s\n} >\"$RS_OUT/out%d\" 2>&1\n", code, i)
		if allowError {
			sb.WriteString("RS_ALLOW_ERROR=\n")
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", sb.String())
	cmd.Env = append(os.Environ(), "RS_OUT="+dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	// Its output goes to a file, not a pipe: a stream left running in the
	// background must not keep Wait waiting.
	log, err := os.Create(filepath.Join(dir, "bash.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	cmd.Stdout, cmd.Stderr = log, log
	err = cmd.Run()
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	out, _ := os.ReadFile(log.Name())
	outs := make([]string, len(steps))
	for i := range steps {
		b, _ := os.ReadFile(filepath.Join(dir, fmt.Sprintf("out%d", i)))
		outs[i] = string(b)
	}
	if err != nil {
		failed := "(none)"
		for i := len(steps) - 1; i >= 0; i-- {
			if _, statErr := os.Stat(filepath.Join(dir, fmt.Sprintf("out%d", i))); statErr == nil {
				failed = steps[i].code + "\nprinted:\n" + outs[i]
				break
			}
		}
		t.Fatalf("the README walkthrough failed (%v): %s\nthe last command run:\n%s", err, out, failed)
	}
	return outs
}

// matchInOrder checks that every pattern appears in out after the one
// before it; "..." in a pattern matches anything.
func matchInOrder(out string, patterns []string) error {
	at := 0
	for _, p := range patterns {
		pos := at
		for _, lit := range strings.Split(p, "...") {
			k := strings.Index(out[pos:], lit)
			if k < 0 {
				return fmt.Errorf("expected %q", p)
			}
			pos += k + len(lit)
		}
		at = pos
	}
	return nil
}
