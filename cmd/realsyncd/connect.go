package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/store"
)

// Backoff of the first connection to Redis: the first retry after
// connectFirst, each next one twice as late, at most connectMax apart.
const (
	connectFirst = 100 * time.Millisecond
	connectMax   = 5 * time.Second
	// connectTimeout bounds one attempt.
	connectTimeout = 5 * time.Second
	// connectRemind: while the attempts keep failing the same way, the
	// failure is logged again this often.
	connectRemind = time.Minute
)

// errRedisSettings wraps what Redis answered to a connection's own
// settings (the URL's database number): no wait fixes it.
var errRedisSettings = errors.New("redis refused the connection's settings (REALSYNC_REDIS_URL)")

// connect runs st.Init until it succeeds or ctx ends: an instance started
// while Redis is down waits for it, serving /healthz and answering 503
// meanwhile. A failure is logged when it first happens, when its kind
// changes (unreachable, then a wrong password: failureKind) and once a
// minute while it lasts.
// A layout mismatch (another shard count or schema) and a refusal of the
// connection's own settings (errRedisSettings) are returned at once:
// configuration errors that waiting cannot fix. A wrong password or a
// missing ACL permission is waited out: either can be fixed in Redis.
func connect(ctx context.Context, st *store.Store, log *slog.Logger) error {
	delay, began := connectFirst, time.Now()
	var last string
	var logged time.Time
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
		case refusedSettings(err):
			return fmt.Errorf("%w: %v", errRedisSettings, err)
		case failureKind(err) != last || time.Since(logged) >= connectRemind:
			msg := "redis unreachable: not ready, retrying"
			if redisReply(err) {
				msg = "redis refused the connection: not ready, retrying"
			}
			log.Warn(msg, "err", err, "attempts", attempt, "maxDelay", connectMax)
			last, logged = failureKind(err), time.Now()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(delay):
		}
		delay = min(2*delay, connectMax)
	}
}

// failureKind is what connect's log tells apart: Redis' reply by its
// code (WRONGPASS, NOPERM, LOADING...), or "unreachable" for any failure
// to reach it, whose texts vary from one attempt to the next (a refused
// dial, a timeout, another seed of a Cluster: a reviewer's find, each
// logged as a change).
func failureKind(err error) string {
	if !redisReply(err) {
		return "unreachable"
	}
	code, _, _ := strings.Cut(err.Error(), " ")
	return code
}

// redisReply tells an error Redis answered from one of reaching it.
func redisReply(err error) bool {
	var re redis.Error
	return errors.As(err, &re)
}

// refusedSettings tells Redis' answer to the connection's own settings,
// the same at every attempt: a database number past the server's
// `databases` (SELECT). A client name Redis refuses never gets here:
// redisurl.Parse refuses it first.
func refusedSettings(err error) bool {
	msg := err.Error()
	return redisReply(err) && (strings.Contains(msg, "DB index is out of range") || strings.Contains(msg, "invalid DB index"))
}
