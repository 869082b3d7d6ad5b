package api

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"

	"github.com/realsync/realsync/rooms"
)

// APIKeyPrefix starts every API key, so that keys are told apart from
// JWTs at a glance and secret scanners can find them.
const APIKeyPrefix = "rsk_"

// apiKeyBytes is the randomness of a key: 256 bits, far beyond guessing,
// which is what lets the file hold a fast hash (SHA-256) rather than a slow
// password hash (see APIKey).
const apiKeyBytes = 32

// apiKeyIDRe is the form of a key's id, as it shows in logs and rate-limit
// identities ("key:<id>").
var apiKeyIDRe = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// APIKey is one server credential as the keys file holds it: an id, the
// SHA-256 hash of the key, and its scopes. The key itself is never stored.
//
// Why SHA-256 and not bcrypt: a key is 256 random bits, so a leaked hash
// cannot be reversed by guessing, however fast the hash; bcrypt's cost is
// there to slow the guessing of low-entropy passwords. Keys are sent on
// every request, and a deliberately slow hash would cost tens of
// milliseconds of CPU each time (a denial of service for the asking) or a
// cache of plaintext keys.
type APIKey struct {
	ID     string
	Hash   [sha256.Size]byte
	Scopes rooms.Scope
}

// Line is the key's line in the keys file.
func (k APIKey) Line() string {
	return k.ID + " sha256:" + hex.EncodeToString(k.Hash[:]) + " " + k.Scopes.String()
}

// keyUserPrefix starts the user id of every API key ("key:<id>"); Verify
// refuses a token whose subject starts with it, so no player shares a key's
// rate limits or log lines.
const keyUserPrefix = rooms.ServerUserPrefix

// user is the caller a request with this key acts as: the server, with an
// identity no player can have ("key:<id>"; user ids of guests start "g_",
// and a JWT whose subject starts "key:" is refused).
func (k APIKey) user() rooms.User {
	return rooms.User{ID: keyUserPrefix + k.ID, Name: k.ID, Server: true, Scopes: k.Scopes}
}

// NewAPIKey makes a new random key for id with scopes: the key, to hand to
// its holder once, and its record, whose Line goes into the keys file.
func NewAPIKey(id string, scopes rooms.Scope) (string, APIKey, error) {
	if !apiKeyIDRe.MatchString(id) {
		return "", APIKey{}, fmt.Errorf("key id %q must match %s", id, apiKeyIDRe)
	}
	if scopes == 0 {
		return "", APIKey{}, fmt.Errorf("a key needs at least one scope")
	}
	b := make([]byte, apiKeyBytes)
	if _, err := rand.Read(b); err != nil {
		return "", APIKey{}, err
	}
	key := APIKeyPrefix + base64.RawURLEncoding.EncodeToString(b)
	return key, APIKey{ID: id, Hash: sha256.Sum256([]byte(key)), Scopes: scopes}, nil
}

// ParseAPIKeys reads a keys file: one key per line, "<id> sha256:<64 hex
// digits> <scope>[,<scope>...]", fields separated by spaces or tabs; blank
// lines and lines starting with # are ignored. Ids and hashes must be
// unique. The error names the first bad line. No keys at all is valid (every
// key revoked).
func ParseAPIKeys(data []byte) ([]APIKey, error) {
	var out []APIKey
	ids, hashes := map[string]bool{}, map[[sha256.Size]byte]bool{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, err := parseAPIKeyLine(line)
		switch {
		case err != nil:
			return nil, fmt.Errorf("line %d: %w", n, err)
		case ids[k.ID]:
			return nil, fmt.Errorf("line %d: key id %q given twice", n, k.ID)
		case hashes[k.Hash]:
			return nil, fmt.Errorf("line %d: the hash of key %q is another key's too", n, k.ID)
		}
		ids[k.ID], hashes[k.Hash] = true, true
		out = append(out, k)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

func parseAPIKeyLine(line string) (APIKey, error) {
	f := strings.Fields(line)
	if len(f) != 3 {
		return APIKey{}, fmt.Errorf("want 3 fields: <id> sha256:<hex> <scopes>, got %d", len(f))
	}
	if !apiKeyIDRe.MatchString(f[0]) {
		return APIKey{}, fmt.Errorf("key id %q must match %s", f[0], apiKeyIDRe)
	}
	h, ok := strings.CutPrefix(f[1], "sha256:")
	raw, err := hex.DecodeString(h)
	if !ok || err != nil || len(raw) != sha256.Size {
		return APIKey{}, fmt.Errorf("key %q: the hash must be sha256: and 64 hex digits (the key itself never goes in the file)", f[0])
	}
	scopes, err := rooms.ParseScopes(f[2])
	if err != nil {
		return APIKey{}, fmt.Errorf("key %q: %w", f[0], err)
	}
	k := APIKey{ID: f[0], Scopes: scopes}
	copy(k.Hash[:], raw)
	return k, nil
}

// keySet looks keys up by hash.
type keySet map[[sha256.Size]byte]APIKey

func newKeySet(keys []APIKey) keySet {
	m := make(keySet, len(keys))
	for _, k := range keys {
		m[k.Hash] = k
	}
	return m
}

// find returns the key whose hash is the hash of key. The lookup is by
// hash, so its timing tells nothing of the stored keys that a caller could
// use to approach one; the final comparison is constant-time all the same.
func (s keySet) find(key string) (APIKey, bool) {
	h := sha256.Sum256([]byte(key))
	k, ok := s[h]
	if !ok || subtle.ConstantTimeCompare(k.Hash[:], h[:]) != 1 {
		return APIKey{}, false
	}
	return k, true
}
