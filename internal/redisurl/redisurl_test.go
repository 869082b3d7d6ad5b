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
