package api

import (
	"errors"
	"testing"
	"time"
)

// A remembered token still expires, and a token never checked is checked.
func TestVerifiedTokensStillExpire(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	a := &Auth{Secret: []byte("s"), Now: func() time.Time { return now }}
	g, err := a.Issue("alice")
	if err != nil {
		t.Fatal(err)
	}
	for range 2 { // checked, then remembered
		if id, err := a.Verify(g.Token); err != nil || id.User.ID != g.UserId || id.User.Name != "alice" || !id.ServerIssued {
			t.Fatalf("verify: %+v %v", id, err)
		}
	}
	if _, err := a.Verify(g.Token + "x"); !errors.Is(err, errUnauthenticated) {
		t.Errorf("a tampered token passed: %v", err)
	}
	now = now.Add(GuestTokenTTL + time.Second)
	if _, err := a.Verify(g.Token); !errors.Is(err, errUnauthenticated) {
		t.Errorf("a remembered token outlived its expiry: %v", err)
	}
}
