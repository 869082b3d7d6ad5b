package api

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/realsync/realsync/internal/wait"
	"github.com/realsync/realsync/rooms"
)

func TestParseAPIKeys(t *testing.T) {
	h := "sha256:" + strings.Repeat("ab", 32)
	h2 := "sha256:" + strings.Repeat("cd", 32)
	tests := []struct {
		name string
		file string
		n    int    // keys read
		err  string // in the error, "" for none
	}{
		{name: "Empty", file: "", n: 0},
		{name: "CommentsAndBlanks", file: "# id hash scopes\n\n  \n", n: 0},
		{name: "One", file: "gs-eu-1 " + h + " rooms:read,rooms:write\n", n: 1},
		{name: "Tabs", file: "gs-eu-1\t" + h + "\trooms:admin", n: 1},
		{name: "Two", file: "a " + h + " rooms:read\nb " + h2 + " rooms:admin\n", n: 2},
		{name: "MissingScopes", file: "a " + h, err: "line 1: want 3 fields"},
		{name: "ExtraField", file: "a " + h + " rooms:read x", err: "want 3 fields"},
		{name: "PlainKey", file: "a rsk_abc rooms:read", err: "sha256: and 64 hex digits"},
		{name: "ShortHash", file: "a sha256:abcd rooms:read", err: "64 hex digits"},
		{name: "NotHex", file: "a sha256:" + strings.Repeat("zz", 32) + " rooms:read", err: "64 hex digits"},
		{name: "UnknownScope", file: "a " + h + " rooms:delete", err: `unknown scope "rooms:delete"`},
		{name: "ScopeTwice", file: "a " + h + " rooms:read,rooms:read", err: "given twice"},
		{name: "EmptyScope", file: "a " + h + " rooms:read,", err: `unknown scope ""`},
		{name: "BadID", file: "a:b " + h + " rooms:read", err: "must match"},
		{name: "DuplicateID", file: "a " + h + " rooms:read\na " + h2 + " rooms:read", err: `line 2: key id "a" given twice`},
		{name: "DuplicateHash", file: "a " + h + " rooms:read\nb " + h + " rooms:read", err: "line 2: the hash"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			keys, err := ParseAPIKeys([]byte(tc.file))
			switch {
			case tc.err != "":
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
			case err != nil:
				t.Fatal(err)
			case len(keys) != tc.n:
				t.Fatalf("%d keys, want %d", len(keys), tc.n)
			}
		})
	}
}

// A new key is prefixed, 256 random bits, and its line parses back to a
// record that finds it, and only it.
func TestNewAPIKeyRoundTrip(t *testing.T) {
	key, rec, err := NewAPIKey("gs-eu-1", rooms.ScopeRead|rooms.ScopeWrite)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(key, APIKeyPrefix) || len(key) != len(APIKeyPrefix)+43 {
		t.Fatalf("key %q: want rsk_ and 43 characters", key)
	}
	sum := sha256.Sum256([]byte(key))
	if want := "gs-eu-1 sha256:" + hex.EncodeToString(sum[:]) + " rooms:read,rooms:write"; rec.Line() != want {
		t.Fatalf("line %q, want %q", rec.Line(), want)
	}
	if strings.Contains(rec.Line(), key[len(APIKeyPrefix):]) {
		t.Fatal("the line holds the key")
	}
	keys, err := ParseAPIKeys([]byte(rec.Line()))
	if err != nil {
		t.Fatal(err)
	}
	set := newKeySet(keys)
	if k, ok := set.find(key); !ok || k.user() != (rooms.User{ID: "key:gs-eu-1", Name: "gs-eu-1", Server: true, Scopes: rooms.ScopeRead | rooms.ScopeWrite}) {
		t.Fatalf("find: %+v %v", k, ok)
	}
	other, _, _ := NewAPIKey("gs-eu-1", rooms.ScopeRead)
	for _, bad := range []string{other, key + "x", key[:len(key)-1], "", APIKeyPrefix} {
		if _, ok := set.find(bad); ok {
			t.Errorf("%q found", bad)
		}
	}
	for _, id := range []string{"", "a b", strings.Repeat("a", 65)} {
		if _, _, err := NewAPIKey(id, rooms.ScopeRead); err == nil {
			t.Errorf("id %q accepted", id)
		}
	}
	if _, _, err := NewAPIKey("a", 0); err == nil {
		t.Error("no scopes accepted")
	}
}

type keyMetrics struct{ loaded, failed int }

func (m *keyMetrics) APIKeysLoaded(n int)  { m.loaded = n }
func (m *keyMetrics) APIKeysReloadFailed() { m.failed++ }

// Reload puts a changed file in force, revoking what it dropped; a bad or
// missing file keeps the keys in force and is an error.
func TestAPIKeysReload(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys")
	k1, r1, _ := NewAPIKey("one", rooms.ScopeRead)
	k2, r2, _ := NewAPIKey("two", rooms.ScopeAdmin)
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(r1.Line() + "\n")
	m := &keyMetrics{}
	keys, err := LoadAPIKeys(path, nil, m)
	if err != nil {
		t.Fatal(err)
	}
	has := func(key string) bool { _, ok := keys.find(key); return ok }
	if !has(k1) || has(k2) || m.loaded != 1 {
		t.Fatalf("first load: one %v two %v, gauge %d", has(k1), has(k2), m.loaded)
	}
	if changed, err := keys.Reload(); changed || err != nil {
		t.Fatalf("unchanged file: changed %v, %v", changed, err)
	}
	write(r2.Line() + "\n") // one revoked, two added
	if changed, err := keys.Reload(); !changed || err != nil || has(k1) || !has(k2) {
		t.Fatalf("new file: changed %v, %v; one %v two %v", changed, err, has(k1), has(k2))
	}
	write(r2.Line() + "\nbroken line\n")
	if _, err := keys.Reload(); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("bad file: %v", err)
	}
	if !has(k2) {
		t.Fatal("a bad file dropped the keys in force")
	}
	os.Remove(path)
	if _, err := keys.Reload(); err == nil || !has(k2) {
		t.Fatalf("missing file: %v, two %v", err, has(k2))
	}
	if _, err := LoadAPIKeys(path, nil, nil); err == nil {
		t.Fatal("a missing file loaded at start")
	}
	var none *APIKeys
	if _, ok := none.find(k1); ok {
		t.Fatal("no keys file, key found")
	}
}

type watchMetrics struct{ loaded, failed atomic.Int64 }

func (m *watchMetrics) APIKeysLoaded(n int)  { m.loaded.Store(int64(n)) }
func (m *watchMetrics) APIKeysReloadFailed() { m.failed.Add(1) }

// Watch picks up changes by itself; a bad file is counted and the keys in
// force stay.
func TestAPIKeysWatch(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys")
	k1, r1, _ := NewAPIKey("one", rooms.ScopeRead)
	_, r2, _ := NewAPIKey("two", rooms.ScopeRead)
	os.WriteFile(path, []byte(r1.Line()), 0o600)
	m := &watchMetrics{}
	keys, err := LoadAPIKeys(path, slog.New(slog.DiscardHandler), m)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go keys.Watch(ctx, 10*time.Millisecond)
	os.WriteFile(path, []byte("nonsense"), 0o600)
	wait.Until(t, "the bad file counted", func() bool { return m.failed.Load() == 1 })
	if _, ok := keys.find(k1); !ok {
		t.Fatal("the bad file dropped the keys in force")
	}
	os.WriteFile(path, []byte(r1.Line()+"\n"+r2.Line()), 0o600)
	wait.Until(t, "the good file loaded", func() bool { return m.loaded.Load() == 2 })
}
