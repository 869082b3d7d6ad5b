package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/internal/redistest"
)

// After Redis lost its data (here a FLUSHALL), a running instance writes
// the layout record again, logging a warning; once the record disagrees
// with the instance (shards changed under it), /readyz answers 503 and an
// error is logged, until the record agrees again.
func TestRunningInstanceGuardsTheLayout(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	srv, err := redistest.StartServer()
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	prefix := redistest.Prefix(t)
	in := start(t, bin, "REALSYNC_REDIS_URL=redis://"+srv.Addr, "REALSYNC_JWT_SECRET=e2e-secret",
		"REALSYNC_KEY_PREFIX="+prefix, "REALSYNC_SHARDS=8")
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer rdb.Close()
	if err := rdb.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	until := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(15 * time.Second); !cond(); time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("after 15 s: %s\n%s", what, in.logText())
			}
		}
	}
	until("the layout record is not restored", func() bool { return rdb.HGet(ctx, prefix+":meta", "shards").Val() == "8" })
	in.awaitLog(t, "layout record was missing")
	if status, body := get(t, in.url+"/readyz", ""); status != 200 {
		t.Fatalf("readyz, the record restored: %d %s", status, body)
	}
	if err := rdb.HSet(ctx, prefix+":meta", "shards", 4).Err(); err != nil {
		t.Fatal(err)
	}
	until("readyz does not answer 503", func() bool {
		status, body := get(t, in.url+"/readyz", "")
		return status == 503 && strings.Contains(body, "STORE_UNAVAILABLE")
	})
	in.awaitLogThat(t, "the layout's error", func(l string) bool { return strings.Contains(grep(l, "4 shards"), "level=ERROR") })
	if err := rdb.HSet(ctx, prefix+":meta", "shards", 8).Err(); err != nil {
		t.Fatal(err)
	}
	until("readyz does not answer 200 again", func() bool { status, _ := get(t, in.url+"/readyz", ""); return status == 200 })
}
