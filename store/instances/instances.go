// Package instances is the instance registry (package fleet) on Redis.
// Its keys share one hash tag of their own, "{<prefix>:instances}", apart
// from the room shards, so one script registers, renews or reaps an
// instance atomically on a Cluster too:
//   - live: zset instance id → expiry of its registration (ms, Redis clock);
//   - i:<id>: the instance's hash (lua/instance_heartbeat.lua names its
//     fields), expiring with its registration.
//
// A registration lasts the presence TTL, so an instance's registration and
// its streams' presence leases, renewed at the same pace, lapse together.
// What a lapsed instance held elsewhere (the shards' janitor leases) is the
// root store's: the registry hands the reaped ids to its Release.
package instances

import (
	"cmp"
	"context"
	_ "embed"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/internal/fleet"
	"github.com/realsync/realsync/store/internal/redisx"
)

// reapBatch bounds the ids one reap script removes.
const reapBatch = 100

// Registry implements fleet.Registry. Safe for concurrent use.
type Registry struct {
	b   *redisx.Base
	ttl time.Duration
	// release frees what the given (deregistered or lapsed) instances
	// held outside the registry.
	release func(ctx context.Context, ids []string) error
}

var _ fleet.Registry = (*Registry)(nil)

// New returns the registry of b's deployment: registrations last ttl (the
// presence TTL); release is called with every id that leaves it.
func New(b *redisx.Base, ttl time.Duration, release func(ctx context.Context, ids []string) error) *Registry {
	return &Registry{b: b, ttl: ttl, release: release}
}

func (r *Registry) tag() string               { return "{" + r.b.Prefix + ":instances}" }
func (r *Registry) live() string              { return r.tag() + ":live" }
func (r *Registry) instance(id string) string { return r.tag() + ":i:" + id }

// Pattern matches every key of the registry (SCAN MATCH).
func (r *Registry) Pattern() string { return r.tag() + "*" }

// HeartbeatInstance implements fleet.Registry: one script registers or
// renews the instance for the TTL, by Redis' clock; true when it was still
// registered.
func (r *Registry) HeartbeatInstance(ctx context.Context, in fleet.Instance) (bool, error) {
	rest, err := r.b.RunOK(ctx, heartbeatCall{live: r.live(), hash: r.instance(in.ID), in: in, ttlMs: r.ttl.Milliseconds()})
	if err != nil {
		return false, err
	}
	n, _ := rest[0].(int64)
	return n == 1, nil
}

// DeregisterInstance implements fleet.Registry: the registration goes in
// one transaction, then what id held is released.
func (r *Registry) DeregisterInstance(ctx context.Context, id string) error {
	_, err := r.b.Client.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.ZRem(ctx, r.live(), id)
		p.Del(ctx, r.instance(id))
		return nil
	})
	if err != nil {
		return redisx.Wrap(err)
	}
	return r.release(ctx, []string{id})
}

// ReapInstances implements fleet.Registry: the lapsed registrations go
// (reapBatch a script) and what they held is released, only when some
// lapsed. Their presence leases are not touched: they lapse with the
// registration (same TTL, renewed at the same pace) and the janitor's
// presence sweep handles them as any lapsed lease.
func (r *Registry) ReapInstances(ctx context.Context) ([]string, error) {
	var reaped []string
	for {
		rest, err := r.b.RunOK(ctx, reapCall{live: r.live(), batch: reapBatch})
		if err != nil {
			return reaped, err
		}
		arr, _ := rest[0].([]any)
		for _, x := range arr {
			if id, ok := x.(string); ok {
				reaped = append(reaped, id)
			}
		}
		if len(arr) < reapBatch {
			break
		}
	}
	if len(reaped) == 0 {
		return nil, nil
	}
	return reaped, r.release(ctx, reaped)
}

// Live is how many instances are registered and not lapsed (their
// expiries, Redis' clock, against this instance's: a clock ahead of
// Redis' by more than the TTL counts none, one behind counts lapsed
// instances until they are reaped): one ZCOUNT. The janitors read it to
// share the shards' visits (janitor.Config.Peers).
func (r *Registry) Live(ctx context.Context) (int, error) {
	n, err := r.b.Client.ZCount(ctx, r.live(), strconv.FormatInt(time.Now().UnixMilli(), 10), "+inf").Result()
	return int(n), redisx.Wrap(err)
}

// Instances implements fleet.Registry: after reaping, the registered
// instances, oldest first; a hash that is gone expired with its
// registration.
func (r *Registry) Instances(ctx context.Context) ([]fleet.Instance, error) {
	if _, err := r.ReapInstances(ctx); err != nil {
		return nil, err
	}
	ids, err := r.b.Client.ZRange(ctx, r.live(), 0, -1).Result()
	if err != nil {
		return nil, redisx.Wrap(err)
	}
	cmds := make([]*redis.MapStringStringCmd, len(ids))
	if _, err := r.b.Client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			cmds[i] = p.HGetAll(ctx, r.instance(id))
		}
		return nil
	}); err != nil {
		return nil, redisx.Wrap(err)
	}
	out := make([]fleet.Instance, 0, len(ids))
	for _, c := range cmds {
		if h := c.Val(); h["id"] != "" {
			out = append(out, decode(h))
		}
	}
	slices.SortFunc(out, func(a, b fleet.Instance) int {
		return cmp.Or(a.StartedAt.Compare(b.StartedAt), cmp.Compare(a.ID, b.ID))
	})
	return out, nil
}

func decode(h map[string]string) fleet.Instance {
	ms := func(f string) time.Time {
		n, _ := strconv.ParseInt(h[f], 10, 64)
		return time.UnixMilli(n).UTC()
	}
	streams, _ := strconv.Atoi(h["streams"])
	return fleet.Instance{ID: h["id"], Addr: h["addr"], Version: h["version"],
		StartedAt: ms("startedAt"), HeartbeatAt: ms("heartbeatAt"), Streams: streams, Settings: h["settings"]}
}
