package conn

import (
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// The embedded store's loopback port answers only a connection that
// gives the password drawn at its start: without it (any local process)
// or with another, NOAUTH or WRONGPASS, nothing read or written.
func TestEmbeddedAsksItsPassword(t *testing.T) {
	e, err := StartEmbedded()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	if err := e.Set("k", "v"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, password, refusal string
	}{
		{"none", "", "NOAUTH"},
		{"another", "not-" + e.Password, "WRONGPASS"},
		{"its own", e.Password, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := redis.NewClient(&redis.Options{Addr: e.Addr(), Password: tc.password, Protocol: 2, MaxRetries: -1})
			defer c.Close()
			got, err := c.Get(t.Context(), "k").Result()
			switch {
			case tc.refusal == "" && (err != nil || got != "v"):
				t.Fatalf("GET k: %q, %v; want \"v\"", got, err)
			case tc.refusal != "" && (err == nil || !strings.Contains(err.Error(), tc.refusal)):
				t.Fatalf("GET k: %q, %v; want %s", got, err, tc.refusal)
			}
		})
	}
}
