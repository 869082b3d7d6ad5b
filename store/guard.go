package store

import (
	"context"
	"errors"
	"log/slog"
	"sync"
)

// guard is what the janitor's checks of Redis itself (not of the rooms)
// last found: the layout record (guardLayout). Safe for concurrent use.
type guard struct {
	mu        sync.Mutex
	layoutErr error // the meta hash disagrees with this store: ErrLayout
}

// Ready reports whether this instance should get traffic: the store's
// layout agrees with the one recorded in Redis (as the janitor last found
// it, see guardLayout), and Redis answers (Ping). Errors: ErrLayout, or
// Ping's.
func (s *Store) Ready(ctx context.Context) error {
	s.guard.mu.Lock()
	err := s.guard.layoutErr
	s.guard.mu.Unlock()
	if err != nil {
		return err
	}
	return s.Ping(ctx)
}

// guardLayout re-asserts the layout record on every janitor tick: the
// shard count and schema version that Init records (HSETNX) at an
// instance's start would otherwise be gone for good once Redis lost its
// data (a restart without persistence, a FLUSHALL), and an instance
// started then with another REALSYNC_SHARDS would be accepted and place
// rooms where the others never look. A record restored is logged at warn
// (Redis lost the data it had). A record that disagrees with this store
// (another instance wrote its own first, or an operator changed it) is
// logged at error once, and makes Ready fail with ErrLayout until the
// record agrees again: the instance leaves the load balancer's rotation
// rather than serve rooms laid out otherwise than the record says; it
// goes on answering the requests that still reach it. Redis unreachable
// changes nothing: the next tick checks again.
func (s *Store) guardLayout(ctx context.Context, log *slog.Logger) {
	restored, err := s.checkMeta(ctx)
	if err != nil && !errors.Is(err, ErrLayout) {
		return
	}
	if restored {
		log.Warn("janitor: the layout record was missing (Redis lost its data?), restored from this instance's settings",
			"key", s.keys.Meta(), "shards", s.shards, "schema", SchemaVersion)
	}
	s.guard.mu.Lock()
	before := s.guard.layoutErr
	s.guard.layoutErr = err
	s.guard.mu.Unlock()
	switch {
	case err != nil && (before == nil || before.Error() != err.Error()):
		log.Error("janitor: the layout recorded in Redis disagrees with this instance's; /readyz answers 503 until it agrees",
			"key", s.keys.Meta(), "err", err)
	case err == nil && before != nil:
		log.Info("janitor: the layout recorded in Redis agrees with this instance's again", "key", s.keys.Meta())
	}
}
