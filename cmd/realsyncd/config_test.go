package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// Good values of the observability settings parse, flags win over
// variables, and bad ones are reported naming the variable.
func TestParseConfigObservability(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		args    []string
		metrics string // want MetricsAddr
		format  string // want LogFormat
		err     string // want an error naming this, "" for none
	}{
		{name: "Defaults", format: "text"},
		{name: "JSON", env: map[string]string{"REALSYNC_LOG_FORMAT": "json"}, format: "json"},
		{name: "FlagWins", env: map[string]string{"REALSYNC_LOG_FORMAT": "json"}, args: []string{"-log-format", "text"}, format: "text"},
		{name: "MetricsPort", env: map[string]string{"REALSYNC_METRICS_ADDR": ":9090"}, metrics: ":9090", format: "text"},
		{name: "MetricsHost", args: []string{"-metrics-addr", "10.0.0.5:9090"}, metrics: "10.0.0.5:9090", format: "text"},
		{name: "MetricsIPv6", env: map[string]string{"REALSYNC_METRICS_ADDR": "[::1]:9090"}, metrics: "[::1]:9090", format: "text"},
		{name: "BadFormat", env: map[string]string{"REALSYNC_LOG_FORMAT": "logfmt"}, err: "REALSYNC_LOG_FORMAT"},
		{name: "MetricsNoPort", env: map[string]string{"REALSYNC_METRICS_ADDR": "localhost"}, err: "REALSYNC_METRICS_ADDR"},
		{name: "MetricsBadPort", env: map[string]string{"REALSYNC_METRICS_ADDR": ":99999"}, err: "REALSYNC_METRICS_ADDR"},
		{name: "MetricsNamedPort", env: map[string]string{"REALSYNC_METRICS_ADDR": ":http"}, err: "REALSYNC_METRICS_ADDR"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ParseConfig(func(k string) string { return tc.env[k] }, tc.args)
			switch {
			case tc.err != "":
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one naming %s", err, tc.err)
				}
			case err != nil:
				t.Fatal(err)
			case c.MetricsAddr != tc.metrics || c.LogFormat != tc.format:
				t.Errorf("metrics %q, format %q; want %q and %q", c.MetricsAddr, c.LogFormat, tc.metrics, tc.format)
			}
		})
	}
}

// REALSYNC_ENV sets the guest default and requires a secret in
// production; the JWT settings parse, and bad values name their variable.
func TestParseConfigIdentity(t *testing.T) {
	secret := strings.Repeat("s", 32)
	tests := []struct {
		name   string
		env    map[string]string
		args   []string
		guest  bool          // want GuestAuth
		forced bool          // want the production guest warning
		leeway time.Duration // want JWTLeeway
		err    string        // want an error naming this, "" for none
	}{
		{name: "Defaults", guest: true, leeway: 30 * time.Second},
		{name: "DevelopmentGuestOff", env: map[string]string{"REALSYNC_GUEST_AUTH": "false"}, leeway: 30 * time.Second},
		{name: "Production", env: map[string]string{"REALSYNC_ENV": "production", "REALSYNC_JWT_SECRET": secret}, leeway: 30 * time.Second},
		{name: "ProductionGuestForced", env: map[string]string{"REALSYNC_ENV": "production", "REALSYNC_JWT_SECRET": secret, "REALSYNC_GUEST_AUTH": "true"},
			guest: true, forced: true, leeway: 30 * time.Second},
		{name: "ProductionFlag", args: []string{"-env", "production", "-jwt-secret", secret}, leeway: 30 * time.Second},
		{name: "Leeway", env: map[string]string{"REALSYNC_JWT_LEEWAY": "5s"}, guest: true, leeway: 5 * time.Second},
		{name: "NoLeeway", args: []string{"-jwt-leeway", "0"}, guest: true},
		{name: "KeysFile", env: map[string]string{"REALSYNC_JWT_KEYS_FILE": "/etc/realsync/jwks.json", "REALSYNC_JWT_ISSUER": "https://login.example",
			"REALSYNC_JWT_AUDIENCE": "realsync"}, guest: true, leeway: 30 * time.Second},
		{name: "BadEnv", env: map[string]string{"REALSYNC_ENV": "prod"}, err: "REALSYNC_ENV"},
		{name: "ProductionNoSecret", env: map[string]string{"REALSYNC_ENV": "production"}, err: "REALSYNC_JWT_SECRET"},
		{name: "ProductionShortSecret", env: map[string]string{"REALSYNC_ENV": "production", "REALSYNC_JWT_SECRET": "short"}, err: "REALSYNC_JWT_SECRET"},
		{name: "BadLeeway", env: map[string]string{"REALSYNC_JWT_LEEWAY": "-1s"}, err: "REALSYNC_JWT_LEEWAY"},
		{name: "HugeLeeway", env: map[string]string{"REALSYNC_JWT_LEEWAY": "1h"}, err: "REALSYNC_JWT_LEEWAY"},
		{name: "IssuerWithoutKeys", env: map[string]string{"REALSYNC_JWT_ISSUER": "https://login.example"}, err: "REALSYNC_JWT_KEYS_FILE"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ParseConfig(func(k string) string { return tc.env[k] }, tc.args)
			switch {
			case tc.err != "":
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one naming %s", err, tc.err)
				}
				if strings.Contains(err.Error(), "short") {
					t.Error("the error echoes the secret")
				}
			case err != nil:
				t.Fatal(err)
			case c.GuestAuth != tc.guest || c.guestForced != tc.forced || c.JWTLeeway != tc.leeway:
				t.Errorf("guest %v forced %v leeway %v; want %v %v %v", c.GuestAuth, c.guestForced, c.JWTLeeway, tc.guest, tc.forced, tc.leeway)
			}
		})
	}
}

// go-redis' own lines come out as structured warnings of the process'
// logger, JSON included.
func TestRedisLinesThroughSlog(t *testing.T) {
	var buf bytes.Buffer
	redisLogger{newLogger(&buf, "json", "info")}.Printf(context.Background(), "redis: %s: %d", "Unexpected conn state", 3)
	var line map[string]any
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
		t.Fatalf("%q: %v", buf.String(), err)
	}
	if line["level"] != "WARN" || line["component"] != "go-redis" || line["msg"] != "redis client" ||
		line["detail"] != "redis: Unexpected conn state: 3" {
		t.Errorf("line %v", line)
	}
}
