package store

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/rooms"

	"github.com/realsync/realsync/store/internal/layout"
	"github.com/realsync/realsync/store/internal/redisx"
)

// sweepBatch is how many rooms of a schedule one read takes: a visit
// takes the due rooms' presence batch after batch (sweepPresence), their
// lifecycle one batch a visit (the rest wait for the next tick).
const sweepBatch = 100

// Report counts what a janitor visit did, by kind: "presence_disconnect"
// (a dead instance's lease lapsed), "presence_debounced" (a player's last
// stream closed and none opened within the debounce), "presence_removal" (a player removed
// after the grace), "presence_unconnected" (a player removed for opening no
// stream within the connect grace), "expired", "finished", "lifetime" (rooms closed),
// "trimmed" (idle logs dropped), "repair_<what>" (index drift repaired).
type Report map[string]int

func (r Report) add(kind string, n int) {
	if n > 0 {
		r[kind] += n
	}
}

// RunJanitor visits, every interval until ctx ends, each shard whose
// janitor lease it wins (SET NX PX, so one instance per shard per
// interval): rooms whose presence is due (leases of streams whose instance
// stopped renewing them lapse: player_disconnected; players still
// disconnected after the grace are removed: player_left, reason
// disconnected), rooms whose lifecycle check is due (closed when idle,
// finished or too old; idle logs dropped), the holdings those and other
// room scripts left stale (store/holdings, unheld.go), and a bounded slice of the
// repair walk. Each tick first re-asserts the layout record (guardLayout:
// restored after Redis lost its data; a disagreeing one makes Ready fail),
// has the masters' maxmemory-policy read (guardEviction, beside the tick:
// an evicting one is logged and reported to GuardMetrics) and rereads the stripe configurations recorded by every instance
// (RefreshStripes). instance names the lease holder. Every action is reported
// to Config.JanitorActions. It returns once ctx ended and the policy check
// it started has ended too (within guardEvictionTimeout or a reply
// timeout), so the store may be closed then.
func (s *Store) RunJanitor(ctx context.Context, instance string, interval time.Duration, log *slog.Logger) {
	t := time.NewTicker(interval)
	defer t.Stop()
	var checks sync.WaitGroup
	defer checks.Wait()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		s.guardLayout(ctx, log)
		s.startGuardEviction(ctx, &checks, log)
		if err := s.RefreshStripes(ctx); err != nil && ctx.Err() == nil {
			log.Warn("janitor: stripe configurations", "err", err)
		}
		for shard := range s.shards {
			rep, err := s.Sweep(ctx, shard, instance, interval)
			if err != nil && ctx.Err() == nil {
				log.Warn("janitor", "shard", shard, "err", err)
			}
			if s.janitorActions != nil {
				for kind, n := range rep {
					s.janitorActions(kind, n)
				}
			}
		}
	}
}

// Sweep does one janitor visit of shard if instance wins its lease for
// lease, and reports what it did (also when it stops at an error).
func (s *Store) Sweep(ctx context.Context, shard int, instance string, lease time.Duration) (Report, error) {
	rep := Report{}
	// a script (not SET NX), so that a full Redis lets the visit that
	// gives memory back take its lease (janitor_lease.lua)
	res, err := s.result(ctx, leaseTakeCall{lease: s.keys.Janitor(shard), schedule: s.keys.Due(shard), instance: instance, ttl: lease})
	if err != nil || layout.ToInt64(res[0]) != 1 {
		return rep, err
	}
	// a dead instance's rooms, then its users, batch after batch
	// (thousands), the rooms within a quarter of the lease this visit
	// holds, the users within half of it from their start, so neither
	// crowds out the other (each at least one batch)
	if err := s.sweepPresence(ctx, shard, rep, time.Now().Add(lease/4)); err != nil {
		return rep, err
	}
	if err := s.sweepLifecycle(ctx, shard, rep); err != nil {
		return rep, err
	}
	lapsed, err := s.sess.Sweep(ctx, shard, time.Now().Add(lease/2))
	rep.add("session_lapsed", lapsed)
	if err != nil {
		return rep, err
	}
	if err := s.held.Sweep(ctx, shard); err != nil {
		return rep, err
	}
	return rep, s.repair(ctx, shard, rep)
}

// due lists up to sweepBatch rooms of the schedule key whose time has come.
// Scores are Redis' clock in ms; an instance's clock is close enough to
// pick the rooms, and the scripts decide with Redis' own.
func (s *Store) due(ctx context.Context, key string) ([]string, error) {
	ids, err := s.client.ZRangeByScore(ctx, key, &redis.ZRangeBy{
		Min: "-inf", Max: strconv.FormatInt(time.Now().UnixMilli(), 10), Count: sweepBatch}).Result()
	return ids, redisx.Wrap(err)
}

// sweepPresence visits the shard's rooms whose presence is due, a batch
// at a time while batches come full, until until. A visit reschedules its
// room past what it swept, so a room due again within the same call (the
// instance's clock ahead of Redis', by which the script found nothing
// due) means the rest is not due yet: the call ends there.
func (s *Store) sweepPresence(ctx context.Context, shard int, rep Report, until time.Time) error {
	seen := map[string]bool{}
	for {
		due, err := s.due(ctx, s.keys.Due(shard))
		if err != nil {
			return err
		}
		for _, id := range due {
			if seen[id] {
				return nil
			}
			seen[id] = true
			if err := s.sweepRoom(ctx, shard, id, rep); err != nil {
				return err
			}
		}
		if len(due) < sweepBatch || !time.Now().Before(until) {
			return nil
		}
	}
}

func (s *Store) sweepRoom(ctx context.Context, shard int, id string, rep Report) error {
	_, scope, err := s.scopeOf(ctx, id)
	if errors.Is(err, rooms.ErrRoomNotFound) {
		return redisx.Wrap(s.client.ZRem(ctx, s.keys.Due(shard), id).Err())
	}
	if err != nil {
		return err
	}
	rest, err := s.result(ctx, sweepCall{scope, s.grace.Milliseconds()})
	if err != nil {
		return err
	}
	rep.add("presence_removal", int(layout.ToInt64(rest[0])))
	rep.add("presence_disconnect", int(layout.ToInt64(rest[1])))
	rep.add("presence_debounced", int(layout.ToInt64(rest[2])))
	rep.add("presence_unconnected", int(layout.ToInt64(rest[3])))
	return nil
}

func (s *Store) sweepLifecycle(ctx context.Context, shard int, rep Report) error {
	due, err := s.due(ctx, s.keys.RoomsDue(shard))
	if err != nil {
		return err
	}
	for _, id := range due {
		action, err := s.lifecycleRoom(ctx, shard, id)
		if errors.Is(err, rooms.ErrRoomNotFound) {
			if err := s.client.ZRem(ctx, s.keys.RoomsDue(shard), id).Err(); err != nil {
				return redisx.Wrap(err)
			}
			continue
		}
		if err != nil {
			return err
		}
		if action != "none" && action != "gone" {
			rep.add(action, 1)
		}
	}
	return nil
}
