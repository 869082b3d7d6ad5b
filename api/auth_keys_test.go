package api

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/golang-jwt/jwt/v5"

	"github.com/realsync/realsync/api/oapi"
)

// studio holds a studio's signing keys, one per algorithm family, and the
// JWKS file of their public halves. Generated once: RSA keys are slow.
type studio struct {
	rsa  *rsa.PrivateKey
	rsa2 *rsa.PrivateKey
	ec   *ecdsa.PrivateKey
	ed   ed25519.PrivateKey
	hmac []byte
}

var (
	studioOnce sync.Once
	theStudio  studio
)

func testStudio(t testing.TB) studio {
	t.Helper()
	studioOnce.Do(func() {
		r, _ := rsa.GenerateKey(rand.Reader, 2048)
		r2, _ := rsa.GenerateKey(rand.Reader, 2048)
		ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		_, ed, _ := ed25519.GenerateKey(rand.Reader)
		h := make([]byte, 32)
		rand.Read(h)
		theStudio = studio{rsa: r, rsa2: r2, ec: ec, ed: ed, hmac: h}
	})
	return theStudio
}

// jwk marshals key (a public key, or an HMAC secret) as one JWK with kid
// and alg ("" for none).
func jwk(t testing.TB, key any, kid, alg string) map[string]any {
	t.Helper()
	_, oct := key.([]byte)
	j, err := jwkset.NewJWKFromKey(key, jwkset.JWKOptions{Marshal: jwkset.JWKMarshalOptions{Private: oct},
		Metadata: jwkset.JWKMetadataOptions{KID: kid, ALG: jwkset.ALG(alg)}})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(j.Marshal())
	var m map[string]any
	json.Unmarshal(b, &m)
	return m
}

// withAlg sets a JWK's alg, which jwkset would refuse to write when it
// does not fit the key.
func withAlg(m map[string]any, alg string) map[string]any {
	m["alg"] = alg
	return m
}

func jwks(keys ...map[string]any) []byte {
	b, _ := json.Marshal(map[string]any{"keys": keys})
	return b
}

// file is the studio's usual JWKS file: one key of each kind.
func (s studio) file(t testing.TB) []byte {
	return jwks(jwk(t, s.rsa.Public(), "rsa-1", "RS256"), jwk(t, s.ec.Public(), "ec-1", ""),
		jwk(t, s.ed.Public(), "ed-1", ""), jwk(t, s.hmac, "hs-1", "HS256"))
}

// sign signs claims with method and key, with kid unless "".
func sign(t testing.TB, m jwt.SigningMethod, key any, kid string, c jwt.Claims) string {
	t.Helper()
	tok := jwt.NewWithClaims(m, c)
	if kid != "" {
		tok.Header["kid"] = kid
	}
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestParseJWKS(t *testing.T) {
	s := testStudio(t)
	small, _ := rsa.GenerateKey(rand.Reader, 1024)
	private := jwk(t, s.rsa.Public(), "p", "RS256")
	private["d"] = "AQAB"
	enc := jwk(t, s.ec.Public(), "e", "")
	enc["use"] = "enc"
	tests := []struct {
		name string
		file []byte
		algs map[string]string // want kid → alg; nil: want an error
	}{
		{"Empty", []byte(`{"keys":[]}`), map[string]string{}},
		{"EveryKind", s.file(t), map[string]string{"rsa-1": "RS256", "ec-1": "ES256", "ed-1": "EdDSA", "hs-1": "HS256"}},
		{"PS256", jwks(jwk(t, s.rsa.Public(), "ps", "PS256")), map[string]string{"ps": "PS256"}},
		{"ECWithItsAlg", jwks(jwk(t, s.ec.Public(), "e", "ES256")), map[string]string{"e": "ES256"}},
		{"NotJSON", []byte(`{"keys":`), nil},
		{"Null", []byte(`null`), nil},
		{"NoKeysMember", []byte(`{}`), nil},
		{"KeysNull", []byte(`{"keys":null}`), nil},
		{"NoKid", jwks(jwk(t, s.ec.Public(), "", "")), nil},
		{"ReservedKid", jwks(jwk(t, s.ec.Public(), serverKeyID, "")), nil},
		{"DuplicateKid", jwks(jwk(t, s.ec.Public(), "k", ""), jwk(t, s.ed.Public(), "k", "")), nil},
		{"RSAWithoutAlg", jwks(jwk(t, s.rsa.Public(), "r", "")), nil},
		{"OctWithoutAlg", jwks(jwk(t, s.hmac, "h", "")), nil},
		{"RSAAsES256", jwks(withAlg(jwk(t, s.rsa.Public(), "r", ""), "ES256")), nil},
		{"RSAAsHS256", jwks(withAlg(jwk(t, s.rsa.Public(), "r", ""), "HS256")), nil},
		{"OctAsRS256", jwks(withAlg(jwk(t, s.hmac, "h", ""), "RS256")), nil},
		{"P256AsES384", jwks(withAlg(jwk(t, s.ec.Public(), "e", ""), "ES384")), nil},
		{"EdAsES256", jwks(withAlg(jwk(t, s.ed.Public(), "e", ""), "ES256")), nil},
		{"ShortHMAC", jwks(jwk(t, []byte("0123456789abcdef"), "h", "HS256")), nil},
		{"SmallRSA", jwks(jwk(t, small.Public(), "r", "RS256")), nil},
		{"PrivateParameters", jwks(private), nil},
		{"EncryptionKey", jwks(enc), nil},
		{"UnknownKty", []byte(`{"keys":[{"kty":"XYZ","kid":"x","alg":"RS256"}]}`), nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			keys, err := ParseJWKS(tc.file)
			if tc.algs == nil {
				if err == nil || !errors.Is(err, errKeys) {
					t.Fatalf("accepted (%v), want errKeys", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, k := range keys {
				got[k.ID] = k.Alg
			}
			if len(got) != len(tc.algs) {
				t.Fatalf("keys %v, want %v", got, tc.algs)
			}
			for kid, alg := range tc.algs {
				if got[kid] != alg {
					t.Errorf("kid %s: alg %q, want %q", kid, got[kid], alg)
				}
			}
		})
	}
}

// studioAuth verifies the studio's keys with the server secret "server-secret".
func studioAuth(t testing.TB, now *time.Time, file []byte) *Auth {
	t.Helper()
	a := &Auth{Secret: []byte("server-secret"), Leeway: 30 * time.Second, Now: func() time.Time { return *now }}
	keys, err := ParseJWKS(file)
	if err != nil {
		t.Fatal(err)
	}
	a.SetKeys(keys)
	return a
}

func rc(now time.Time, exp time.Duration) jwt.RegisteredClaims {
	return jwt.RegisteredClaims{Subject: "u-1", ExpiresAt: jwt.NewNumericDate(now.Add(exp)), IssuedAt: jwt.NewNumericDate(now)}
}

// Tokens of every key kind verify; the classic confusions do not: alg none,
// HS256 signed with the RSA public key's bytes, a kid lent to another
// algorithm, a kid-less token several keys could verify.
func TestVerifyAlgorithmConfusion(t *testing.T) {
	s := testStudio(t)
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	a := studioAuth(t, &now, s.file(t))
	c := rc(now, time.Hour)
	der, _ := x509.MarshalPKIXPublicKey(s.rsa.Public())
	pemKey := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	edDER, _ := x509.MarshalPKIXPublicKey(s.ed.Public())
	none := jwt.NewWithClaims(jwt.SigningMethodNone, c)
	none.Header["kid"] = "rsa-1"
	noneTok, _ := none.SignedString(jwt.UnsafeAllowNoneSignatureType)
	tests := []struct {
		name   string
		token  string
		ok     bool
		server bool // want ServerIssued
	}{
		{"RS256", sign(t, jwt.SigningMethodRS256, s.rsa, "rsa-1", c), true, false},
		{"ES256", sign(t, jwt.SigningMethodES256, s.ec, "ec-1", c), true, false},
		{"EdDSA", sign(t, jwt.SigningMethodEdDSA, s.ed, "ed-1", c), true, false},
		{"HS256Studio", sign(t, jwt.SigningMethodHS256, s.hmac, "hs-1", c), true, false},
		{"ServerKid", sign(t, jwt.SigningMethodHS256, a.Secret, serverKeyID, c), true, true},
		{"AlgNone", noneTok, false, false},
		{"AlgNoneNoKid", strings.Replace(noneTok, noneTok[:strings.Index(noneTok, ".")], mustB64(`{"alg":"none","typ":"JWT"}`), 1), false, false},
		{"HS256WithRSAPublicPEM", sign(t, jwt.SigningMethodHS256, pemKey, "rsa-1", c), false, false},
		{"HS256WithRSAPublicDER", sign(t, jwt.SigningMethodHS256, der, "rsa-1", c), false, false},
		{"HS256WithRSAPublicPEMNoKid", sign(t, jwt.SigningMethodHS256, pemKey, "", c), false, false},
		{"HS256WithEdPublicKey", sign(t, jwt.SigningMethodHS256, []byte(s.ed.Public().(ed25519.PublicKey)), "ed-1", c), false, false},
		{"HS256WithEdDER", sign(t, jwt.SigningMethodHS256, edDER, "ed-1", c), false, false},
		{"RS256UnderECKid", sign(t, jwt.SigningMethodRS256, s.rsa, "ec-1", c), false, false},
		{"ES256UnderEdKid", sign(t, jwt.SigningMethodES256, s.ec, "ed-1", c), false, false},
		{"PS256UnderRS256Kid", sign(t, jwt.SigningMethodPS256, s.rsa, "rsa-1", c), false, false},
		{"RS256UnderServerKid", sign(t, jwt.SigningMethodRS256, s.rsa, serverKeyID, c), false, false},
		{"HS256StudioUnderServerKid", sign(t, jwt.SigningMethodHS256, s.hmac, serverKeyID, c), false, false},
		{"ServerSecretUnderStudioKid", sign(t, jwt.SigningMethodHS256, a.Secret, "hs-1", c), false, false},
		{"OtherRSAKey", sign(t, jwt.SigningMethodRS256, s.rsa2, "rsa-1", c), false, false},
		{"UnknownKid", sign(t, jwt.SigningMethodRS256, s.rsa, "rsa-9", c), false, false},
		{"RS256NoKidOneKey", sign(t, jwt.SigningMethodRS256, s.rsa, "", c), true, false},
		// HS256 without kid: the server secret and hs-1 could both apply.
		{"HS256NoKidAmbiguous", sign(t, jwt.SigningMethodHS256, a.Secret, "", c), false, false},
		{"ES384NoKey", sign(t, jwt.SigningMethodES384, mustEC384(), "", c), false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			id, err := a.Verify(tc.token)
			switch {
			case tc.ok && err != nil:
				t.Fatalf("refused: %v", err)
			case !tc.ok && err == nil:
				t.Fatalf("accepted: %+v", id)
			case !tc.ok && !errors.Is(err, errUnauthenticated):
				t.Fatalf("refused with %v, want errUnauthenticated", err)
			case tc.ok && (id.User.ID != "u-1" || id.ServerIssued != tc.server):
				t.Fatalf("identity %+v", id)
			}
		})
	}
}

func mustB64(s string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(s))
}

func mustEC384() *ecdsa.PrivateKey {
	k, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	return k
}

// Without studio keys, the server's own kid-less HS256 tokens (issued
// before kids, or by a studio sharing the secret) still verify.
func TestVerifyServerTokenWithoutKid(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	a := &Auth{Secret: []byte("server-secret"), Now: func() time.Time { return now }}
	id, err := a.Verify(sign(t, jwt.SigningMethodHS256, a.Secret, "", rc(now, time.Hour)))
	if err != nil || !id.ServerIssued {
		t.Fatalf("%+v %v", id, err)
	}
}

// exp is required, nbf and iat are honoured within the leeway, iss and aud
// are checked on studio tokens only.
func TestVerifyClaims(t *testing.T) {
	s := testStudio(t)
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	a := studioAuth(t, &now, s.file(t))
	a.Issuer, a.Audience = "https://login.studio.example", "realsync"
	good := func(mod func(*jwt.RegisteredClaims)) jwt.RegisteredClaims {
		c := rc(now, time.Hour)
		c.Issuer, c.Audience = a.Issuer, jwt.ClaimStrings{"other", a.Audience}
		if mod != nil {
			mod(&c)
		}
		return c
	}
	tests := []struct {
		name   string
		c      jwt.RegisteredClaims
		server bool // signed by the server secret instead of the RSA key
		ok     bool
	}{
		{"Good", good(nil), false, true},
		{"NoExp", good(func(c *jwt.RegisteredClaims) { c.ExpiresAt = nil }), false, false},
		{"Expired", good(func(c *jwt.RegisteredClaims) { c.ExpiresAt = jwt.NewNumericDate(now.Add(-31 * time.Second)) }), false, false},
		{"ExpiredWithinLeeway", good(func(c *jwt.RegisteredClaims) { c.ExpiresAt = jwt.NewNumericDate(now.Add(-29 * time.Second)) }), false, true},
		{"NotYet", good(func(c *jwt.RegisteredClaims) { c.NotBefore = jwt.NewNumericDate(now.Add(31 * time.Second)) }), false, false},
		{"NotYetWithinLeeway", good(func(c *jwt.RegisteredClaims) { c.NotBefore = jwt.NewNumericDate(now.Add(29 * time.Second)) }), false, true},
		{"IssuedInTheFuture", good(func(c *jwt.RegisteredClaims) { c.IssuedAt = jwt.NewNumericDate(now.Add(time.Minute)) }), false, false},
		{"WrongIssuer", good(func(c *jwt.RegisteredClaims) { c.Issuer = "https://evil.example" }), false, false},
		{"NoIssuer", good(func(c *jwt.RegisteredClaims) { c.Issuer = "" }), false, false},
		{"WrongAudience", good(func(c *jwt.RegisteredClaims) { c.Audience = jwt.ClaimStrings{"other"} }), false, false},
		{"ServerTokenNeedsNeither", rc(now, time.Hour), true, true},
		{"EmptySubject", good(func(c *jwt.RegisteredClaims) { c.Subject = "" }), false, false},
		{"ControlInSubject", good(func(c *jwt.RegisteredClaims) { c.Subject = "a\nb" }), false, false},
		{"SpaceInSubject", good(func(c *jwt.RegisteredClaims) { c.Subject = "a b" }), false, false},
		{"CommaInSubject", good(func(c *jwt.RegisteredClaims) { c.Subject = "a,b" }), false, false},
		{"NoBreakSpaceInSubject", good(func(c *jwt.RegisteredClaims) { c.Subject = "a\u00a0b" }), false, false},
		{"ZeroWidthSpaceInSubject", good(func(c *jwt.RegisteredClaims) { c.Subject = "a\u200bb" }), false, false},
		{"LineSeparatorInSubject", good(func(c *jwt.RegisteredClaims) { c.Subject = "a\u2028b" }), false, false},
		{"ByteOrderMarkInSubject", good(func(c *jwt.RegisteredClaims) { c.Subject = "\ufeffa" }), false, false},
		{"C1ControlInSubject", good(func(c *jwt.RegisteredClaims) { c.Subject = "a\u0085b" }), false, false},
		{"NonASCIISubject", good(func(c *jwt.RegisteredClaims) { c.Subject = "名前-jöran" }), false, true},
		{"SubjectOf128Bytes", good(func(c *jwt.RegisteredClaims) { c.Subject = strings.Repeat("é", 64) }), false, true},
		{"SubjectOver128Bytes", good(func(c *jwt.RegisteredClaims) { c.Subject = strings.Repeat("é", 65) }), false, false},
		{"KeySubject", good(func(c *jwt.RegisteredClaims) { c.Subject = "key:gs-1" }), false, false},
		{"KeySubjectServerSigned", func() jwt.RegisteredClaims { c := rc(now, time.Hour); c.Subject = "key:gs-1"; return c }(), true, false},
		{"KeyLikeSubject", good(func(c *jwt.RegisteredClaims) { c.Subject = "keys:gs-1" }), false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tok := sign(t, jwt.SigningMethodRS256, s.rsa, "rsa-1", tc.c)
			if tc.server {
				tok = sign(t, jwt.SigningMethodHS256, a.Secret, serverKeyID, tc.c)
			}
			if _, err := a.Verify(tok); (err == nil) != tc.ok {
				t.Fatalf("ok %v, want %v (%v)", err == nil, tc.ok, err)
			}
		})
	}
}

// A key removed from the file stops verifying at once, even for tokens
// checked (and remembered) before.
func TestRemovedKeyForgetsItsTokens(t *testing.T) {
	s := testStudio(t)
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	a := studioAuth(t, &now, s.file(t))
	tok := sign(t, jwt.SigningMethodES256, s.ec, "ec-1", rc(now, time.Hour))
	if _, err := a.Verify(tok); err != nil {
		t.Fatal(err)
	}
	keys, _ := ParseJWKS(jwks(jwk(t, s.rsa.Public(), "rsa-1", "RS256")))
	a.SetKeys(keys)
	if _, err := a.Verify(tok); !errors.Is(err, errUnauthenticated) {
		t.Fatalf("a token of a removed key: %v", err)
	}
}

// studioAndGuest is an Auth of the studio's keys with guests on, its
// clock (settable), and a guest token of alice.
func studioAndGuest(t *testing.T) (studio, *Auth, *time.Time, oapi.GuestToken) {
	t.Helper()
	s := testStudio(t)
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	a := studioAuth(t, &now, s.file(t))
	a.GuestEnabled = true
	g, err := a.Issue("alice")
	if err != nil {
		t.Fatal(err)
	}
	return s, a, &now, g
}

// A stream token issued for a studio's identity token opens nothing once
// that token's key is out of force: removed from the file, or its kid
// given other material (an abuse tester's find: they kept opening new
// streams after the removal, where every REST call was refused). Stream
// tokens of the server's own tokens and of the keys still in force open
// theirs.
func TestStreamTokensOfARemovedKeyOpenNothing(t *testing.T) {
	s, a, clock, g := studioAndGuest(t)
	now := *clock
	stream := func(tok string) string {
		t.Helper()
		id, err := a.Verify(tok)
		if err != nil {
			t.Fatal(err)
		}
		st, err := a.IssueStream(id, lobbyScope)
		if err != nil {
			t.Fatal(err)
		}
		return st.Token
	}
	ec := stream(sign(t, jwt.SigningMethodES256, s.ec, "ec-1", rc(now, time.Hour)))
	hs := stream(sign(t, jwt.SigningMethodHS256, s.hmac, "hs-1", rc(now, time.Hour)))
	guest := stream(g.Token)
	opens := func(name, tok string, want bool) {
		t.Helper()
		_, err := a.VerifyStream(tok, lobbyScope)
		if (err == nil) != want {
			t.Fatalf("%s's stream token opens: %v, want %v", name, err, want)
		}
		if err != nil && !errors.Is(err, errUnauthenticated) {
			t.Fatalf("%s's stream token: %v, want errUnauthenticated", name, err)
		}
	}
	opens("ec-1", ec, true)
	opens("hs-1", hs, true)
	other := make([]byte, 32)
	copy(other, s.hmac)
	other[0] ^= 1
	keys, err := ParseJWKS(jwks(jwk(t, s.rsa.Public(), "rsa-1", "RS256"), jwk(t, s.hmac, "hs-1", "HS256")))
	if err != nil {
		t.Fatal(err)
	}
	a.SetKeys(keys)
	opens("ec-1, removed,", ec, false)
	opens("hs-1", hs, true)
	opens("the guest", guest, true)
	if keys, err = ParseJWKS(jwks(jwk(t, other, "hs-1", "HS256"))); err != nil {
		t.Fatal(err)
	}
	a.SetKeys(keys)
	opens("hs-1, given other material,", hs, false)
	opens("the guest", guest, true)
}

// Refresh renews the server's tokens for the same user, refuses a studio's,
// one that expired (accepted within the leeway), and a guest's while guests
// are off.
func TestRefresh(t *testing.T) {
	s, a, clock, g := studioAndGuest(t)
	*clock = clock.Add(23 * time.Hour)
	now := *clock
	id, err := a.Verify(g.Token)
	if err != nil {
		t.Fatal(err)
	}
	r, err := a.Refresh(id)
	if err != nil || r.UserId != g.UserId || r.Name != "alice" || !r.ExpiresAt.Equal(now.Add(GuestTokenTTL)) {
		t.Fatalf("refreshed %+v %v", r, err)
	}
	if id2, err := a.Verify(r.Token); err != nil || id2.User != id.User {
		t.Fatalf("the refreshed token: %+v %v", id2, err)
	}
	studioID, err := a.Verify(sign(t, jwt.SigningMethodRS256, s.rsa, "rsa-1", rc(now, time.Hour)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Refresh(studioID); !errors.Is(err, errRefreshNotAllowed) {
		t.Errorf("a studio token refreshed: %v", err)
	}
	// expired, though verified within the leeway: not renewed
	*clock = id.Expires.Add(10 * time.Second)
	if late, err := a.Verify(g.Token); err != nil {
		t.Fatalf("within the leeway: %v", err)
	} else if _, err := a.Refresh(late); !errors.Is(err, errUnauthenticated) {
		t.Errorf("a token refreshed 10 s after it expired: %v", err)
	}
	*clock = now
	a.GuestEnabled = false
	if _, err := a.Refresh(id); !errors.Is(err, errGuestDisabled) {
		t.Errorf("a guest token refreshed while guests are off: %v", err)
	}
}

// A stream token opens its own stream only, is never an identity token,
// and ends with its minute (plus the instances' skew allowance).
func TestStreamTokenScope(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	a := &Auth{Secret: []byte("server-secret"), GuestEnabled: true, Leeway: 30 * time.Second, Now: func() time.Time { return now }}
	g, _ := a.Issue("alice")
	id, _ := a.Verify(g.Token)
	st, err := a.IssueStream(id, roomScope("room1"))
	if err != nil || st.ExpiresAt.After(now.Add(StreamTokenTTL)) {
		t.Fatalf("%+v %v", st, err)
	}
	if got, err := a.VerifyStream(st.Token, roomScope("room1")); err != nil || got.User != id.User || !got.Expires.Equal(id.Expires) {
		t.Fatalf("%+v %v", got, err)
	}
	for _, scope := range []string{roomScope("room2"), lobbyScope} {
		if _, err := a.VerifyStream(st.Token, scope); !errors.Is(err, errStreamTokenRequired) {
			t.Errorf("opened %s: %v", scope, err)
		}
	}
	if _, err := a.Verify(st.Token); !errors.Is(err, errStreamTokenRequired) {
		t.Errorf("a stream token as identity: %v", err)
	}
	if _, err := a.VerifyStream(g.Token, roomScope("room1")); !errors.Is(err, errStreamTokenRequired) {
		t.Errorf("an identity token as stream token: %v", err)
	}
	// A token signed by another secret, or of another typ, is no stream token.
	forged := &Auth{Secret: []byte("other"), Now: a.Now}
	fst, _ := forged.IssueStream(id, roomScope("room1"))
	if _, err := a.VerifyStream(fst.Token, roomScope("room1")); !errors.Is(err, errUnauthenticated) {
		t.Errorf("a stream token of another secret: %v", err)
	}
	plain := sign(t, jwt.SigningMethodHS256, a.Secret, streamKeyID, streamClaims{Scope: roomScope("room1"), ParentExp: id.Expires.Unix(),
		RegisteredClaims: jwt.RegisteredClaims{Subject: "u", Audience: jwt.ClaimStrings{streamAudience}, ExpiresAt: jwt.NewNumericDate(now.Add(time.Minute))}})
	if _, err := a.VerifyStream(plain, roomScope("room1")); err == nil {
		t.Error("a stream token without its typ opened a stream")
	}
	now = now.Add(StreamTokenTTL + streamLeeway + time.Second)
	if _, err := a.VerifyStream(st.Token, roomScope("room1")); !errors.Is(err, errUnauthenticated) {
		t.Errorf("an expired stream token: %v", err)
	}
	// Never past the identity's own expiry; none once it expired (an
	// identity accepted within the leeway), whose token could open nothing.
	now = id.Expires.Add(-10 * time.Second)
	if late, _ := a.IssueStream(id, lobbyScope); late.ExpiresAt.After(id.Expires) {
		t.Errorf("stream token until %v, identity until %v", late.ExpiresAt, id.Expires)
	}
	now = id.Expires.Add(10 * time.Second)
	if expired, err := a.Verify(g.Token); err != nil {
		t.Fatalf("within the leeway: %v", err)
	} else if st, err := a.IssueStream(expired, lobbyScope); !errors.Is(err, errUnauthenticated) {
		t.Errorf("a stream token for an expired identity: %+v %v", st, err)
	}
}
