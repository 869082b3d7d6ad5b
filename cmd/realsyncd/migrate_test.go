package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/internal/redistest"
)

// A migration that fails before reading anything says so on stderr, exit
// 1, and nothing on stdout (a tester's find: stdout said "no RealSync data
// under prefix …: nothing to migrate" with Redis unreachable, or with
// REALSYNC_SHARDS other than the deployment's); one that finds no data
// says that, exit 0.
func TestMigrateReportsOnlyWhatItRead(t *testing.T) {
	url := redistest.StandaloneURL(t)
	prefix := redistest.Prefix(t)
	o, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	r := redis.NewClient(o)
	defer r.Close()
	mismatched := prefix + "m"
	if err := r.HSet(t.Context(), mismatched+":meta", "shards", 16, "schema", 1).Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Del(t.Context(), mismatched+":meta") })
	for _, tc := range []struct {
		name         string
		env          map[string]string
		code         int
		stdout, errs string
	}{
		{"Unreachable", map[string]string{"REALSYNC_REDIS_URL": "redis://127.0.0.1:1/0?dial_timeout=200ms", "REALSYNC_KEY_PREFIX": prefix}, 1, "", "realsyncd migrate:"},
		{"ShardMismatch", map[string]string{"REALSYNC_REDIS_URL": url, "REALSYNC_KEY_PREFIX": mismatched, "REALSYNC_SHARDS": "8"}, 1, "", "realsyncd migrate:"},
		{"NoData", map[string]string{"REALSYNC_REDIS_URL": url, "REALSYNC_KEY_PREFIX": prefix + "none"}, 0, "nothing to migrate", ""},
		// the JWT secret, required of a production server, is not of a
		// migration, which verifies no token (a tester's find)
		{"ProductionWithoutSecret", map[string]string{"REALSYNC_ENV": "production", "REALSYNC_REDIS_URL": url, "REALSYNC_KEY_PREFIX": prefix + "none"}, 0, "nothing to migrate", ""},
		{"ProductionWithoutRedis", map[string]string{"REALSYNC_ENV": "production"}, 2, "", "REALSYNC_REDIS_URL or REALSYNC_REDIS_CLUSTER_ADDRS: one is required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := migrateMain(func(k string) string { return tc.env[k] }, []string{"-dry-run"}, &stdout, &stderr)
			if code != tc.code || !strings.Contains(stdout.String(), tc.stdout) || (tc.stdout == "" && stdout.Len() > 0) ||
				!strings.Contains(stderr.String(), tc.errs) {
				t.Fatalf("exit %d, stdout %q, stderr %q; want %d, stdout %q, stderr with %q", code, stdout.String(), stderr.String(),
					tc.code, tc.stdout, tc.errs)
			}
		})
	}
}
