package api

import (
	"fmt"
	"testing"
	"time"
)

// An instance serving more active users than the old bound (10 000,
// emptied when full) keeps every token it checked: the first of 30 000 is
// still found in the cache, as are the 10 000th and 10 001st.
func TestVerifiedTokensOutlastTenThousandUsers(t *testing.T) {
	a := &Auth{Secret: []byte("cache-secret-cache-secret-cache-secret"), GuestEnabled: true}
	tokens := make([]string, 30_000)
	for i := range tokens {
		g, err := a.Issue(fmt.Sprint("u", i))
		if err != nil {
			t.Fatal(err)
		}
		tokens[i] = g.Token
	}
	users := make([]string, len(tokens))
	for i, tok := range tokens {
		id, err := a.Verify(tok)
		if err != nil {
			t.Fatal(err)
		}
		users[i] = id.User.ID
	}
	for _, i := range []int{0, 9_999, 10_000, 29_999} {
		if id, ok := a.verified.Load().GetIfPresent(tokens[i]); !ok || id.User.ID != users[i] {
			t.Errorf("token %d: in the cache %v, user %q, want %q", i, ok, id.User.ID, users[i])
		}
	}
}

// The cache keeps a token until it expires on the Auth's clock (a fake
// one here), not the machine's.
func TestVerifiedTokensKeptOnTheAuthsClock(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC) // in the past of any CI machine
	a := &Auth{Secret: []byte("cache-secret-cache-secret-cache-secret"), GuestEnabled: true, Now: func() time.Time { return now }}
	g, err := a.Issue("u")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Verify(g.Token); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond) // past otter's least expiry (1 ms) on the machine's clock
	if _, ok := a.verified.Load().GetIfPresent(g.Token); !ok {
		t.Fatal("a token valid on the Auth's clock was dropped")
	}
}
