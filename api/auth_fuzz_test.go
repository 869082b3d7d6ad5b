package api

import (
	"errors"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Whatever the token, verification never panics, fails only with
// errUnauthenticated or errStreamTokenRequired, and accepts only a token
// whose signature one configured key verifies under its own algorithm: an
// identity token under a studio key or the server secret, a stream token
// under the server secret. CI runs it for a bounded time (scripts/test.sh);
// the seeds run with every go test.
func FuzzVerifyToken(f *testing.F) {
	s := testStudio(f)
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	a := studioAuth(f, &now, s.file(f))
	c := rc(now, time.Hour)
	g, _ := a.Issue("alice")
	id, _ := a.Verify(g.Token)
	st, _ := a.IssueStream(id, roomScope("room1"))
	none := jwt.NewWithClaims(jwt.SigningMethodNone, c)
	noneTok, _ := none.SignedString(jwt.UnsafeAllowNoneSignatureType)
	for _, tok := range []string{
		sign(f, jwt.SigningMethodRS256, s.rsa, "rsa-1", c),
		sign(f, jwt.SigningMethodES256, s.ec, "ec-1", c),
		sign(f, jwt.SigningMethodEdDSA, s.ed, "ed-1", c),
		sign(f, jwt.SigningMethodHS256, s.hmac, "hs-1", c),
		sign(f, jwt.SigningMethodHS256, []byte("n"), "rsa-1", c),
		sign(f, jwt.SigningMethodRS256, s.rsa, "ec-1", c),
		g.Token, st.Token, noneTok, "", ".", "..", "a.b.c", "eyJhbGciOiJub25lIn0.e30.",
		`eyJhbGciOiJIUzI1NiIsImtpZCI6WzFdfQ.e30.x`, // kid of the wrong type
	} {
		f.Add(tok)
	}
	keys := append([]Key{{ID: serverKeyID, Alg: "HS256", Material: a.Secret}}, a.Keys()...)
	f.Fuzz(func(t *testing.T, token string) {
		if _, err := a.Verify(token); err == nil {
			if !signedBy(token, keys) {
				t.Fatalf("accepted a token no configured key signed: %q", token)
			}
		} else if !errors.Is(err, errUnauthenticated) && !errors.Is(err, errStreamTokenRequired) {
			t.Fatalf("unexpected error class: %v", err)
		}
		if _, err := a.VerifyStream(token, roomScope("room1")); err == nil {
			if !signedBy(token, keys[:1]) {
				t.Fatalf("accepted a stream token the server did not sign: %q", token)
			}
		} else if !errors.Is(err, errUnauthenticated) && !errors.Is(err, errStreamTokenRequired) {
			t.Fatalf("unexpected error class: %v", err)
		}
	})
}

// signedBy reports whether one of keys verifies token's signature under
// the key's own algorithm, claims aside.
func signedBy(token string, keys []Key) bool {
	for _, k := range keys {
		_, err := jwt.Parse(token, func(*jwt.Token) (any, error) { return k.Material, nil },
			jwt.WithValidMethods([]string{k.Alg}), jwt.WithoutClaimsValidation())
		if err == nil {
			return true
		}
	}
	return false
}
