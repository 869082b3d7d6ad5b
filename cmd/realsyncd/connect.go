package main

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/realsync/realsync/store"
)

// Backoff of the first connection to Redis: the first retry after
// connectFirst, each next one twice as late, at most connectMax apart.
const (
	connectFirst = 100 * time.Millisecond
	connectMax   = 5 * time.Second
	// connectTimeout bounds one attempt.
	connectTimeout = 5 * time.Second
)

// connect runs st.Init until it succeeds or ctx ends: an instance started
// while Redis is down waits for it, serving /healthz and answering 503
// meanwhile. A layout mismatch (another shard count or schema) is returned
// at once: it is a configuration error that waiting cannot fix.
func connect(ctx context.Context, st *store.Store, log *slog.Logger) error {
	delay, began := connectFirst, time.Now()
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, connectTimeout)
		err := st.Init(actx)
		cancel()
		switch {
		case err == nil:
			log.Info("store connected", "attempts", attempt, "waited", time.Since(began).Round(time.Millisecond))
			return nil
		case errors.Is(err, store.ErrLayout), ctx.Err() != nil:
			return err
		case attempt == 1:
			log.Warn("redis unreachable: not ready, retrying", "err", err, "maxDelay", connectMax)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(delay):
		}
		delay = min(2*delay, connectMax)
	}
}
