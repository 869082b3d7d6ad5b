package redisurl

import (
	"strings"
	"testing"
)

// A URL that does not parse is reported without its user information,
// whatever is wrong with it; a good one parses as redis.ParseURL does.
func TestParseHidesCredentials(t *testing.T) {
	tests := []struct {
		name   string
		raw    string
		secret string // never in the error
		err    string // in the error, "" for none
	}{
		{name: "Good", raw: "redis://:S3cretRedisPw@127.0.0.1:6379/2"},
		{name: "GoodUser", raw: "rediss://app:S3cretRedisPw@redis.internal:6380"},
		{name: "BadPort", raw: "redis://:S3cretRedisPw@127.0.0.1:63x93", secret: "S3cretRedisPw", err: `invalid port ":63x93"`},
		{name: "BadPortUser", raw: "redis://app:S3cretRedisPw@127.0.0.1:63x93", secret: "S3cretRedisPw", err: "xxxxx@127.0.0.1:63x93"},
		{name: "BadEscape", raw: "redis://:S3cret%zzRedisPw@127.0.0.1:6379", secret: "zzRedisPw", err: "user name or password"},
		{name: "SlashInPassword", raw: "redis://:S3cret/RedisPw@127.0.0.1:6379/x", secret: "RedisPw", err: "invalid database number"},
		{name: "BadDatabase", raw: "redis://:S3cretRedisPw@127.0.0.1:6379/zero", secret: "S3cretRedisPw", err: `"zero"`},
		{name: "NoCredentials", raw: "redis://127.0.0.1:63x93", err: "63x93"},
		// options go-redis takes and then panics or fails on (a tester's
		// find: pool_size=-1 panicked the server at start)
		{name: "PoolSizeNegative", raw: "redis://:S3cretRedisPw@127.0.0.1:6379/0?pool_size=-1", secret: "S3cretRedisPw", err: "pool_size=-1: must be 0..10000"},
		{name: "PoolSizeHuge", raw: "redis://127.0.0.1:6379/0?pool_size=9999999999", err: "pool_size=9999999999: must be 0..10000"},
		{name: "MinIdleNegative", raw: "redis://127.0.0.1:6379/0?min_idle_conns=-3", err: "min_idle_conns=-3"},
		{name: "MaxActiveHuge", raw: "redis://127.0.0.1:6379/0?max_active_conns=10001", err: "max_active_conns=10001"},
		{name: "DialTimeoutOff", raw: "redis://127.0.0.1:6379/0?dial_timeout=0", err: "dial_timeout: must be above 0"},
		{name: "PoolTimeoutOff", raw: "redis://127.0.0.1:6379/0?pool_timeout=-1s", err: "pool_timeout: must be above 0"},
		{name: "ClientNameSpace", raw: "redis://127.0.0.1:6379/0?client_name=game%20a", err: `client_name "game a": Redis takes printable ASCII only`},
		{name: "ClientNameNonASCII", raw: "redis://127.0.0.1:6379/0?client_name=j%C3%A9u", err: "client_name"},
		{name: "GoodClientName", raw: "redis://127.0.0.1:6379/0?client_name=realsync-eu~1"},
		{name: "RetriesNever", raw: "redis://127.0.0.1:6379/0?max_retries=-2", err: "max_retries=-2: must be -1 (no retry) or more"},
		{name: "NoRetry", raw: "redis://127.0.0.1:6379/0?max_retries=-1"},
		{name: "Retries", raw: "redis://127.0.0.1:6379/0?max_retries=3"},
		{name: "GoodOptions", raw: "redis://127.0.0.1:6379/0?pool_size=10000&dial_timeout=2s&read_timeout=-1&min_idle_conns=0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o, err := Parse(tc.raw)
			switch {
			case tc.err == "" && err != nil:
				t.Fatal(err)
			case tc.err == "" && o == nil:
				t.Fatal("no options")
			case tc.err == "":
			case err == nil || !strings.Contains(err.Error(), tc.err):
				t.Fatalf("error %v, want one containing %s", err, tc.err)
			case tc.secret != "" && strings.Contains(err.Error(), tc.secret):
				t.Fatalf("the error shows the password: %v", err)
			}
		})
	}
}

// Redact hides the user information of a URL, or of an address given
// without a scheme (a tester's find: REALSYNC_REDIS_CLUSTER_ADDRS
// "app:pw@redis-1:6379" was echoed whole).
func TestRedact(t *testing.T) {
	for raw, want := range map[string]string{
		"redis://app:pw@h:6379/0":  "redis://xxxxx@h:6379/0",
		"rediss://:p/w@h:6379":     "rediss://xxxxx@h:6379",
		"app:Sup3rSecretPw@h:6379": "xxxxx@h:6379",
		":pw@h:6379":               "xxxxx@h:6379",
		"redis-1:6379":             "redis-1:6379",
		// a "://" inside the password, or after the "@" (a reviewer's find)
		"app:Pa55://w0rdSECRET@redis-1:6379": "xxxxx@redis-1:6379",
		"u:pw@h:6379/x://y":                  "xxxxx@h:6379/x://y",
		"a@b@c":                              "xxxxx@c",
		"redis://@h":                         "redis://xxxxx@h",
		"":                                   "",
		"redis://h:6379":                     "redis://h:6379",
	} {
		if got := Redact(raw); got != want {
			t.Errorf("Redact(%q) = %q, want %q", raw, got, want)
		}
	}
}
