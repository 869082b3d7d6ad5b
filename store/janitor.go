package store

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/rooms"
)

// sweepBatch bounds the rooms one shard visit handles; the rest wait for
// the next tick.
const sweepBatch = 100

// RunJanitor visits, every interval until ctx ends, each shard whose
// janitor lease it wins (SET NX PX, so one instance per shard per
// interval), and there every room whose presence is due: leases of streams
// whose instance stopped renewing them lapse (player_disconnected), and
// players still disconnected after the grace are removed (player_left,
// reason disconnected). instance names the lease holder.
func (s *Store) RunJanitor(ctx context.Context, instance string, interval time.Duration, log *slog.Logger) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for shard := range s.shards {
			if _, err := s.Sweep(ctx, shard, instance, interval); err != nil && ctx.Err() == nil {
				log.Warn("janitor", "shard", shard, "err", err)
			}
		}
	}
}

// Sweep does one janitor visit of shard if instance wins its lease for
// lease; returns the number of players removed.
func (s *Store) Sweep(ctx context.Context, shard int, instance string, lease time.Duration) (int, error) {
	won, err := s.client.SetNX(ctx, s.keys.janitor(shard), instance, lease).Result()
	if err != nil || !won {
		return 0, wrap(err)
	}
	// Scores are Redis' clock in ms; an instance's clock is close enough to
	// pick the rooms, and the script decides with Redis' own.
	due, err := s.client.ZRangeByScore(ctx, s.keys.due(shard), &redis.ZRangeBy{
		Min: "-inf", Max: strconv.FormatInt(time.Now().UnixMilli(), 10), Count: sweepBatch}).Result()
	if err != nil {
		return 0, wrap(err)
	}
	removed := 0
	for _, id := range due {
		n, err := s.sweepRoom(ctx, shard, id)
		if err != nil {
			return removed, err
		}
		removed += n
	}
	return removed, nil
}

func (s *Store) sweepRoom(ctx context.Context, shard int, id string) (int, error) {
	_, keys, err := s.indexedKeys(ctx, id)
	if errors.Is(err, rooms.ErrRoomNotFound) {
		return 0, wrap(s.client.ZRem(ctx, s.keys.due(shard), id).Err())
	}
	if err != nil {
		return 0, err
	}
	args := append(s.common(shard, id), s.grace.Milliseconds())
	res, err := presenceSweep.Run(ctx, s.client, keys, args...).Result()
	if err != nil {
		return 0, wrap(err)
	}
	rest, err := replyStatus(res)
	if err != nil {
		return 0, err
	}
	return int(toInt64(rest[0])), nil
}
