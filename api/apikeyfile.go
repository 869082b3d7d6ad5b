package api

import (
	"context"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/realsync/realsync/internal/configfile"
)

// APIKeysReload is how often an APIKeys watching its file reads it again.
const APIKeysReload = 5 * time.Second

// APIKeysMetrics observes the keys file; internal/metrics implements it.
type APIKeysMetrics interface {
	// APIKeysLoaded says the file was read and n keys are in force.
	APIKeysLoaded(n int)
	// APIKeysReloadFailed counts a changed file that could not be used
	// (the keys in force stay).
	APIKeysReloadFailed()
}

type noKeyMetrics struct{}

func (noKeyMetrics) APIKeysLoaded(int)    {}
func (noKeyMetrics) APIKeysReloadFailed() {}

// APIKeys holds the server credentials of a keys file (see ParseAPIKeys)
// and reloads them when the file changes. Safe for concurrent use; a nil
// *APIKeys knows no key.
type APIKeys struct {
	path    string
	log     *slog.Logger
	metrics APIKeysMetrics

	set atomic.Pointer[keySet]
	mu  sync.Mutex        // serializes reloads
	sum [sha256.Size]byte // of the file content in force
}

// LoadAPIKeys reads the keys file at path; an unreadable or bad file is an
// error (at start, a configuration error). log and m may be nil.
func LoadAPIKeys(path string, log *slog.Logger, m APIKeysMetrics) (*APIKeys, error) {
	if log == nil {
		log = slog.Default()
	}
	if m == nil {
		m = noKeyMetrics{}
	}
	k := &APIKeys{path: path, log: log, metrics: m}
	if _, err := k.Reload(); err != nil {
		return nil, err
	}
	return k, nil
}

// Reload reads the file again and, when its content changed, puts its keys
// in force at once: a key gone from the file is refused from the next
// request on. It reports whether the keys changed. A file that cannot be
// read or parsed leaves the keys in force as they were and is an error.
func (k *APIKeys) Reload() (bool, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	data, err := configfile.Read(k.path)
	if err != nil {
		return false, fmt.Errorf("API keys file: %w", err)
	}
	return k.install(data)
}

// install puts the keys of data in force when they differ from those in
// force (reporting whether they did), or refuses data; k.mu held.
func (k *APIKeys) install(data []byte) (bool, error) {
	sum := sha256.Sum256(data)
	if k.set.Load() != nil && sum == k.sum {
		return false, nil
	}
	keys, err := ParseAPIKeys(data)
	if err != nil {
		return false, fmt.Errorf("API keys file %s: %w", k.path, err)
	}
	set := newKeySet(keys)
	k.set.Store(&set)
	k.sum = sum
	k.metrics.APIKeysLoaded(len(keys))
	return true, nil
}

// Watch reloads the file every interval until ctx ends
// (configfile.Watch). A failed reload is logged and counted once for as
// long as it fails the same way; the keys in force stay until a good file
// replaces them.
func (k *APIKeys) Watch(ctx context.Context, interval time.Duration) {
	configfile.Watch(ctx, k.path, interval, nil, func(data []byte) error {
		k.mu.Lock()
		changed, err := k.install(data)
		k.mu.Unlock()
		if changed {
			k.log.Info("API keys reloaded", "keys", len(*k.set.Load()))
		}
		return err
	}, func(err error) {
		k.metrics.APIKeysReloadFailed()
		k.log.Error("API keys file not reloaded; the keys in force stay", "err", err)
	})
}

// revoked returns a channel that fires, with when it found the key gone,
// once the key named id is no longer in force (its line removed from the
// file; looked at every second), and never after ctx ends: an open stream
// of a revoked key ends with it (its token_expiring says then).
func (k *APIKeys) revoked(ctx context.Context, key APIKey) <-chan time.Time {
	fire := make(chan time.Time, 1)
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-t.C:
				if !k.holds(key) {
					fire <- now
					return
				}
			}
		}
	}()
	return fire
}

// holds reports whether key is in force as it was: its hash, under its
// id, with every scope it had. A line that keeps the id but gives it
// another hash (a key replaced in place) or fewer scopes revokes it as a
// line removed does: a stream the old key opened read every event of its
// room after such a rotation, private messages included (a security
// tester's find: only a removed id was seen).
func (k *APIKeys) holds(key APIKey) bool {
	set := k.set.Load()
	if set == nil {
		return false
	}
	now, ok := (*set)[key.Hash]
	return ok && now.ID == key.ID && now.Scopes&key.Scopes == key.Scopes
}

// find returns the key in force whose hash is key's.
func (k *APIKeys) find(key string) (APIKey, bool) {
	if k == nil {
		return APIKey{}, false
	}
	set := k.set.Load()
	if set == nil {
		return APIKey{}, false
	}
	return set.find(key)
}
