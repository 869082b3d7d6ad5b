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
	"github.com/realsync/realsync/store/internal/roomlua"
	"github.com/realsync/realsync/store/janitor"
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
// "trimmed" (idle logs dropped), "session_lapsed" (store/sessions),
// "repair_<what>" (index drift repaired).
type Report = janitor.Report

// newJanitor is the store's janitor (store/janitor): its tick guards Redis
// and rereads the stripes, its visits run the store's tasks in order.
func (s *Store) newJanitor() *janitor.Janitor {
	return janitor.New(janitor.Config{Base: s.base, Lease: s.keys.Janitor, Schedule: s.keys.Due,
		Tick: s.janitorTick, Actions: s.janitorActions,
		// the instances that share the shards' visits (s.fleet is set
		// once the janitor is made)
		Peers: func(ctx context.Context) (int, error) { return s.fleet.Live(ctx) },
		Tasks: []janitor.Task{
			// a dead instance's rooms, then its users, batch after batch
			// (thousands), the rooms within a quarter of the lease the
			// visit holds, the users within half of it from their start,
			// so neither crowds out the other (each at least one batch)
			{Due: s.keys.Due, Run: func(ctx context.Context, shard int, lease time.Duration, rep Report) error {
				return s.sweepPresence(ctx, shard, rep, time.Now().Add(lease/4))
			}},
			{Due: s.keys.RoomsDue, Run: func(ctx context.Context, shard int, _ time.Duration, rep Report) error {
				return s.sweepLifecycle(ctx, shard, rep)
			}},
			{Due: s.sess.OnlineKey, Run: func(ctx context.Context, shard int, lease time.Duration, rep Report) error {
				lapsed, err := s.sess.Sweep(ctx, shard, time.Now().Add(lease/2))
				rep.Add("session_lapsed", lapsed)
				return err
			}},
			{Due: s.keys.Unheld, List: true, Run: func(ctx context.Context, shard int, _ time.Duration, _ Report) error {
				return s.held.Sweep(ctx, shard)
			}},
			{Run: func(ctx context.Context, shard int, _ time.Duration, rep Report) error {
				return s.repairs.Step(ctx, shard, rep)
			}},
		}})
}

// RunJanitor visits, every interval until ctx ends, each shard whose
// janitor lease it wins (so one instance per shard per interval;
// store/janitor): rooms whose presence is due (leases of streams whose instance
// stopped renewing them lapse: player_disconnected; players still
// disconnected after the grace are removed: player_left, reason
// disconnected), rooms whose lifecycle check is due (closed when idle,
// finished or too old; idle logs dropped), the holdings those and other
// room scripts left stale (store/holdings, unheld.go), and a bounded slice of the
// repair walk. Each tick, beside its visits, re-asserts the layout record (guardLayout:
// restored after Redis lost its data; a disagreeing one makes Ready fail),
// has the masters' maxmemory-policy read (guardEviction, beside the tick:
// an evicting one is logged and reported to GuardMetrics) and rereads the stripe configurations recorded by every instance
// (RefreshStripes). instance names the lease holder. Every action is reported
// to Config.JanitorActions. It returns once ctx ended and the visits, the
// ticks and the policy checks they started have ended too (each within
// its calls' deadlines, a policy check within guardEvictionTimeout), so
// the store may be closed then.
func (s *Store) RunJanitor(ctx context.Context, instance string, interval time.Duration, log *slog.Logger) {
	s.janitor.Run(ctx, instance, interval, log)
}

// janitorTick is what each of the janitor's rounds does first.
func (s *Store) janitorTick(ctx context.Context, checks *sync.WaitGroup, log *slog.Logger) {
	s.guardLayout(ctx, log)
	s.startGuardEviction(ctx, checks, log)
	if err := s.RefreshStripes(ctx); err != nil && ctx.Err() == nil {
		log.Warn("janitor: stripe configurations", "err", err)
	}
}

// Sweep does one janitor visit of shard if instance wins its lease for
// lease, and reports what it did (also when it stops at an error).
func (s *Store) Sweep(ctx context.Context, shard int, instance string, lease time.Duration) (Report, error) {
	return s.janitor.Visit(ctx, shard, instance, lease)
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
	rest, err := s.result(ctx, roomlua.SweepCall{Scope: scope, GraceMs: s.grace.Milliseconds()})
	if err != nil {
		return err
	}
	rep.Add("presence_removal", int(layout.ToInt64(rest[0])))
	rep.Add("presence_disconnect", int(layout.ToInt64(rest[1])))
	rep.Add("presence_debounced", int(layout.ToInt64(rest[2])))
	rep.Add("presence_unconnected", int(layout.ToInt64(rest[3])))
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
			rep.Add(action, 1)
		}
	}
	return nil
}
