package configfile

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/realsync/realsync/internal/wait"
)

// Watch hands load each content that differs from the last one read (the
// content in force at first), a refused one once, and again after the
// file went missing; each error goes to refused once for as long as it
// stays, and again after a good load.
func TestWatch(t *testing.T) {
	path := filepath.Join(t.TempDir(), "file")
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(path+".tmp", []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(path+".tmp", path); err != nil { // as Kubernetes and configuration managers do
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	var loads, errs []string
	load := func(b []byte) error {
		mu.Lock()
		defer mu.Unlock()
		loads = append(loads, string(b))
		if strings.HasPrefix(string(b), "bad") {
			return errors.New("refused")
		}
		return nil
	}
	refused := func(err error) { mu.Lock(); errs = append(errs, err.Error()); mu.Unlock() }
	seen := func() ([]string, []string) {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(loads), slices.Clone(errs)
	}
	write("a")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { Watch(ctx, path, 2*time.Millisecond, []byte("a"), load, refused); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	settle := func() { time.Sleep(40 * time.Millisecond) } // twenty reads

	steps := []struct {
		name   string
		change func()
		loads  []string // every load so far
		errs   int      // every refusal so far
	}{
		{"the content in force", func() {}, nil, 0},
		{"changed", func() { write("b") }, []string{"b"}, 0},
		{"refused once", func() { write("bad") }, []string{"b", "bad"}, 1},
		{"missing, reported once", func() { os.Remove(path) }, []string{"b", "bad"}, 2},
		{"back after missing", func() { write("bad") }, []string{"b", "bad", "bad"}, 3},
		{"good again", func() { write("b") }, []string{"b", "bad", "bad", "b"}, 3},
		{"refused again after a good load", func() { write("bad") }, []string{"b", "bad", "bad", "b", "bad"}, 4},
		{"other content refused the same way", func() { write("bad2") }, []string{"b", "bad", "bad", "b", "bad", "bad2"}, 5},
	}
	for _, s := range steps {
		s.change()
		wait.Until(t, s.name, func() bool { l, e := seen(); return len(l) >= len(s.loads) && len(e) >= s.errs })
		settle()
		if l, e := seen(); !slices.Equal(l, s.loads) || len(e) != s.errs {
			t.Fatalf("%s: loads %q, refusals %q; want loads %q and %d refusals", s.name, l, e, s.loads, s.errs)
		}
	}
}
