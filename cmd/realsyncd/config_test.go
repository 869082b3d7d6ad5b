package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/realsync/realsync/players"
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
			if c, ok := parseCase(t, tc.env, tc.args, tc.err); ok && (c.MetricsAddr != tc.metrics || c.LogFormat != tc.format) {
				t.Errorf("metrics %q, format %q; want %q and %q", c.MetricsAddr, c.LogFormat, tc.metrics, tc.format)
			}
		})
	}
}

// REALSYNC_RATE_LIMITS and REALSYNC_TRUSTED_PROXIES: good values parse,
// flags win, bad ones are reported naming the variable.
func TestParseConfigRateLimits(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		args    []string
		limits  string // want RateLimits.String() to contain this
		off     bool
		proxies string // want TrustedProxies, joined with ","
		lease   string // want RateLimitLease.String(), "" to skip
		err     string // want an error naming this, "" for none
	}{
		{name: "Defaults", limits: "create.user=20/m:burst=10"},
		{name: "Off", env: map[string]string{"REALSYNC_RATE_LIMITS": "off"}, off: true},
		{name: "Override", env: map[string]string{"REALSYNC_RATE_LIMITS": "create=10/m,join.ip=5/s:burst=9"}, limits: "join.ip=5/s:burst=9"},
		{name: "FlagWins", env: map[string]string{"REALSYNC_RATE_LIMITS": "off"}, args: []string{"-rate-limits", "read=1/s"}, limits: "read.user=1/s:burst=1"},
		{name: "BadLimit", env: map[string]string{"REALSYNC_RATE_LIMITS": "create=ten/m"}, err: "REALSYNC_RATE_LIMITS"},
		{name: "UnknownLimit", env: map[string]string{"REALSYNC_RATE_LIMITS": "chat=1/s"}, err: "REALSYNC_RATE_LIMITS"},
		{name: "Proxies", env: map[string]string{"REALSYNC_TRUSTED_PROXIES": "10.0.0.0/8, 192.0.2.7,fd00::/8"}, limits: "create", proxies: "10.0.0.0/8,192.0.2.7/32,fd00::/8"},
		{name: "ProxyHostBitsMasked", args: []string{"-trusted-proxies", "10.1.2.3/16"}, limits: "create", proxies: "10.1.0.0/16"},
		{name: "MappedProxies", env: map[string]string{"REALSYNC_TRUSTED_PROXIES": "::ffff:127.0.0.2/128,::ffff:10.0.0.0/104,::ffff:192.0.2.7"}, limits: "create", proxies: "127.0.0.2/32,10.0.0.0/8,192.0.2.7/32"},
		{name: "MappedProxyTooWide", env: map[string]string{"REALSYNC_TRUSTED_PROXIES": "::ffff:0.0.0.0/64"}, err: "REALSYNC_TRUSTED_PROXIES"},
		{name: "ZonedProxy", env: map[string]string{"REALSYNC_TRUSTED_PROXIES": "fe80::1%eth0"}, err: "REALSYNC_TRUSTED_PROXIES: \"fe80::1%eth0\": a zone is not taken"},
		{name: "BadProxy", env: map[string]string{"REALSYNC_TRUSTED_PROXIES": "10.0.0.0/33"}, err: "REALSYNC_TRUSTED_PROXIES"},
		{name: "ProxyName", env: map[string]string{"REALSYNC_TRUSTED_PROXIES": "lb.internal"}, err: "REALSYNC_TRUSTED_PROXIES"},
		{name: "LeaseDefault", limits: "create", lease: "1s"},
		{name: "LeaseOff", env: map[string]string{"REALSYNC_RATE_LIMIT_LEASE": "0"}, limits: "create", lease: "0s"},
		{name: "LeaseSet", args: []string{"-rate-limit-lease", "250ms"}, limits: "create", lease: "250ms"},
		{name: "LeaseTooLong", env: map[string]string{"REALSYNC_RATE_LIMIT_LEASE": "11s"}, err: "REALSYNC_RATE_LIMIT_LEASE"},
		{name: "LeaseNegative", env: map[string]string{"REALSYNC_RATE_LIMIT_LEASE": "-1s"}, err: "REALSYNC_RATE_LIMIT_LEASE"},
		{name: "LeaseBad", env: map[string]string{"REALSYNC_RATE_LIMIT_LEASE": "soon"}, err: "REALSYNC_RATE_LIMIT_LEASE"},
		{name: "LeaseTooShort", env: map[string]string{"REALSYNC_RATE_LIMIT_LEASE": "50ms"}, err: "REALSYNC_RATE_LIMIT_LEASE"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, ok := parseCase(t, tc.env, tc.args, tc.err)
			if !ok {
				return
			}
			if c.RateLimits.Off != tc.off || !strings.Contains(c.RateLimits.String(), tc.limits) {
				t.Errorf("limits %s, want off=%v containing %q", c.RateLimits, tc.off, tc.limits)
			}
			if tc.lease != "" && c.RateLimitLease.String() != tc.lease {
				t.Errorf("lease %v, want %v", c.RateLimitLease, tc.lease)
			}
			var ps []string
			for _, p := range c.TrustedProxies {
				ps = append(ps, p.String())
			}
			if got := strings.Join(ps, ","); got != tc.proxies {
				t.Errorf("proxies %q, want %q", got, tc.proxies)
			}
		})
	}
}

// REALSYNC_ENV sets the guest default and requires a secret and a Redis
// in production; the JWT settings parse, and bad values name their variable.
func TestParseConfigIdentity(t *testing.T) {
	secret := "0f3c9a7e51d24b68aa9e7c03b5d1f2e4"
	const redisURL = "redis://redis.internal:6379/0"
	jwks, badJWKS := filepath.Join(t.TempDir(), "jwks.json"), filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(jwks, []byte(`{"keys":[{"kty":"oct","kid":"studio","alg":"HS256","k":"MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY"}]}`), 0o600)
	os.WriteFile(badJWKS, []byte(`{"keys":[{"kty":"RSA","kid":"broken"}]}`), 0o600)
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
		{name: "Production", env: map[string]string{"REALSYNC_ENV": "production", "REALSYNC_JWT_SECRET": secret, "REALSYNC_REDIS_URL": redisURL},
			leeway: 30 * time.Second},
		{name: "ProductionCluster", env: map[string]string{"REALSYNC_ENV": "production", "REALSYNC_JWT_SECRET": secret,
			"REALSYNC_REDIS_CLUSTER_ADDRS": "redis-1:6379,redis-2:6379"}, leeway: 30 * time.Second},
		{name: "ProductionGuestForced", env: map[string]string{"REALSYNC_ENV": "production", "REALSYNC_JWT_SECRET": secret, "REALSYNC_GUEST_AUTH": "true",
			"REALSYNC_REDIS_URL": redisURL}, guest: true, forced: true, leeway: 30 * time.Second},
		{name: "ProductionFlag", args: []string{"-env", "production", "-jwt-secret", secret, "-redis-url", redisURL}, leeway: 30 * time.Second},
		{name: "DevelopmentEmbedded", env: map[string]string{"REALSYNC_REDIS_URL": "", "REALSYNC_REDIS_CLUSTER_ADDRS": ""}, guest: true,
			leeway: 30 * time.Second},
		{name: "ClusterSeedsNone", env: map[string]string{"REALSYNC_REDIS_CLUSTER_ADDRS": ","}, err: "REALSYNC_REDIS_CLUSTER_ADDRS: names no seed"},
		{name: "Leeway", env: map[string]string{"REALSYNC_JWT_LEEWAY": "5s"}, guest: true, leeway: 5 * time.Second},
		{name: "NoLeeway", args: []string{"-jwt-leeway", "0"}, guest: true},
		{name: "KeysFile", env: map[string]string{"REALSYNC_JWT_KEYS_FILE": jwks, "REALSYNC_JWT_ISSUER": "https://login.example",
			"REALSYNC_JWT_AUDIENCE": "realsync"}, guest: true, leeway: 30 * time.Second},
		{name: "BadEnv", env: map[string]string{"REALSYNC_ENV": "prod"}, err: "REALSYNC_ENV"},
		{name: "ProductionNoSecret", env: map[string]string{"REALSYNC_ENV": "production"}, err: "REALSYNC_JWT_SECRET"},
		{name: "ProductionNoRedis", env: map[string]string{"REALSYNC_ENV": "production", "REALSYNC_JWT_SECRET": secret},
			err: "REALSYNC_REDIS_URL or REALSYNC_REDIS_CLUSTER_ADDRS: one is required in production"},
		{name: "ProductionBlankRedisURL", env: map[string]string{"REALSYNC_ENV": "production", "REALSYNC_JWT_SECRET": secret, "REALSYNC_REDIS_URL": ""},
			err: "REALSYNC_REDIS_URL or REALSYNC_REDIS_CLUSTER_ADDRS: one is required in production"},
		{name: "ProductionBlankRedisFlag", args: []string{"-env", "production", "-jwt-secret", secret, "-redis-url", ""},
			err: "embedded in-memory store, used when both are unset, is for trying RealSync only"},
		{name: "ProductionClusterNoAddress", env: map[string]string{"REALSYNC_ENV": "production", "REALSYNC_JWT_SECRET": secret,
			"REALSYNC_REDIS_CLUSTER_ADDRS": " , "}, err: "REALSYNC_REDIS_URL or REALSYNC_REDIS_CLUSTER_ADDRS: one is required in production"},
		{name: "ProductionShortSecret", env: map[string]string{"REALSYNC_ENV": "production", "REALSYNC_JWT_SECRET": "short"}, err: "REALSYNC_JWT_SECRET"},
		// long enough, but one character (32 spaces, a tester's find) or
		// seven over and over
		{name: "ProductionSecretOneCharacter", env: map[string]string{"REALSYNC_ENV": "production", "REALSYNC_JWT_SECRET": strings.Repeat(" ", 40),
			"REALSYNC_REDIS_URL": redisURL}, err: "REALSYNC_JWT_SECRET: is required in production, at least 32 characters, 8 of them different"},
		{name: "ProductionSecretSevenCharacters", env: map[string]string{"REALSYNC_ENV": "production", "REALSYNC_JWT_SECRET": strings.Repeat("abcdefg", 5),
			"REALSYNC_REDIS_URL": redisURL}, err: "REALSYNC_JWT_SECRET"},
		{name: "ProductionSecretEightCharacters", env: map[string]string{"REALSYNC_ENV": "production", "REALSYNC_JWT_SECRET": strings.Repeat("abcdefgh", 4),
			"REALSYNC_REDIS_URL": redisURL}, leeway: 30 * time.Second},
		{name: "BadLeeway", env: map[string]string{"REALSYNC_JWT_LEEWAY": "-1s"}, err: "REALSYNC_JWT_LEEWAY"},
		{name: "HugeLeeway", env: map[string]string{"REALSYNC_JWT_LEEWAY": "1h"}, err: "REALSYNC_JWT_LEEWAY"},
		{name: "KeysFileMissing", env: map[string]string{"REALSYNC_JWT_KEYS_FILE": "/nonexistent/jwks.json"},
			err: "REALSYNC_JWT_KEYS_FILE: open /nonexistent/jwks.json"},
		{name: "KeysFileBad", args: []string{"-jwt-keys-file", badJWKS}, err: "REALSYNC_JWT_KEYS_FILE: " + badJWKS + ": bad JWKS file: key 0"},
		{name: "IssuerWithoutKeys", env: map[string]string{"REALSYNC_JWT_ISSUER": "https://login.example"}, err: "REALSYNC_JWT_KEYS_FILE"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, ok := parseCase(t, tc.env, tc.args, tc.err, "short")
			switch {
			case !ok:
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

// The room quotas and the presence debounce: defaults, flags over
// variables, 0 switches off, and every bad value named.
func TestParseConfigQuotas(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		args []string
		want quotaSettings // when err is ""
		err  string        // want an error naming this, "" for none
	}{
		{name: "Defaults", want: quotaSettings{PresenceDebounce: 3 * time.Second, MaxRoomsOwned: 5, MaxRoomsJoined: 20, MaxStreamsPerUser: 16}},
		{name: "Off", env: map[string]string{"REALSYNC_PRESENCE_DEBOUNCE": "0", "REALSYNC_MAX_ROOMS_OWNED": "0", "REALSYNC_MAX_ROOMS_JOINED": "0",
			"REALSYNC_MAX_STREAMS_PER_USER": "0"}},
		{name: "FlagsWin", env: map[string]string{"REALSYNC_MAX_ROOMS_OWNED": "2"},
			args: []string{"-max-rooms-owned", "7", "-max-rooms-joined", "9", "-presence-debounce", "500ms"},
			want: quotaSettings{PresenceDebounce: 500 * time.Millisecond, MaxRoomsOwned: 7, MaxRoomsJoined: 9, MaxStreamsPerUser: 16}},
		{name: "StreamsFlagWins", env: map[string]string{"REALSYNC_MAX_STREAMS_PER_USER": "4"}, args: []string{"-max-streams-per-user", "3"},
			want: quotaSettings{PresenceDebounce: 3 * time.Second, MaxRoomsOwned: 5, MaxRoomsJoined: 20, MaxStreamsPerUser: 3}},
		{name: "StreamsFromEnv", env: map[string]string{"REALSYNC_MAX_STREAMS_PER_USER": "64"},
			want: quotaSettings{PresenceDebounce: 3 * time.Second, MaxRoomsOwned: 5, MaxRoomsJoined: 20, MaxStreamsPerUser: 64}},
		{name: "NegativeStreams", env: map[string]string{"REALSYNC_MAX_STREAMS_PER_USER": "-1"}, err: "REALSYNC_MAX_STREAMS_PER_USER"},
		{name: "WordStreams", env: map[string]string{"REALSYNC_MAX_STREAMS_PER_USER": "lots"}, err: "REALSYNC_MAX_STREAMS_PER_USER"},
		{name: "HugeStreams", env: map[string]string{"REALSYNC_MAX_STREAMS_PER_USER": "10001"}, err: "REALSYNC_MAX_STREAMS_PER_USER"},
		{name: "NegativeOwned", env: map[string]string{"REALSYNC_MAX_ROOMS_OWNED": "-1"}, err: "REALSYNC_MAX_ROOMS_OWNED"},
		{name: "WordJoined", env: map[string]string{"REALSYNC_MAX_ROOMS_JOINED": "many"}, err: "REALSYNC_MAX_ROOMS_JOINED"},
		{name: "HugeJoined", env: map[string]string{"REALSYNC_MAX_ROOMS_JOINED": "10001"}, err: "REALSYNC_MAX_ROOMS_JOINED"},
		{name: "DebounceNoUnit", env: map[string]string{"REALSYNC_PRESENCE_DEBOUNCE": "3"}, err: "REALSYNC_PRESENCE_DEBOUNCE"},
		{name: "DebounceTooLong", env: map[string]string{"REALSYNC_PRESENCE_DEBOUNCE": "2m"}, err: "REALSYNC_PRESENCE_DEBOUNCE"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if c, ok := parseCase(t, tc.env, tc.args, tc.err); ok && (c.quotaSettings != tc.want) {
				t.Errorf("got %+v, want %+v", c.quotaSettings, tc.want)
			}
		})
	}
}

// REALSYNC_API_KEYS_FILE must name a readable, valid keys file; the
// apikey subcommand prints a key and a line that file accepts.
func TestAPIKeysFileConfigAndSubcommand(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := apikeyMain([]string{"-id", "gs-eu-1", "-scopes", "rooms:read,rooms:write"}, &out, &errOut); code != 0 {
		t.Fatalf("apikey: exit %d: %s", code, errOut.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "rsk_") || !strings.HasPrefix(lines[1], "gs-eu-1 sha256:") ||
		strings.Contains(lines[1], lines[0]) {
		t.Fatalf("apikey printed %q", out.String())
	}
	dir := t.TempDir()
	good, bad := dir+"/keys", dir+"/bad"
	os.WriteFile(good, []byte(lines[1]+"\n"), 0o600)
	os.WriteFile(bad, []byte(lines[0]+"\n"), 0o600) // the key itself, not its line
	tests := []struct {
		name string
		env  map[string]string
		args []string
		err  string // in the error, "" for none
	}{
		{name: "Unset"},
		{name: "Good", env: map[string]string{"REALSYNC_API_KEYS_FILE": good}},
		{name: "Flag", args: []string{"-api-keys-file", good}},
		{name: "Missing", env: map[string]string{"REALSYNC_API_KEYS_FILE": dir + "/none"}, err: "REALSYNC_API_KEYS_FILE"},
		{name: "Bad", env: map[string]string{"REALSYNC_API_KEYS_FILE": bad}, err: "REALSYNC_API_KEYS_FILE"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, ok := parseCase(t, tc.env, tc.args, tc.err, "rsk_")
			switch {
			case !ok:
			case tc.env["REALSYNC_API_KEYS_FILE"] == "" && len(tc.args) == 0 && c.APIKeysFile != "":
				t.Fatalf("APIKeysFile %q", c.APIKeysFile)
			}
		})
	}
	for _, args := range [][]string{{"-id", "x"}, {"-id", "x", "-scopes", "rooms:root"}, {"-scopes", "rooms:read"}, {"-id", "a b", "-scopes", "rooms:read"}} {
		if code := apikeyMain(args, &out, &errOut); code != 2 {
			t.Errorf("apikey %v: exit %d, want 2", args, code)
		}
	}
}

// parseCase parses env and args as one row of a configuration table: with
// wantErr set, the error must name it (a variable) and show none of
// secrets, and there is no configuration to check (false).
func parseCase(t *testing.T, env map[string]string, args []string, wantErr string, secrets ...string) (Config, bool) {
	t.Helper()
	c, err := ParseConfig(func(k string) string { return env[k] }, args)
	switch {
	case wantErr != "":
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Fatalf("error %v, want one naming %s", err, wantErr)
		}
		for _, secret := range secrets {
			if strings.Contains(err.Error(), secret) {
				t.Fatalf("the error shows a secret (%s): %v", secret, err)
			}
		}
		return Config{}, false
	case err != nil:
		t.Fatal(err)
	}
	return c, true
}

// The demo link printed at start is one a browser opens.
func TestDemoURL(t *testing.T) {
	for _, tc := range []struct{ scheme, addr, want string }{
		{"http", "[::]:8080", "http://localhost:8080/demo/"},
		{"http", "0.0.0.0:8080", "http://localhost:8080/demo/"},
		{"http", "127.0.0.1:9000", "http://127.0.0.1:9000/demo/"},
		{"http", "[::1]:8080", "http://[::1]:8080/demo/"},
		{"https", "[::]:8443", "https://localhost:8443/demo/"},
	} {
		a, err := net.ResolveTCPAddr("tcp", tc.addr)
		if err != nil {
			t.Fatal(err)
		}
		if got := demoURL(tc.scheme, a); got != tc.want {
			t.Errorf("demoURL(%s) = %s, want %s", tc.addr, got, tc.want)
		}
	}
}

// REALSYNC_SESSION_POLICY: replace by default, each policy by variable or
// flag (the flag wins), anything else named.
func TestParseConfigSessionPolicy(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		args []string
		want players.Policy // when err is ""
		err  string
	}{
		{name: "Default", want: players.PolicyReplace},
		{name: "RejectNew", env: map[string]string{"REALSYNC_SESSION_POLICY": "reject-new"}, want: players.PolicyRejectNew},
		{name: "AllowMultiple", env: map[string]string{"REALSYNC_SESSION_POLICY": "allow-multiple"}, want: players.PolicyAllowMultiple},
		{name: "FlagWins", env: map[string]string{"REALSYNC_SESSION_POLICY": "reject-new"}, args: []string{"-session-policy", "replace"},
			want: players.PolicyReplace},
		{name: "Unknown", env: map[string]string{"REALSYNC_SESSION_POLICY": "kick-old"}, err: "REALSYNC_SESSION_POLICY"},
		{name: "EmptyIsUnset", env: map[string]string{"REALSYNC_SESSION_POLICY": ""}, want: players.PolicyReplace},
		{name: "EmptyFlag", args: []string{"-session-policy", ""}, err: "REALSYNC_SESSION_POLICY"},
		{name: "Case", args: []string{"-session-policy", "Replace"}, err: "REALSYNC_SESSION_POLICY"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if c, ok := parseCase(t, tc.env, tc.args, tc.err); ok && c.SessionPolicy != tc.want {
				t.Errorf("got %q, want %q", c.SessionPolicy, tc.want)
			}
		})
	}
}

// The Redis settings: a URL or Cluster seeds as given, and a bad value
// named, never showing the URL's password.
func TestParseConfigRedis(t *testing.T) {
	const secret = "S3cretRedisPw"
	tests := []struct {
		name    string
		env     map[string]string
		args    []string
		url     string // want RedisURL
		cluster string // want ClusterAddrs, joined with ","
		err     string // want an error naming this, "" for none
	}{
		{name: "Embedded"},
		{name: "URL", env: map[string]string{"REALSYNC_REDIS_URL": "redis://:" + secret + "@127.0.0.1:6379/2"}, url: "redis://:" + secret + "@127.0.0.1:6379/2"},
		{name: "URLFlagWins", env: map[string]string{"REALSYNC_REDIS_URL": "redis://a:1"}, args: []string{"-redis-url", "rediss://b:6380"}, url: "rediss://b:6380"},
		{name: "BadScheme", env: map[string]string{"REALSYNC_REDIS_URL": "http://x"}, err: "REALSYNC_REDIS_URL: must start with redis://"},
		{name: "BadPort", env: map[string]string{"REALSYNC_REDIS_URL": "redis://:" + secret + "@127.0.0.1:63x93"},
			err: `REALSYNC_REDIS_URL: parse "redis://xxxxx@127.0.0.1:63x93": invalid port`},
		{name: "BadPortFlag", args: []string{"-redis-url", "redis://user:" + secret + "@127.0.0.1:63x93"}, err: "REALSYNC_REDIS_URL"},
		{name: "BadEscape", env: map[string]string{"REALSYNC_REDIS_URL": "redis://:S3cret%zzRedisPw@127.0.0.1:6379"},
			err: "REALSYNC_REDIS_URL: the user name or password part of the URL is not valid"},
		{name: "BadDatabase", env: map[string]string{"REALSYNC_REDIS_URL": "redis://:" + secret + "@127.0.0.1:6379/zero"},
			err: "REALSYNC_REDIS_URL: redis: invalid database number"},
		{name: "Cluster", env: map[string]string{"REALSYNC_REDIS_CLUSTER_ADDRS": "redis-1:6379, 10.0.0.2:7000,[fd00::3]:6379,"},
			cluster: "redis-1:6379,10.0.0.2:7000,[fd00::3]:6379"},
		{name: "ClusterURL", env: map[string]string{"REALSYNC_REDIS_CLUSTER_ADDRS": "redis-1:6379,redis://redis-2:6379"},
			err: `REALSYNC_REDIS_CLUSTER_ADDRS: "redis://redis-2:6379" must be host:port`},
		{name: "ClusterURLPassword", env: map[string]string{"REALSYNC_REDIS_CLUSTER_ADDRS": "redis://:" + secret + "@redis-2:6379"},
			err: `REALSYNC_REDIS_CLUSTER_ADDRS: holds an @ (a user name or password? not shown)`},
		{name: "ClusterNoPort", args: []string{"-redis-cluster-addrs", "redis-1:6379,redis-2"}, err: `REALSYNC_REDIS_CLUSTER_ADDRS: "redis-2" must be host:port`},
		{name: "ClusterBadPort", env: map[string]string{"REALSYNC_REDIS_CLUSTER_ADDRS": "redis-1:0"}, err: "REALSYNC_REDIS_CLUSTER_ADDRS"},
		{name: "ClusterNoHost", env: map[string]string{"REALSYNC_REDIS_CLUSTER_ADDRS": ":6379"}, err: "REALSYNC_REDIS_CLUSTER_ADDRS"},
		// a seed given as user:password@host (a tester's find: echoed whole)
		{name: "ClusterPasswordNoScheme", env: map[string]string{"REALSYNC_REDIS_CLUSTER_ADDRS": "app:" + secret + "@redis-1:6379"},
			err: `REALSYNC_REDIS_CLUSTER_ADDRS: holds an @`},
		// a "," in the password (a reviewer's find: the part before it was
		// shown as a seed)
		{name: "ClusterPasswordWithComma", env: map[string]string{"REALSYNC_REDIS_CLUSTER_ADDRS": "app:Pa55," + secret + "@redis-1:6379"},
			err: `REALSYNC_REDIS_CLUSTER_ADDRS: holds an @`},
		// options that panicked the server at start (a tester's find)
		{name: "PoolSizeNegative", env: map[string]string{"REALSYNC_REDIS_URL": "redis://:" + secret + "@127.0.0.1:6379/0?pool_size=-1"},
			err: "REALSYNC_REDIS_URL: pool_size=-1: must be 0..10000"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, ok := parseCase(t, tc.env, tc.args, tc.err, secret, "zzRedisPw")
			if ok && (c.RedisURL != tc.url || strings.Join(c.ClusterAddrs, ",") != tc.cluster) {
				t.Errorf("url %q cluster %q; want %q and %q", c.RedisURL, c.ClusterAddrs, tc.url, tc.cluster)
			}
		})
	}
}

// The duration settings that feed tickers, divisions and Redis' ms
// timers: each within its range (0 for the rules that may be off), the
// bounds included, anything else named with the range.
func TestParseConfigDurations(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		args []string
		want func(Config) time.Duration // the setting, when err is ""
		is   time.Duration              // its value
		err  string                     // want an error naming this, "" for none
	}{
		{name: "HeartbeatDefault", want: func(c Config) time.Duration { return c.SSEHeartbeat }, is: 15 * time.Second},
		{name: "HeartbeatLowest", env: map[string]string{"REALSYNC_SSE_HEARTBEAT": "1s"}, want: func(c Config) time.Duration { return c.SSEHeartbeat }, is: time.Second},
		{name: "HeartbeatHighest", args: []string{"-sse-heartbeat", "5m"}, want: func(c Config) time.Duration { return c.SSEHeartbeat }, is: 5 * time.Minute},
		{name: "HeartbeatNanosecond", env: map[string]string{"REALSYNC_SSE_HEARTBEAT": "1ns"}, err: `REALSYNC_SSE_HEARTBEAT: must be a duration from 1s to 5m, such as 15s; got "1ns"`},
		{name: "HeartbeatTwoNanoseconds", env: map[string]string{"REALSYNC_SSE_HEARTBEAT": "2ns"}, err: "REALSYNC_SSE_HEARTBEAT"},
		{name: "HeartbeatSubSecond", args: []string{"-sse-heartbeat", "999ms"}, err: "REALSYNC_SSE_HEARTBEAT"},
		{name: "HeartbeatTooLong", env: map[string]string{"REALSYNC_SSE_HEARTBEAT": "6m"}, err: "REALSYNC_SSE_HEARTBEAT"},
		{name: "StreamLifetimeDefault", want: func(c Config) time.Duration { return c.SSEMaxLifetime }, is: 30 * time.Minute},
		{name: "StreamLifetimeNever", env: map[string]string{"REALSYNC_SSE_MAX_LIFETIME": "0"}, want: func(c Config) time.Duration { return c.SSEMaxLifetime }},
		{name: "StreamLifetimeFlag", args: []string{"-sse-max-lifetime", "1m"}, want: func(c Config) time.Duration { return c.SSEMaxLifetime }, is: time.Minute},
		{name: "StreamLifetimeTooShort", env: map[string]string{"REALSYNC_SSE_MAX_LIFETIME": "59s"}, err: `REALSYNC_SSE_MAX_LIFETIME: must be 0 (never) or a duration from 1m to 24h, such as 30m; got "59s"`},
		{name: "StreamLifetimeTooLong", env: map[string]string{"REALSYNC_SSE_MAX_LIFETIME": "25h"}, err: "REALSYNC_SSE_MAX_LIFETIME"},
		{name: "UserTimeoutDefault", want: func(c Config) time.Duration { return c.TCPUserTimeout }, is: 30 * time.Second},
		{name: "UserTimeoutKernels", env: map[string]string{"REALSYNC_TCP_USER_TIMEOUT": "0"}, want: func(c Config) time.Duration { return c.TCPUserTimeout }},
		{name: "UserTimeoutLowest", args: []string{"-tcp-user-timeout", "1s"}, want: func(c Config) time.Duration { return c.TCPUserTimeout }, is: time.Second},
		{name: "UserTimeoutHighest", env: map[string]string{"REALSYNC_TCP_USER_TIMEOUT": "1h"}, want: func(c Config) time.Duration { return c.TCPUserTimeout }, is: time.Hour},
		{name: "UserTimeoutSubSecond", env: map[string]string{"REALSYNC_TCP_USER_TIMEOUT": "500ms"},
			err: `REALSYNC_TCP_USER_TIMEOUT: must be 0 (the kernel's) or a duration from 1s to 1h, such as 30s; got "500ms"`},
		{name: "UserTimeoutTooLong", env: map[string]string{"REALSYNC_TCP_USER_TIMEOUT": "61m"}, err: "REALSYNC_TCP_USER_TIMEOUT"},
		{name: "UserTimeoutNegative", env: map[string]string{"REALSYNC_TCP_USER_TIMEOUT": "-1s"}, err: "REALSYNC_TCP_USER_TIMEOUT"},
		{name: "UserTimeoutWord", env: map[string]string{"REALSYNC_TCP_USER_TIMEOUT": "off"}, err: "REALSYNC_TCP_USER_TIMEOUT"},
		{name: "PresenceTTLLowest", env: map[string]string{"REALSYNC_PRESENCE_TTL": "300ms"}, want: func(c Config) time.Duration { return c.PresenceTTL }, is: 300 * time.Millisecond},
		{name: "PresenceTTLTooShort", env: map[string]string{"REALSYNC_PRESENCE_TTL": "299ms"}, err: "REALSYNC_PRESENCE_TTL: must be a duration from 300ms to 10m"},
		{name: "PresenceTTLTooLong", env: map[string]string{"REALSYNC_PRESENCE_TTL": "11m"}, err: "REALSYNC_PRESENCE_TTL"},
		{name: "GraceNever", env: map[string]string{"REALSYNC_DISCONNECT_GRACE": "0"}, want: func(c Config) time.Duration { return c.DisconnectGrace }},
		{name: "GraceSubMillisecond", env: map[string]string{"REALSYNC_DISCONNECT_GRACE": "500us"},
			err: `REALSYNC_DISCONNECT_GRACE: must be 0 (never) or a duration from 100ms to 8760h, such as 30s; got "500us"`},
		{name: "ConnectGraceDefault", want: func(c Config) time.Duration { return c.ConnectGrace }},
		{name: "ConnectGraceSet", env: map[string]string{"REALSYNC_CONNECT_GRACE": "15s"}, want: func(c Config) time.Duration { return c.ConnectGrace }, is: 15 * time.Second},
		{name: "ConnectGraceFlag", args: []string{"-connect-grace", "100ms"}, want: func(c Config) time.Duration { return c.ConnectGrace }, is: 100 * time.Millisecond},
		{name: "ConnectGraceTooShort", env: map[string]string{"REALSYNC_CONNECT_GRACE": "99ms"},
			err: `REALSYNC_CONNECT_GRACE: must be 0 (never) or a duration from 100ms to 8760h, such as 15s; got "99ms"`},
		{name: "ConnectGraceWord", env: map[string]string{"REALSYNC_CONNECT_GRACE": "on"}, err: "REALSYNC_CONNECT_GRACE"},
		{name: "IdleNanosecond", env: map[string]string{"REALSYNC_ROOM_IDLE_TIMEOUT": "1ns"}, err: "REALSYNC_ROOM_IDLE_TIMEOUT"},
		{name: "IdleShort", env: map[string]string{"REALSYNC_ROOM_IDLE_TIMEOUT": "1500ms"}, want: func(c Config) time.Duration { return c.RoomIdleTimeout }, is: 1500 * time.Millisecond},
		{name: "RetentionLowest", env: map[string]string{"REALSYNC_FINISHED_RETENTION": "100ms"}, want: func(c Config) time.Duration { return c.FinishedRetention }, is: 100 * time.Millisecond},
		{name: "RetentionTooLong", env: map[string]string{"REALSYNC_FINISHED_RETENTION": "8761h"}, err: "REALSYNC_FINISHED_RETENTION"},
		{name: "LifetimeTiny", args: []string{"-room-max-lifetime", "1us"}, err: "REALSYNC_ROOM_MAX_LIFETIME"},
		{name: "ShutdownNanosecond", env: map[string]string{"REALSYNC_SHUTDOWN_TIMEOUT": "1ns"}, err: "REALSYNC_SHUTDOWN_TIMEOUT: must be a duration from 1s to 1h"},
		{name: "ShutdownTooLong", env: map[string]string{"REALSYNC_SHUTDOWN_TIMEOUT": "2h"}, err: "REALSYNC_SHUTDOWN_TIMEOUT"},
		{name: "ShutdownShort", env: map[string]string{"REALSYNC_SHUTDOWN_TIMEOUT": "2s"}, want: func(c Config) time.Duration { return c.ShutdownTimeout }, is: 2 * time.Second},
		{name: "SpreadDefault", want: func(c Config) time.Duration { return c.SSEShutdownSpread }, is: 10 * time.Second},
		{name: "SpreadDefaultShortTimeout", env: map[string]string{"REALSYNC_SHUTDOWN_TIMEOUT": "6s"}, want: func(c Config) time.Duration { return c.SSEShutdownSpread }, is: 2 * time.Second},
		{name: "SpreadDefaultLongTimeout", env: map[string]string{"REALSYNC_SHUTDOWN_TIMEOUT": "5m"}, want: func(c Config) time.Duration { return c.SSEShutdownSpread }, is: 10 * time.Second},
		{name: "SpreadOff", env: map[string]string{"REALSYNC_SSE_SHUTDOWN_SPREAD": "0"}, want: func(c Config) time.Duration { return c.SSEShutdownSpread }},
		{name: "SpreadSet", env: map[string]string{"REALSYNC_SSE_SHUTDOWN_SPREAD": "15s"}, want: func(c Config) time.Duration { return c.SSEShutdownSpread }, is: 15 * time.Second},
		{name: "SpreadFlag", args: []string{"-sse-shutdown-spread", "100ms"}, want: func(c Config) time.Duration { return c.SSEShutdownSpread }, is: 100 * time.Millisecond},
		{name: "SpreadHalfTheTimeout", env: map[string]string{"REALSYNC_SSE_SHUTDOWN_SPREAD": "1m", "REALSYNC_SHUTDOWN_TIMEOUT": "2m"}, want: func(c Config) time.Duration { return c.SSEShutdownSpread }, is: time.Minute},
		{name: "SpreadPastHalfTheTimeout", env: map[string]string{"REALSYNC_SSE_SHUTDOWN_SPREAD": "16s"},
			err: "REALSYNC_SSE_SHUTDOWN_SPREAD: 16s is more than half of REALSYNC_SHUTDOWN_TIMEOUT (30s), whose other half the rest of a shutdown needs: set it to 15s at most, or raise REALSYNC_SHUTDOWN_TIMEOUT"},
		{name: "SpreadTooShort", env: map[string]string{"REALSYNC_SSE_SHUTDOWN_SPREAD": "99ms"},
			err: `REALSYNC_SSE_SHUTDOWN_SPREAD: must be 0 (every stream ended at once) or a duration from 100ms to 10m, such as 10s; got "99ms"`},
		{name: "SpreadTooLong", env: map[string]string{"REALSYNC_SSE_SHUTDOWN_SPREAD": "11m", "REALSYNC_SHUTDOWN_TIMEOUT": "1h"}, err: "REALSYNC_SSE_SHUTDOWN_SPREAD: must be 0"},
		{name: "SpreadWord", env: map[string]string{"REALSYNC_SSE_SHUTDOWN_SPREAD": "slow"}, err: "REALSYNC_SSE_SHUTDOWN_SPREAD: must be 0"},
		{name: "HeaderTimeoutDefault", want: func(c Config) time.Duration { return c.ReadHeaderTimeout }, is: 10 * time.Second},
		{name: "HeaderTimeoutShort", env: map[string]string{"REALSYNC_READ_HEADER_TIMEOUT": "1s"}, want: func(c Config) time.Duration { return c.ReadHeaderTimeout }, is: time.Second},
		{name: "HeaderTimeoutTooShort", env: map[string]string{"REALSYNC_READ_HEADER_TIMEOUT": "500ms"}, err: "REALSYNC_READ_HEADER_TIMEOUT: must be a duration from 1s to 5m"},
		{name: "HeaderTimeoutTooLong", env: map[string]string{"REALSYNC_READ_HEADER_TIMEOUT": "10m"}, err: "REALSYNC_READ_HEADER_TIMEOUT"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if c, ok := parseCase(t, tc.env, tc.args, tc.err); ok && tc.want(c) != tc.is {
				t.Errorf("got %v, want %v", tc.want(c), tc.is)
			}
		})
	}
}

// The listen addresses and the command line: REALSYNC_ADDR a listen
// address, REALSYNC_PPROF_ADDR a loopback one (IPv6 too), no word after
// the flags (it would stop flag parsing, ignoring the rest).
func TestParseConfigAddresses(t *testing.T) {
	tests := []struct {
		name  string
		env   map[string]string
		args  []string
		addr  string // want Addr
		pprof string // want PprofAddr
		err   string // want an error naming this, "" for none
	}{
		{name: "Defaults", addr: ":8080"},
		{name: "Addr", env: map[string]string{"REALSYNC_ADDR": "127.0.0.1:0"}, addr: "127.0.0.1:0"},
		{name: "AddrIPv6", args: []string{"-addr", "[::]:8080"}, addr: "[::]:8080"},
		{name: "AddrWord", env: map[string]string{"REALSYNC_ADDR": "notanaddr"}, err: "REALSYNC_ADDR: must be host:port or :port"},
		{name: "AddrBadPort", env: map[string]string{"REALSYNC_ADDR": ":99999"}, err: "REALSYNC_ADDR"},
		{name: "AddrNamedPort", args: []string{"-addr", ":http"}, err: "REALSYNC_ADDR"},
		// a sign (a tester's find: taken, and an advertised +80 registered)
		{name: "AddrSignedPort", env: map[string]string{"REALSYNC_ADDR": "127.0.0.1:+80"}, err: "REALSYNC_ADDR"},
		{name: "AddrMinusZero", env: map[string]string{"REALSYNC_ADDR": "127.0.0.1:-0"}, err: "REALSYNC_ADDR"},
		{name: "AdvertiseSignedPort", env: map[string]string{"REALSYNC_ADVERTISE_ADDR": "rs-1:+80"}, err: "REALSYNC_ADVERTISE_ADDR"},
		{name: "PprofSignedPort", env: map[string]string{"REALSYNC_PPROF_ADDR": "127.0.0.1:+6060"}, err: "REALSYNC_PPROF_ADDR"},
		{name: "Pprof", env: map[string]string{"REALSYNC_PPROF_ADDR": "127.0.0.1:6060"}, addr: ":8080", pprof: "127.0.0.1:6060"},
		{name: "PprofLocalhost", env: map[string]string{"REALSYNC_PPROF_ADDR": "localhost:6060"}, addr: ":8080", pprof: "localhost:6060"},
		{name: "PprofIPv6Loopback", env: map[string]string{"REALSYNC_PPROF_ADDR": "[::1]:6060"}, addr: ":8080", pprof: "[::1]:6060"},
		{name: "PprofBadPort", env: map[string]string{"REALSYNC_PPROF_ADDR": "127.0.0.1:abc"}, err: "REALSYNC_PPROF_ADDR: must be a loopback address with a port 1..65535"},
		{name: "PprofNoPort", env: map[string]string{"REALSYNC_PPROF_ADDR": "127.0.0.1:"}, err: "REALSYNC_PPROF_ADDR"},
		{name: "PprofEveryInterface", env: map[string]string{"REALSYNC_PPROF_ADDR": "0.0.0.0:6060"}, err: "REALSYNC_PPROF_ADDR"},
		{name: "PprofIPv6Any", env: map[string]string{"REALSYNC_PPROF_ADDR": "[::]:6060"}, err: "REALSYNC_PPROF_ADDR"},
		{name: "PprofLocalhostPrefix", env: map[string]string{"REALSYNC_PPROF_ADDR": "localhost.evil.example:6060"}, err: "REALSYNC_PPROF_ADDR"},
		{name: "ExtraWords", args: []string{"-addr", "127.0.0.1:0", "serve", "-shards", "8"},
			err: `command line: unexpected argument "serve": realsyncd takes flags only`},
		{name: "SubcommandAfterFlags", args: []string{"-shards", "8", "migrate"}, err: `unexpected argument "migrate"`},
		{name: "AfterDoubleDash", args: []string{"--", "-shards"}, err: `unexpected argument "-shards"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if c, ok := parseCase(t, tc.env, tc.args, tc.err); ok && (c.Addr != tc.addr || c.PprofAddr != tc.pprof) {
				t.Errorf("addr %q pprof %q; want %q and %q", c.Addr, c.PprofAddr, tc.addr, tc.pprof)
			}
		})
	}
}

// REALSYNC_SSE_BURST_RELEASE: on by default, off with false (the hub gets
// no AfterBurst), refused unless a boolean.
func TestBurstReleaseSetting(t *testing.T) {
	base := map[string]string{"REALSYNC_JWT_SECRET": "0123456789abcdef0123456789abcdef"}
	tests := []struct {
		name  string
		value string // "": unset
		on    bool   // the hub gets an AfterBurst
		err   string
	}{
		{"Default", "", true, ""},
		{"On", "true", true, ""},
		{"Off", "false", false, ""},
		{"Bad", "sometimes", false, "REALSYNC_SSE_BURST_RELEASE"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env := maps.Clone(base)
			if tc.value != "" {
				env["REALSYNC_SSE_BURST_RELEASE"] = tc.value
			}
			c, ok := parseCase(t, env, nil, tc.err)
			if ok && (c.afterBurst(slog.Default()) != nil) != tc.on {
				t.Fatalf("AfterBurst set: %v, want %v", !tc.on, tc.on)
			}
		})
	}
}

// The usage printed for -h, an unknown flag or a flag without its value
// shows no secret: each flag's default there is its variable's value (a
// tester's find: the JWT secret, the admin token and the Redis password
// were printed).
func TestUsageHidesSecrets(t *testing.T) {
	env := map[string]string{"REALSYNC_JWT_SECRET": "JWTSECRET-0123456789abcdef0123456789", "REALSYNC_ADMIN_TOKEN": "ADMINTOKEN-0123456789abcdef012345678",
		"REALSYNC_REDIS_URL": "redis://app:REDISPASSWORD@h:6379/0", "REALSYNC_REDIS_CLUSTER_ADDRS": "app:SEEDPASSWORD@h:6379",
		"REALSYNC_KEY_PREFIX": "shown-prefix"}
	for _, args := range [][]string{{"-h"}, {"-no-such-flag"}, {"-shards"}} {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		stderr := os.Stderr
		os.Stderr = w
		_, perr := ParseConfig(func(k string) string { return env[k] }, args)
		os.Stderr = stderr
		w.Close()
		var out bytes.Buffer
		out.ReadFrom(r) //nolint:errcheck // a pipe read to its end
		r.Close()
		if perr == nil || !strings.Contains(out.String(), "shown-prefix") {
			t.Fatalf("%v: error %v, usage %q: want an error and the usage with the defaults", args, perr, out.String())
		}
		for _, secret := range []string{"JWTSECRET", "ADMINTOKEN", "REDISPASSWORD", "SEEDPASSWORD"} {
			if strings.Contains(out.String(), secret) {
				t.Errorf("%v: the usage shows %s", args, secret)
			}
		}
	}
}

// environNotes names the REALSYNC_ variables no setting has and those set
// empty (a tester's finds: REALSYNC_SHRADS=8 and REALSYNC_ENV= started
// without a word, the latter in development).
func TestEnvironNotes(t *testing.T) {
	// an empty one whose default is unset changes nothing: not named (a
	// reviewer's find: deploy/compose.yaml's admin token and CORS origins)
	unknown, empty := environNotes([]string{"PATH=/bin", "REALSYNC_SHRADS=8", "REALSYNC_SHARDS=8", "REALSYNC_ENV=",
		"REALSYNC_KEY_PREFIX=", "REALSYNC_MAX_ROOMS_OWN=1", "REALSYNC_WEBHOOK_WORKERS=4", "REALSYNC_MODE_STRIPES=1", "NOT_REALSYNC_X=",
		"REALSYNC_ADMIN_TOKEN=", "REALSYNC_CORS_ORIGINS="})
	if want := []string{"REALSYNC_MAX_ROOMS_OWN", "REALSYNC_SHRADS"}; !slices.Equal(unknown, want) {
		t.Errorf("unknown %v, want %v", unknown, want)
	}
	if want := []string{"REALSYNC_ENV", "REALSYNC_KEY_PREFIX"}; !slices.Equal(empty, want) {
		t.Errorf("empty %v, want %v", empty, want)
	}
}

// A production instance warns of the settings that leave it open to
// abuse (a tester's find: only REALSYNC_GUEST_AUTH=true was warned of).
func TestProductionRisks(t *testing.T) {
	prod := map[string]string{"REALSYNC_ENV": "production", "REALSYNC_JWT_SECRET": "0f3c9a7e51d24b68aa9e7c03b5d1f2e4", "REALSYNC_REDIS_URL": "redis://127.0.0.1:6379"}
	for _, tc := range []struct {
		name string
		env  map[string]string
		want []string
	}{
		{"Safe", map[string]string{"REALSYNC_TRUSTED_PROXIES": "10.0.0.0/8"}, nil},
		{"LimitsOff", map[string]string{"REALSYNC_RATE_LIMITS": "off"}, []string{"REALSYNC_RATE_LIMITS=off"}},
		{"EveryProxy", map[string]string{"REALSYNC_TRUSTED_PROXIES": "10.0.0.0/8,0.0.0.0/0,::/0"}, []string{"holds 0.0.0.0/0", "holds ::/0"}},
		{"Development", map[string]string{"REALSYNC_ENV": "development", "REALSYNC_RATE_LIMITS": "off"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := maps.Clone(prod)
			maps.Copy(env, tc.env)
			c, _ := parseCase(t, env, nil, "")
			got := productionRisks(c)
			if len(got) != len(tc.want) {
				t.Fatalf("warnings %q, want %d: %q", got, len(tc.want), tc.want)
			}
			for i, w := range tc.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("warning %q, want one with %q", got[i], w)
				}
			}
		})
	}
}
