package main

import (
	"os"
	"path/filepath"
	"testing"
)

// REALSYNC_WEBHOOKS_FILE and REALSYNC_WEBHOOK_MAX_ATTEMPTS: off by default
// (no outbox); a good file turns the outbox on; a missing or bad file and a
// bad attempt count are reported naming the variable; the flags win.
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
	const file, attempts = "REALSYNC_WEBHOOKS_FILE", "REALSYNC_WEBHOOK_MAX_ATTEMPTS"
	tests := []struct {
		name    string
		env     map[string]string
		args    []string
		on      bool
		maxTry  int
		wantErr string
	}{
		{name: "DefaultOff", maxTry: 8},
		{name: "Good", env: map[string]string{file: good}, on: true, maxTry: 8},
		{name: "Attempts", env: map[string]string{file: good, attempts: "3"}, on: true, maxTry: 3},
		{name: "FlagsWin", env: map[string]string{attempts: "3"}, args: []string{"-webhooks-file", good, "-webhook-max-attempts", "5"}, on: true, maxTry: 5},
		{name: "Missing", env: map[string]string{file: dir + "/none"}, wantErr: file},
		{name: "BadSecret", env: map[string]string{file: bad}, wantErr: file},
		{name: "ZeroAttempts", env: map[string]string{attempts: "0"}, wantErr: attempts},
		{name: "WordAttempts", env: map[string]string{attempts: "many"}, wantErr: attempts},
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
		})
	}
}
