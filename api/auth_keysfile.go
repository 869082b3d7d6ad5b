package api

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/realsync/realsync/internal/configfile"
)

// keysFileInterval is how often a KeysFile reads its file by default: a
// removed key stops working within it.
const keysFileInterval = 2 * time.Second

// KeysFile keeps an Auth's studio keys in step with a JWKS file.
type KeysFile struct {
	// Path is the JWKS file (REALSYNC_JWT_KEYS_FILE).
	Path string
	// Auth receives the keys.
	Auth *Auth
	// Interval between reads of the file; keysFileInterval when 0.
	Interval time.Duration
	Log      *slog.Logger
	// Reloaded, when set, counts each load: ok true when the keys were
	// replaced, false when the file was refused (realsync_jwt_keys_reloads_total).
	Reloaded func(ok bool)

	last []byte // the content last read (Load)
}

// Load reads the file and installs its keys; an error leaves the keys as
// they were. At start, an error stops the server: a typo in the file must
// not leave every studio token refused.
func (f *KeysFile) Load() error {
	data, err := configfile.Read(f.Path)
	if err != nil {
		return f.loaded(fmt.Errorf("%w: %v", errKeys, err))
	}
	f.last = data
	return f.loaded(f.install(data))
}

// install puts the keys of JWKS data in force, or refuses data.
func (f *KeysFile) install(data []byte) error {
	keys, err := ParseJWKS(data)
	if err != nil {
		return err
	}
	f.Auth.SetKeys(keys)
	return nil
}

func (f *KeysFile) loaded(err error) error {
	if f.Reloaded != nil {
		f.Reloaded(err == nil)
	}
	return err
}

// Watch reads the file every Interval until ctx ends and reloads it when
// its content changed (configfile.Watch; a JWKS file is a few KiB). A
// file that is refused (unreadable, not JSON, a key against the rules of
// ParseJWKS) keeps the keys in use and logs one error; fixing the file
// loads it. Call Load first.
func (f *KeysFile) Watch(ctx context.Context) {
	d := f.Interval
	if d <= 0 {
		d = keysFileInterval
	}
	log := f.Log
	if log == nil {
		log = slog.Default()
	}
	configfile.Watch(ctx, f.Path, d, f.last, func(data []byte) error {
		if err := f.install(data); err != nil {
			return err
		}
		f.loaded(nil)
		log.Info("JWT keys reloaded", "path", f.Path, "keys", len(f.Auth.Keys()))
		return nil
	}, func(err error) {
		f.loaded(err) //nolint:errcheck // counted, and logged here
		log.Error("JWT keys file refused; the keys loaded before stay in use", "path", f.Path, "err", err)
	})
}
