package main

import (
	"cmp"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// REALSYNC_WEBHOOKS_FILE, REALSYNC_WEBHOOK_MAX_ATTEMPTS,
// REALSYNC_WEBHOOK_TIMEOUT, REALSYNC_WEBHOOK_BACKOFF,
// REALSYNC_WEBHOOK_WORKERS and REALSYNC_WEBHOOK_MAX_BACKLOG: off by
// default (no outbox); a good file turns the outbox on; a missing or bad
// file, a bad attempt count, timeout, backoff, worker count or backlog
// bound (above the shards' deliveries bound, 10 000, too) are reported
// naming the variable; the flags win.
func TestParseConfigWebhooks(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "hooks.yaml")
	if err := os.WriteFile(good, []byte("endpoints:\n- id: a\n  url: https://h.example/x\n  secret: whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\n  events: ['*']\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("endpoints:\n- id: a\n  url: https://h.example/x\n  secret: nope\n  events: ['*']\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	unknown := filepath.Join(dir, "unknown.yaml")
	if err := os.WriteFile(unknown, []byte("endpoints:\n- id: a\n  url: https://h.example/x\n  secret: whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\n  events: [nonexistent_event]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const file, attempts = "REALSYNC_WEBHOOKS_FILE", "REALSYNC_WEBHOOK_MAX_ATTEMPTS"
	const timeout, backoff, workers = "REALSYNC_WEBHOOK_TIMEOUT", "REALSYNC_WEBHOOK_BACKOFF", "REALSYNC_WEBHOOK_WORKERS"
	const backlog = "REALSYNC_WEBHOOK_MAX_BACKLOG"
	tests := []struct {
		name       string
		env        map[string]string
		args       []string
		on         bool
		maxTry     int
		timeout    time.Duration // 0: the default 10 s
		base, most time.Duration // 0: the defaults 1 s, 10 min
		workers    int           // 0: the default 8
		backlog    int           // 0: the default 10 000
		wantErr    string
	}{
		{name: "DefaultOff", maxTry: 8},
		{name: "Good", env: map[string]string{file: good}, on: true, maxTry: 8},
		{name: "Attempts", env: map[string]string{file: good, attempts: "3"}, on: true, maxTry: 3},
		{name: "FlagsWin", env: map[string]string{attempts: "3", timeout: "3s", backoff: "2s,1m"},
			args: []string{"-webhooks-file", good, "-webhook-max-attempts", "5", "-webhook-timeout", "2s", "-webhook-backoff", "5ms,1s"},
			on:   true, maxTry: 5, timeout: 2 * time.Second, base: 5 * time.Millisecond, most: time.Second},
		{name: "Missing", env: map[string]string{file: dir + "/none"}, wantErr: file},
		{name: "BadSecret", env: map[string]string{file: bad}, wantErr: file},
		{name: "UnknownEvent", env: map[string]string{file: unknown}, wantErr: file + ": webhooks file " + unknown + `: endpoints[0].events[0]: unknown event type "nonexistent_event": one of state,`},
		{name: "ZeroAttempts", env: map[string]string{attempts: "0"}, wantErr: attempts},
		{name: "WordAttempts", env: map[string]string{attempts: "many"}, wantErr: attempts},
		{name: "Timeout", env: map[string]string{timeout: "500ms"}, maxTry: 8, timeout: 500 * time.Millisecond},
		{name: "TimeoutTooShort", env: map[string]string{timeout: "10ms"}, wantErr: timeout},
		{name: "TimeoutTooLong", env: map[string]string{timeout: "2m"}, wantErr: timeout},
		{name: "TimeoutNoUnit", env: map[string]string{timeout: "10"}, wantErr: timeout},
		{name: "Backoff", env: map[string]string{backoff: "1ms, 600ms"}, maxTry: 8, base: time.Millisecond, most: 600 * time.Millisecond},
		{name: "BackoffOne", env: map[string]string{backoff: "1s"}, wantErr: backoff},
		{name: "BackoffMaxBelowBase", env: map[string]string{backoff: "1m,1s"}, wantErr: backoff},
		{name: "BackoffZeroBase", env: map[string]string{backoff: "0s,1s"}, wantErr: backoff},
		{name: "BackoffTooLong", env: map[string]string{backoff: "1s,25h"}, wantErr: backoff},
		{name: "BackoffWords", env: map[string]string{backoff: "soon,later"}, wantErr: backoff},
		{name: "Workers", env: map[string]string{workers: "64"}, maxTry: 8, workers: 64},
		{name: "WorkersFlag", env: map[string]string{workers: "64"}, args: []string{"-webhook-workers", "2"}, maxTry: 8, workers: 2},
		{name: "WorkersZero", env: map[string]string{workers: "0"}, wantErr: workers},
		{name: "WorkersTooMany", env: map[string]string{workers: "5000"}, wantErr: workers},
		{name: "WorkersWord", env: map[string]string{workers: "lots"}, wantErr: workers},
		{name: "Backlog", env: map[string]string{backlog: "1500"}, maxTry: 8, backlog: 1500},
		{name: "BacklogAtLeast", env: map[string]string{backlog: "1000"}, maxTry: 8, backlog: 1000},
		{name: "BacklogBelowABurst", env: map[string]string{backlog: "999"}, wantErr: backlog},
		{name: "BacklogAtMost", env: map[string]string{backlog: "10000"}, maxTry: 8, backlog: 10000},
		{name: "BacklogFlag", env: map[string]string{backlog: "1500"}, args: []string{"-webhook-max-backlog", "2000"}, maxTry: 8, backlog: 2000},
		{name: "BacklogZero", env: map[string]string{backlog: "0"}, wantErr: backlog},
		{name: "BacklogAboveTheDeliveries", env: map[string]string{backlog: "10001"}, wantErr: backlog},
		{name: "BacklogWord", env: map[string]string{backlog: "lots"}, wantErr: backlog},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, ok := parseCase(t, tc.env, tc.args, tc.wantErr)
			if !ok {
				return
			}
			if got := storeConfig(c).WebhookOutboxLen > 0; got != tc.on || c.WebhookMaxAttempts != tc.maxTry {
				t.Errorf("outbox on %v, max attempts %d; want %v, %d", got, c.WebhookMaxAttempts, tc.on, tc.maxTry)
			}
			wantT, wantB, wantM := cmp.Or(tc.timeout, 10*time.Second), cmp.Or(tc.base, time.Second), cmp.Or(tc.most, 10*time.Minute)
			if c.WebhookTimeout != wantT || c.WebhookBackoffBase != wantB || c.WebhookBackoffMax != wantM {
				t.Errorf("timeout %v, backoff %v..%v; want %v, %v..%v", c.WebhookTimeout, c.WebhookBackoffBase, c.WebhookBackoffMax, wantT, wantB, wantM)
			}
			if want := cmp.Or(tc.workers, 8); c.WebhookWorkers != want {
				t.Errorf("workers %d, want %d", c.WebhookWorkers, want)
			}
			if want := cmp.Or(tc.backlog, 10000); c.WebhookMaxBacklog != want {
				t.Errorf("max backlog %d, want %d", c.WebhookMaxBacklog, want)
			}
		})
	}
}
