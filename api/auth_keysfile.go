package api

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"
)

// KeysFile keeps an Auth's studio keys in step with a JWKS file.
type KeysFile struct {
	// Path is the JWKS file (REALSYNC_JWT_KEYS_FILE).
	Path string
	// Auth receives the keys.
	Auth *Auth
	// Interval between checks of the file's modification time and size;
	// default 2s.
	Interval time.Duration
	Log      *slog.Logger
	// Reloaded, when set, counts each load: ok true when the keys were
	// replaced, false when the file was refused (realsync_jwt_keys_reloads_total).
	Reloaded func(ok bool)

	mod  time.Time
	size int64
}

// Load reads the file and installs its keys; an error leaves the keys as
// they were. At start, an error stops the server: a typo in the file must
// not leave every studio token refused.
func (f *KeysFile) Load() error {
	st, err := os.Stat(f.Path)
	if err != nil {
		f.mod, f.size = time.Time{}, -1 // missing: reported once
		return f.loaded(fmt.Errorf("%w: %v", errKeys, err))
	}
	data, err := os.ReadFile(f.Path)
	if err != nil {
		return f.loaded(fmt.Errorf("%w: %v", errKeys, err))
	}
	// Remember what was read even when it is refused, so a bad file is
	// reported once, not at every check.
	f.mod, f.size = st.ModTime(), st.Size()
	keys, err := ParseJWKS(data)
	if err != nil {
		return f.loaded(err)
	}
	f.Auth.SetKeys(keys)
	return f.loaded(nil)
}

func (f *KeysFile) loaded(err error) error {
	if f.Reloaded != nil {
		f.Reloaded(err == nil)
	}
	return err
}

// Watch checks the file every Interval until ctx ends and reloads it when
// its modification time or size changed (a rename over it included, the
// way configuration managers and Kubernetes update files). A file that is
// refused (unreadable, not JSON, a key against the rules of ParseJWKS)
// keeps the keys in use and logs an error; fixing the file loads it.
// Call Load first.
func (f *KeysFile) Watch(ctx context.Context) {
	d := f.Interval
	if d <= 0 {
		d = 2 * time.Second
	}
	log := f.Log
	if log == nil {
		log = slog.Default()
	}
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		st, err := os.Stat(f.Path)
		if err == nil && st.ModTime().Equal(f.mod) && st.Size() == f.size || err != nil && f.size == -1 {
			continue // unchanged, or still missing (already reported)
		}
		if err := f.Load(); err != nil {
			log.Error("JWT keys file refused; the keys loaded before stay in use", "path", f.Path, "err", err)
			continue
		}
		log.Info("JWT keys reloaded", "path", f.Path, "keys", len(f.Auth.Keys()))
	}
}
