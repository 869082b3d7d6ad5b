package store_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/store"
)

// logBuffer is a log's text, written by the janitor's goroutine and read
// by the test's.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// runJanitor runs s's janitor every 20 ms until tb ends, logging to the
// returned buffer.
func runJanitor(tb testing.TB, s *store.Store) *logBuffer {
	tb.Helper()
	buf := &logBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.RunJanitor(ctx, "guard-test", 20*time.Millisecond, slog.New(slog.NewTextHandler(buf, nil)))
	}()
	tb.Cleanup(func() { cancel(); <-done })
	return buf
}

// eventually polls cond every 20 ms until it holds, failing tb after 10 s.
func eventually(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			tb.Fatalf("after 10 s: %s", what)
		}
	}
}

// Once Redis lost the layout record (a restart without persistence, a
// FLUSHALL), a running instance's janitor writes it again, so a store
// started with another shard count is refused as before; a record that
// disagrees with the running store (another instance's, written first)
// makes its Ready fail with ErrLayout, logged at error, until it agrees
// again.
func TestJanitorRestoresTheLayoutRecord(t *testing.T) {
	for _, b := range redistest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			ctx := context.Background()
			s := openStore(t, b) // 8 shards
			meta := s.Prefix() + ":meta"
			if err := s.Client().Del(ctx, meta).Err(); err != nil {
				t.Fatal(err)
			}
			log := runJanitor(t, s)
			eventually(t, "the layout record is not restored", func() bool {
				v, _ := s.Client().HMGet(ctx, meta, "shards", "schema").Result()
				return len(v) == 2 && v[0] == "8" && v[1] != nil
			})
			if !strings.Contains(log.String(), "level=WARN") || !strings.Contains(log.String(), "layout record was missing") {
				t.Errorf("log %q, want a warning that the layout record was restored", log.String())
			}
			if b.Name != "embedded" { // the embedded store is the process' own
				other, err := store.Open(ctx, store.Config{RedisURL: b.URL, ClusterAddrs: b.ClusterAddrs, Prefix: s.Prefix(), Shards: 4})
				if err == nil {
					other.Close()
				}
				if !errors.Is(err, store.ErrLayout) {
					t.Fatalf("open with 4 shards after the record was restored: %v, want ErrLayout", err)
				}
			}
			if err := s.Ready(ctx); err != nil {
				t.Fatalf("Ready, the record agreeing: %v", err)
			}
			if err := s.Client().HSet(ctx, meta, "shards", 4).Err(); err != nil {
				t.Fatal(err)
			}
			eventually(t, "Ready does not fail with ErrLayout", func() bool { return errors.Is(s.Ready(ctx), store.ErrLayout) })
			if !strings.Contains(log.String(), "level=ERROR") || !strings.Contains(log.String(), "4 shards") {
				t.Errorf("log %q, want an error naming the recorded shard count", log.String())
			}
			if err := s.Client().HSet(ctx, meta, "shards", 8).Err(); err != nil {
				t.Fatal(err)
			}
			eventually(t, "Ready still fails", func() bool { return s.Ready(ctx) == nil })
		})
	}
}
