package main

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/realsync/realsync/api"
	"github.com/realsync/realsync/internal/testlog"
)

// A warning repeated 1000 times within the interval is written once, then
// one line counts the other 999; other messages, and lines below the
// minimum level, are not held back.
func TestDedupHandler(t *testing.T) {
	var out testlog.Buffer
	log := slog.New(newDedupHandler(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelDebug}),
		slog.LevelWarn, time.Second)).With("component", "test")
	for i := range 1000 {
		log.Warn("store unavailable", "i", i)
		log.Debug("request", "i", i)
	}
	log.Error("janitor", "shard", 1)
	log.Warn("store unavailable", "i", 1000)
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(out.String(), "suppressed="); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no count of the suppressed lines:\n%s", out.String())
		}
	}
	text := out.String()
	if n := strings.Count(text, `msg="store unavailable"`); n != 2 {
		t.Errorf("%d store unavailable lines, want the first and the count:\n%s", n, text)
	}
	if !strings.Contains(text, `level=WARN msg="store unavailable" component=test suppressed=1000`) {
		t.Errorf("the count line is missing or wrong:\n%s", text)
	}
	if n := strings.Count(text, "msg=request"); n != 1000 {
		t.Errorf("%d debug lines, want all 1000", n)
	}
	if n := strings.Count(text, "msg=janitor"); n != 1 {
		t.Errorf("%d janitor lines, want 1", n)
	}
}

// The process' logger gives a request's lines its id (api.LogHandler),
// under the dedup handler, in either format.
func TestLoggerTagsRequestLines(t *testing.T) {
	for _, format := range []string{"text", "json"} {
		d, ok := newLogger(io.Discard, format, "info").Handler().(*dedupHandler)
		if want := fmt.Sprintf("%T", api.LogHandler(nil)); !ok || fmt.Sprintf("%T", d.inner) != want {
			t.Errorf("%s: the logger's handler is %T, want a dedup handler over %s", format, newLogger(io.Discard, format, "info").Handler(), want)
		}
	}
}
