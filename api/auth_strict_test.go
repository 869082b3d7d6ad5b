package api

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// signRaw is a token of the header and claims JSON as written, signed
// with m and key: what a token library would never write.
func signRaw(t *testing.T, m jwt.SigningMethod, key any, header, claims string) string {
	t.Helper()
	in := mustB64(header) + "." + mustB64(claims)
	sig, err := m.Sign(in, key)
	if err != nil {
		t.Fatal(err)
	}
	return in + "." + mustB64(string(sig))
}

// Tokens whose JSON the JWT library read more loosely than RFC 7515/7519
// are refused, 401 UNAUTHENTICATED as any bad token, though validly signed:
// a repeated header or claim name (the last one won: {"sub":"a","sub":"b"}
// was user b, {"alg":"none","alg":"RS256"} verified as RS256), also one
// repeated in another case or inside a nested object; a crit header (it
// names extensions the verifier must understand, and none is); exp, nbf or
// iat given as a string. The same JSON written plainly verifies, as does
// an exp with a fraction (a NumericDate may have one). Stream tokens are
// read as strictly.
func TestVerifyStrictJSON(t *testing.T) {
	s := testStudio(t)
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	a := studioAuth(t, &now, s.file(t))
	exp, iat := now.Add(time.Hour).Unix(), now.Unix()
	rs := `{"alg":"RS256","typ":"JWT","kid":"rsa-1"}`
	claims := func(extra string) string {
		return fmt.Sprintf(`{"sub":"u-1","exp":%d,"iat":%d%s}`, exp, iat, extra)
	}
	tests := []struct {
		name           string
		header, claims string
		server         bool // signed with the server's secret (HS256), else the studio's RSA key
		ok             bool
	}{
		{"Plain", rs, claims(""), false, true},
		{"PlainServer", `{"alg":"HS256","typ":"JWT","kid":"realsync"}`, claims(""), true, true},
		{"ExpWithFraction", rs, fmt.Sprintf(`{"sub":"u-1","exp":%d.5,"iat":%d}`, exp, iat), false, true},
		{"RepeatedSub", rs, claims(`,"sub":"u-2"`), false, false},
		{"RepeatedSubServer", `{"alg":"HS256","typ":"JWT","kid":"realsync"}`, claims(`,"sub":"u-2"`), true, false},
		{"RepeatedExp", rs, claims(fmt.Sprintf(`,"exp":%d`, exp+60)), false, false},
		{"SubInAnotherCase", rs, claims(`,"SUB":"u-2"`), false, false},
		{"RepeatedInNested", rs, claims(`,"x":{"a":1,"a":2}`), false, false},
		{"RepeatedAlg", `{"alg":"none","alg":"RS256","typ":"JWT","kid":"rsa-1"}`, claims(""), false, false},
		{"RepeatedKid", `{"alg":"RS256","typ":"JWT","kid":"rsa-9","kid":"rsa-1"}`, claims(""), false, false},
		{"CritUnknown", `{"alg":"RS256","typ":"JWT","kid":"rsa-1","crit":["x-studio"],"x-studio":1}`, claims(""), false, false},
		{"CritRegistered", `{"alg":"RS256","typ":"JWT","kid":"rsa-1","crit":["exp"]}`, claims(""), false, false},
		{"ExpString", rs, fmt.Sprintf(`{"sub":"u-1","exp":"%d","iat":%d}`, exp, iat), false, false},
		{"IatString", rs, fmt.Sprintf(`{"sub":"u-1","exp":%d,"iat":"%d"}`, exp, iat), false, false},
		{"NbfString", rs, claims(fmt.Sprintf(`,"nbf":"%d"`, iat)), false, false},
		{"ExpStringServer", `{"alg":"HS256","typ":"JWT","kid":"realsync"}`, fmt.Sprintf(`{"sub":"u-1","exp":"%d"}`, exp), true, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tok := signRaw(t, jwt.SigningMethodRS256, s.rsa, tc.header, tc.claims)
			if tc.server {
				tok = signRaw(t, jwt.SigningMethodHS256, a.Secret, tc.header, tc.claims)
			}
			id, err := a.Verify(tok)
			switch {
			case tc.ok && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.ok && id.User.ID != "u-1":
				t.Fatalf("identity %+v", id)
			case !tc.ok && err == nil:
				t.Fatalf("accepted as %+v", id)
			case !tc.ok && !errors.Is(err, errUnauthenticated):
				t.Fatalf("refused with %v, want errUnauthenticated", err)
			case !tc.ok && (strings.Contains(err.Error(), "u-2") || strings.Contains(err.Error(), "x-studio")):
				t.Fatalf("the error echoes the token: %v", err)
			}
		})
	}

	// A stream token with its scope given twice.
	st := fmt.Sprintf(`{"sub":"u-1","scope":"room:a","scope":"lobby","pexp":%d,"aud":["realsync:stream"],"exp":%d,"iat":%d}`, exp, now.Add(time.Minute).Unix(), iat)
	tok := signRaw(t, jwt.SigningMethodHS256, a.Secret, `{"alg":"HS256","typ":"rs-stream+jwt","kid":"realsync-stream"}`, st)
	if id, err := a.VerifyStream(tok, lobbyScope); !errors.Is(err, errUnauthenticated) {
		t.Errorf("a stream token naming its scope twice: %+v %v, want errUnauthenticated", id, err)
	}
	plain := strings.Replace(st, `"scope":"room:a",`, "", 1)
	tok = signRaw(t, jwt.SigningMethodHS256, a.Secret, `{"alg":"HS256","typ":"rs-stream+jwt","kid":"realsync-stream"}`, plain)
	if _, err := a.VerifyStream(tok, lobbyScope); err != nil {
		t.Errorf("the same stream token written plainly: %v", err)
	}
}
