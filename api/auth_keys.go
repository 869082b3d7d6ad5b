package api

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/MicahParks/jwkset"
	"github.com/golang-jwt/jwt/v5"
)

// Key is one key that verifies identity tokens, from the JWKS file
// (REALSYNC_JWT_KEYS_FILE): its kid, the one algorithm it verifies, and its
// material ([]byte for HMAC, *rsa.PublicKey, *ecdsa.PublicKey,
// ed25519.PublicKey).
type Key struct {
	ID       string
	Alg      string
	Material any

	// print names the key and its material (SetKeys sets it): a stream
	// token carries the print of the key of the identity token it was
	// issued for, and opens nothing once that key is out of force, also
	// when a kid was given new material.
	print string
}

// keyPrint is the kid, algorithm and a digest of the material of k.
func keyPrint(k Key) string {
	var material []byte
	switch m := k.Material.(type) {
	case []byte:
		material = m
	default:
		material, _ = x509.MarshalPKIXPublicKey(m) // every public key ParseJWKS makes
	}
	sum := sha256.Sum256(append([]byte(k.Alg+"\x00"), material...))
	return k.ID + "." + base64.RawURLEncoding.EncodeToString(sum[:12])
}

// serverKeyID is the kid of the tokens the server signs itself with
// REALSYNC_JWT_SECRET (guest and refreshed tokens); no key of the JWKS
// file may take it.
const serverKeyID = "realsync"

// minHMACKey is the shortest HMAC key accepted in the JWKS file: 256 bits,
// as RFC 7518 §3.2 requires for HS256.
const minHMACKey = 32

// minRSABits is the smallest RSA modulus accepted (RFC 7518 §3.3).
const minRSABits = 2048

// verifyingAlgs are the algorithms a token may name; each key verifies
// exactly one of them. "none" is never among them.
var verifyingAlgs = []string{"HS256", "HS384", "HS512", "RS256", "RS384", "RS512", "PS256", "PS384", "PS512",
	"ES256", "ES384", "ES512", "EdDSA"}

// errKeys wraps every reason a JWKS file is refused.
var errKeys = errors.New("bad JWKS file")

// ParseJWKS reads a JSON Web Key Set (RFC 7517) of verification keys. The
// keys are decoded by github.com/MicahParks/jwkset; this adds the rules that
// make algorithm confusion impossible: every key has a kid, unique in the
// set; its algorithm is its alg, required for kty oct and RSA (each could
// serve several) and derived from the curve for EC (P-256 → ES256, P-384 →
// ES384, P-521 → ES512) and OKP (Ed25519 → EdDSA) when absent; an alg that
// does not fit the key's type is refused; "use", when present, is "sig".
// Public keys only: an RSA, EC or OKP key with private parameters is
// refused (the file is copied to every instance; the studio's signing key
// must stay with the studio). HMAC keys have at least 32 bytes, RSA keys
// at least 2048 bits. An empty set is valid (no studio keys), written as
// one: a file without the "keys" member (null, {}) is refused, as most
// likely truncated or another file (a tester's find: it loaded, with no
// key).
func ParseJWKS(data []byte) ([]Key, error) {
	var set jwkset.JWKSMarshal
	if err := json.Unmarshal(data, &set); err != nil {
		return nil, fmt.Errorf("%w: %v", errKeys, err)
	}
	var members map[string]json.RawMessage
	if json.Unmarshal(data, &members) != nil || members["keys"] == nil || string(members["keys"]) == "null" {
		return nil, fmt.Errorf(`%w: no "keys" member (RFC 7517); {"keys": []} is a set of none`, errKeys)
	}
	keys := make([]Key, 0, len(set.Keys))
	seen := map[string]bool{}
	for i, m := range set.Keys {
		k, err := parseJWK(m)
		if err != nil {
			return nil, fmt.Errorf("%w: key %d (kid %q): %v", errKeys, i, m.KID, err)
		}
		if seen[k.ID] {
			return nil, fmt.Errorf("%w: kid %q appears twice", errKeys, k.ID)
		}
		seen[k.ID] = true
		keys = append(keys, k)
	}
	return keys, nil
}

func parseJWK(m jwkset.JWKMarshal) (Key, error) {
	switch {
	case m.KID == "":
		return Key{}, errors.New(`"kid" is required`)
	case m.KID == serverKeyID:
		return Key{}, fmt.Errorf("kid %q is reserved for the tokens the server signs itself", serverKeyID)
	case m.USE != "" && m.USE != jwkset.UseSig:
		return Key{}, fmt.Errorf(`"use" must be "sig", not %q`, m.USE)
	case m.KTY != jwkset.KtyOct && (m.D != "" || m.P != "" || m.Q != ""):
		return Key{}, errors.New("holds private key parameters: publish the public key only")
	}
	alg, err := keyAlg(m)
	if err != nil {
		return Key{}, err
	}
	jwk, err := jwkset.NewJWKFromMarshal(m, jwkset.JWKMarshalOptions{Private: m.KTY == jwkset.KtyOct},
		jwkset.JWKValidateOptions{})
	if err != nil {
		return Key{}, err
	}
	material := jwk.Key()
	switch k := material.(type) {
	case []byte:
		if len(k) < minHMACKey {
			return Key{}, fmt.Errorf("an HMAC key needs at least %d bytes", minHMACKey)
		}
	case *rsa.PublicKey:
		if k.N.BitLen() < minRSABits {
			return Key{}, fmt.Errorf("an RSA key needs at least %d bits", minRSABits)
		}
	case *ecdsa.PublicKey, ed25519.PublicKey:
	default:
		return Key{}, fmt.Errorf("unsupported key type %T", material)
	}
	return Key{ID: m.KID, Alg: alg, Material: material}, nil
}

// keyAlg is the one algorithm key m verifies (see ParseJWKS).
func keyAlg(m jwkset.JWKMarshal) (string, error) {
	fits := map[jwkset.KTY][]string{
		jwkset.KtyOct: {"HS256", "HS384", "HS512"},
		jwkset.KtyRSA: {"RS256", "RS384", "RS512", "PS256", "PS384", "PS512"},
	}
	byCurve := map[jwkset.CRV]string{jwkset.CrvP256: "ES256", jwkset.CrvP384: "ES384", jwkset.CrvP521: "ES512",
		jwkset.CrvEd25519: "EdDSA"}
	alg := string(m.ALG)
	switch m.KTY {
	case jwkset.KtyOct, jwkset.KtyRSA:
		if alg == "" {
			return "", fmt.Errorf(`"alg" is required for kty %s`, m.KTY)
		}
		for _, a := range fits[m.KTY] {
			if a == alg {
				return alg, nil
			}
		}
	case jwkset.KtyEC, jwkset.KtyOKP:
		want, ok := byCurve[m.CRV]
		if !ok || (m.KTY == jwkset.KtyOKP) != (want == "EdDSA") {
			return "", fmt.Errorf("unsupported curve %q for kty %s", m.CRV, m.KTY)
		}
		if alg == "" || alg == want {
			return want, nil
		}
	default:
		return "", fmt.Errorf("unsupported kty %q", m.KTY)
	}
	return "", fmt.Errorf("alg %q does not fit kty %s", alg, m.KTY)
}

// chosenKey is the key a token was verified with.
type chosenKey struct {
	key    Key
	server bool // REALSYNC_JWT_SECRET's
}

// pick chooses the key that verifies t: by its kid, else the only key
// whose algorithm is the token's (a token without kid is refused when
// several could apply). The key's pinned algorithm must be the token's, so
// an RSA public key never verifies an HS256 token and a kid never lends its
// key to another algorithm.
func (a *Auth) pick(t *jwt.Token, into *chosenKey) (any, error) {
	alg := t.Method.Alg()
	server := Key{ID: serverKeyID, Alg: "HS256", Material: a.Secret}
	var studio []Key
	if ks := a.keys.Load(); ks != nil {
		studio = *ks
	}
	kid, hasKid := t.Header["kid"]
	if hasKid {
		id, ok := kid.(string)
		if !ok {
			return nil, errors.New("kid is not a string")
		}
		if id == serverKeyID {
			*into = chosenKey{key: server, server: true}
		} else {
			i := indexKey(studio, func(k Key) bool { return k.ID == id })
			if i < 0 {
				return nil, fmt.Errorf("unknown kid %q", id)
			}
			*into = chosenKey{key: studio[i]}
		}
	} else {
		n := 0
		if alg == server.Alg {
			*into, n = chosenKey{key: server, server: true}, 1
		}
		for _, k := range studio {
			if k.Alg == alg {
				*into = chosenKey{key: k}
				n++
			}
		}
		if n != 1 {
			return nil, fmt.Errorf("a token without kid needs exactly one key of its algorithm, there are %d", n)
		}
	}
	if into.key.Alg != alg {
		return nil, fmt.Errorf("key %q verifies %s, not %s", into.key.ID, into.key.Alg, alg)
	}
	return into.key.Material, nil
}

func indexKey(ks []Key, f func(Key) bool) int {
	for i, k := range ks {
		if f(k) {
			return i
		}
	}
	return -1
}
