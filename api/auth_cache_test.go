package api

import (
	"fmt"
	"testing"
)

// An instance serving more active users than the old bound (10 000,
// emptied when full) keeps every token it checked: the first of 30 000 is
// still found, not checked again (seen here by the secret changing under
// it, which only a new check would notice).
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
	a.Secret = []byte("another-secret-another-secret-another")
	for _, i := range []int{0, 9_999, 10_000, 29_999} {
		if id, err := a.Verify(tokens[i]); err != nil || id.User.ID != users[i] {
			t.Errorf("token %d checked again (or wrong user %q): %v", i, id.User.ID, err)
		}
	}
	// a token never checked is checked, against the new secret
	g, err := (&Auth{Secret: []byte("cache-secret-cache-secret-cache-secret"), GuestEnabled: true}).Issue("u-new")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Verify(g.Token); err == nil {
		t.Error("a token never checked was taken without its check")
	}
}
