package janitor

import (
	"context"
	"time"
)

// TakeLease runs the lease's script for shard as a visit of instance does
// (renew: as one that waited for its place); held is false when another
// instance holds the lease.
func (j *Janitor) TakeLease(ctx context.Context, shard int, instance string, ttl time.Duration, renew bool) (held bool, err error) {
	_, held, err = j.take(ctx, leaseTakeCall{lease: j.cfg.Lease(shard), schedule: j.cfg.Schedule(shard), instance: instance,
		ttl: ttl, now: time.Now().UnixMilli(), renew: renew})
	return held, err
}
