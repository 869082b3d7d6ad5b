package api

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/realsync/realsync/internal/testlog"
	"github.com/realsync/realsync/internal/wait"
)

// The keys file is reloaded when it changes (rotation: a new kid added,
// the old one removed); a bad file keeps the keys in use, is counted and
// logged once, and a fixed file loads again.
func TestKeysFileReload(t *testing.T) {
	s := testStudio(t)
	now := time.Now()
	a := &Auth{Secret: []byte("server-secret"), Now: func() time.Time { return now }}
	path := filepath.Join(t.TempDir(), "jwks.json")
	write := func(b []byte) {
		t.Helper()
		// via a rename, as configuration managers and Kubernetes do
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, b, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	results := map[bool]int{}
	logs := &testlog.Buffer{}
	f := &KeysFile{Path: path, Auth: a, Interval: 10 * time.Millisecond, Log: slog.New(slog.NewJSONHandler(logs, nil)),
		Reloaded: func(ok bool) { mu.Lock(); results[ok]++; mu.Unlock() }}
	count := func(ok bool) int { mu.Lock(); defer mu.Unlock(); return results[ok] }

	if err := f.Load(); err == nil {
		t.Fatal("a missing file loaded")
	}
	write(jwks(jwk(t, s.rsa.Public(), "old", "RS256")))
	if err := f.Load(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { f.Watch(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })

	oldTok := sign(t, jwt.SigningMethodRS256, s.rsa, "old", rc(now, time.Hour))
	newTok := sign(t, jwt.SigningMethodES256, s.ec, "new", rc(now, time.Hour))
	verifies := func(tok string) bool { _, err := a.Verify(tok); return err == nil }
	if !verifies(oldTok) || verifies(newTok) {
		t.Fatal("the first file's keys")
	}
	write(jwks(jwk(t, s.rsa.Public(), "old", "RS256"), jwk(t, s.ec.Public(), "new", "")))
	wait.Until(t, "the new key", func() bool { return verifies(newTok) })
	if !verifies(oldTok) {
		t.Fatal("the old key went before it was removed")
	}
	write(jwks(jwk(t, s.ec.Public(), "new", "")))
	wait.Until(t, "the old key's removal", func() bool { return !verifies(oldTok) })

	okBefore := count(true)
	write([]byte(`{"keys":[{"kty":"RSA","kid":"broken"}]}`))
	wait.Until(t, "the bad file counted", func() bool { return count(false) >= 2 }) // the missing file, then this one
	time.Sleep(50 * time.Millisecond)                                               // several checks of the same bad file
	if count(false) != 2 || count(true) != okBefore {
		t.Errorf("reloads ok %d error %d, want %d and 2: a bad file is counted once", count(true), count(false), okBefore)
	}
	if !verifies(newTok) {
		t.Error("a bad file dropped the keys in use")
	}
	if n := strings.Count(logs.String(), "JWT keys file refused"); n != 1 {
		t.Errorf("%d error lines for one bad file", n)
	}
	write(jwks(jwk(t, s.ed.Public(), "fixed", "")))
	edTok := sign(t, jwt.SigningMethodEdDSA, s.ed, "fixed", rc(now, time.Hour))
	wait.Until(t, "the fixed file", func() bool { return verifies(edTok) })
	if _, err := a.Verify(newTok); !errors.Is(err, errUnauthenticated) {
		t.Errorf("a key gone with the fixed file: %v", err)
	}
}
