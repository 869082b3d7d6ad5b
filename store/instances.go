package store

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/internal/fleet"

	"github.com/realsync/realsync/store/internal/redisx"
)

// The instance registry (package fleet) on Redis: keys in
// instancekeys.go, scripts lua/instance_*.lua and lua/janitor_release.lua.
// A registration lasts the presence TTL, so an instance's registration and
// its streams' presence leases, renewed at the same pace, lapse together.

var _ fleet.Registry = (*Store)(nil)

// reapBatch bounds the ids one reap script removes.
const reapBatch = 100

// HeartbeatInstance implements fleet.Registry: one script registers or
// renews the instance for the presence TTL, by Redis' clock.
func (s *Store) HeartbeatInstance(ctx context.Context, in fleet.Instance) (bool, error) {
	rest, err := s.result(ctx, heartbeatCall{live: s.keys.liveInstances(), hash: s.keys.instance(in.ID),
		in: in, ttlMs: s.presenceTTL.Milliseconds()})
	if err != nil {
		return false, err
	}
	return toInt64(rest[0]) == 1, nil
}

// DeregisterInstance implements fleet.Registry: the registration goes in
// one transaction, then the janitor leases id holds.
func (s *Store) DeregisterInstance(ctx context.Context, id string) error {
	_, err := s.client.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.ZRem(ctx, s.keys.liveInstances(), id)
		p.Del(ctx, s.keys.instance(id))
		return nil
	})
	if err != nil {
		return redisx.Wrap(err)
	}
	return s.releaseJanitorLeases(ctx, []string{id})
}

// ReapInstances implements fleet.Registry. The lapsed instances' janitor
// leases are released (one script per shard, only when some lapsed). Their
// presence leases are not touched: they lapse at the same time as the
// registration (same TTL, renewed at the same pace) and the janitor's
// presence sweep handles them as any lapsed lease.
func (s *Store) ReapInstances(ctx context.Context) ([]string, error) {
	var reaped []string
	for {
		rest, err := s.result(ctx, reapCall{live: s.keys.liveInstances(), batch: reapBatch})
		if err != nil {
			return reaped, err
		}
		ids := strs(rest[0])
		reaped = append(reaped, ids...)
		if len(ids) < reapBatch {
			break
		}
	}
	if len(reaped) == 0 {
		return nil, nil
	}
	return reaped, s.releaseJanitorLeases(ctx, reaped)
}

// releaseJanitorLeases deletes every shard's janitor lease held by one of
// ids: one pipelined read of every lease, then the compare-and-delete
// script only on the shards one of ids held when read (it checks again).
func (s *Store) releaseJanitorLeases(ctx context.Context, ids []string) error {
	holders := make([]*redis.StringCmd, s.shards)
	if _, err := s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for shard := range s.shards {
			holders[shard] = p.Get(ctx, s.keys.janitor(shard))
		}
		return nil
	}); err != nil && !errors.Is(err, redis.Nil) {
		return redisx.Wrap(err)
	}
	var errs []error
	for shard, h := range holders {
		if !slices.Contains(ids, h.Val()) {
			continue
		}
		if _, err := s.result(ctx, leaseReleaseCall{lease: s.keys.janitor(shard), ids: ids}); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Instances implements fleet.Registry: after reaping, the registered ids
// and, in one pipeline, their hashes; a hash that is gone expired with its
// registration.
func (s *Store) Instances(ctx context.Context) ([]fleet.Instance, error) {
	if _, err := s.ReapInstances(ctx); err != nil {
		return nil, err
	}
	ids, err := s.client.ZRange(ctx, s.keys.liveInstances(), 0, -1).Result()
	if err != nil {
		return nil, redisx.Wrap(err)
	}
	cmds := make([]*redis.MapStringStringCmd, len(ids))
	if _, err := s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			cmds[i] = p.HGetAll(ctx, s.keys.instance(id))
		}
		return nil
	}); err != nil {
		return nil, redisx.Wrap(err)
	}
	out := make([]fleet.Instance, 0, len(ids))
	for _, c := range cmds {
		if h := c.Val(); h["id"] != "" {
			out = append(out, decodeInstance(h))
		}
	}
	slices.SortFunc(out, func(a, b fleet.Instance) int {
		return cmp.Or(a.StartedAt.Compare(b.StartedAt), cmp.Compare(a.ID, b.ID))
	})
	return out, nil
}

func decodeInstance(h map[string]string) fleet.Instance {
	ms := func(f string) time.Time {
		n, _ := strconv.ParseInt(h[f], 10, 64)
		return time.UnixMilli(n).UTC()
	}
	streams, _ := strconv.Atoi(h["streams"])
	return fleet.Instance{ID: h["id"], Addr: h["addr"], Version: h["version"],
		StartedAt: ms("startedAt"), HeartbeatAt: ms("heartbeatAt"), Streams: streams}
}

// strs reads an array reply of strings.
func strs(v any) []string {
	arr, _ := v.([]any)
	out := make([]string, 0, len(arr))
	for _, x := range arr {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}
