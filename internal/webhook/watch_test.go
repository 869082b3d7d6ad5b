package webhook

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/realsync/realsync/internal/testlog"
)

// Watch applies a changed file's endpoints once; an unchanged file, or one
// rewritten with the same endpoints, applies nothing; a bad file is logged
// once while it stays bad and the endpoints in force stay; a good file
// after it applies again.
func TestWatchReloadsChangedEndpoints(t *testing.T) {
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	file := func(ids ...string) string {
		var b strings.Builder
		b.WriteString("endpoints:\n")
		for _, id := range ids {
			b.WriteString("- id: " + id + "\n  url: https://h.example/" + id + "\n  secret: " + secret + "\n  events: ['*']\n")
		}
		return b.String()
	}
	path := filepath.Join(t.TempDir(), "hooks.yaml")
	// written whole (a poll between WriteFile's truncate and its write
	// would read an empty file: refused, logged, and read again later)
	write := func(s string) {
		t.Helper()
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
	}
	write(file("a"))
	current, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var applied [][]string
	loads := map[bool]int{}
	loaded := func(ok bool) { mu.Lock(); loads[ok]++; mu.Unlock() }
	apply := func(eps []Endpoint) {
		ids := make([]string, len(eps))
		for i, ep := range eps {
			ids[i] = ep.ID
		}
		mu.Lock()
		applied = append(applied, ids)
		mu.Unlock()
	}
	got := func() [][]string { mu.Lock(); defer mu.Unlock(); return append([][]string(nil), applied...) }
	logs := &testlog.Buffer{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		Watch(ctx, path, 5*time.Millisecond, current, apply, loaded, slog.New(slog.NewTextHandler(logs, nil)))
	}()
	t.Cleanup(func() { cancel(); <-done })
	wait := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s (applied %v, logs %s)", what, got(), logs.String())
			}
		}
	}
	settle := func() { time.Sleep(50 * time.Millisecond) } // ten polls

	settle()
	write(file("a") + "\n") // other bytes, the same endpoints
	settle()
	if len(got()) != 0 {
		t.Fatalf("applied %v without a change of endpoints", got())
	}
	write(file("a", "b"))
	wait("a and b applied", func() bool { return len(got()) == 1 })
	if g := got()[0]; len(g) != 2 || g[0] != "a" || g[1] != "b" {
		t.Fatalf("applied %v", g)
	}
	write("endpoints:\n- id: a\n  url: nope\n")
	wait("the bad file logged", func() bool { return strings.Contains(logs.String(), "not reloaded") })
	settle()
	if n := strings.Count(logs.String(), "not reloaded"); n != 1 {
		t.Fatalf("the bad file logged %d times, want once:\n%s", n, logs.String())
	}
	mu.Lock()
	if loads[false] != 1 {
		t.Errorf("refused loads %d, want 1 (one per bad content)", loads[false])
	}
	mu.Unlock()
	write(file("b"))
	wait("b applied", func() bool { return len(got()) == 2 })
	mu.Lock()
	if loads[true] < 3 { // a + newline, a and b, b
		t.Errorf("good loads %d, want 3", loads[true])
	}
	mu.Unlock()
	if g := got()[1]; len(g) != 1 || g[0] != "b" {
		t.Fatalf("applied %v", g)
	}
	settle()
	if len(got()) != 2 {
		t.Fatalf("applied again without a change: %v", got())
	}
	// refused, back to the file in force, then refused the same way
	// again: logged and told each time
	bad := "endpoints:\n- id: b\n  url: nope\n"
	write(bad)
	wait("the second bad file logged", func() bool { return strings.Count(logs.String(), "not reloaded") == 2 })
	mu.Lock()
	good := loads[true]
	mu.Unlock()
	write(file("b"))
	wait("the revert told", func() bool { mu.Lock(); defer mu.Unlock(); return loads[true] == good+1 })
	write(bad)
	// Watch logs a refusal, then tells it: wait for both (the told
	// count read right after the log line raced it: CI, 2026-12-06)
	wait("the same bad file after the revert logged and told", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return strings.Count(logs.String(), "not reloaded") == 3 && loads[false] >= 3
	})
	mu.Lock()
	if loads[false] != 3 {
		t.Errorf("refused loads %d, want 3", loads[false])
	}
	mu.Unlock()
	if len(got()) != 2 {
		t.Fatalf("the revert applied the endpoints in force again: %v", got())
	}
}

// TestWatchTellsNoReloadOfTheFileInForce: the file Watch starts with,
// holding the endpoints in force, is no reload: nothing is applied or
// told (realsync_webhooks_file_reloads_total{result="ok"} counted 1 about
// 5 s after every start, the file unchanged); a file changed after the
// endpoints in force were read from it, before Watch started, is applied
// and told once.
func TestWatchTellsNoReloadOfTheFileInForce(t *testing.T) {
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	file := func(id string) []byte {
		return []byte("endpoints:\n- id: " + id + "\n  url: https://h.example/" + id + "\n  secret: " + secret + "\n  events: ['*']\n")
	}
	for _, tc := range []struct {
		name string
		// the file when Watch starts (the endpoints in force: a's)
		atStart []byte
		// what Watch applies and tells (ok) in its first polls
		applied, told int
	}{
		{"UnchangedNothingTold", file("a"), 0, 0},
		{"ChangedBeforeTheStartAppliedAndTold", file("b"), 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "hooks.yaml")
			if err := os.WriteFile(path, file("a"), 0o600); err != nil {
				t.Fatal(err)
			}
			current, err := Load(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, tc.atStart, 0o600); err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			applied, told := 0, map[bool]int{}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() {
				defer close(done)
				Watch(ctx, path, 5*time.Millisecond, current, func([]Endpoint) { mu.Lock(); applied++; mu.Unlock() },
					func(ok bool) { mu.Lock(); told[ok]++; mu.Unlock() }, slog.New(slog.NewTextHandler(&testlog.Buffer{}, nil)))
			}()
			counts := func() (int, int, int) { mu.Lock(); defer mu.Unlock(); return applied, told[true], told[false] }
			for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(5 * time.Millisecond) {
				if a, ok, _ := counts(); a >= tc.applied && ok >= tc.told {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("timed out waiting for the change to be applied")
				}
			}
			time.Sleep(100 * time.Millisecond) // twenty polls more
			cancel()
			<-done
			if a, ok, bad := counts(); a != tc.applied || ok != tc.told || bad != 0 {
				t.Fatalf("applied %d, told ok %d, refused %d; want %d, %d, 0", a, ok, bad, tc.applied, tc.told)
			}
		})
	}
}
