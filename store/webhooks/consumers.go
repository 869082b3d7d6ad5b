package webhooks

import (
	"context"
	"errors"
	"fmt"
)

// Every instance reads the outbox and deliveries streams of every shard as
// a consumer of its own name (Config.Consumer), which the group keeps
// until it is removed: one more name per stream at each start, for good
// (an abuse tester's finding: five starts, five consumers). An instance
// removes its own when it stops, and every ConsumerIdle each removes those
// of others idle that long; neither removes a consumer with entries
// pending (webhook_consumers.lua): those are taken over after ClaimIdle,
// and the next sweep removes the consumer.

// sweepConsumers removes, once every ConsumerIdle, the consumers of every
// shard's streams but this one's that hold nothing and were idle that
// long (instances that died, or stopped with deliveries pending).
func (d *Dispatcher) sweepConsumers(ctx context.Context) error {
	if !d.due(&d.sweptAt, d.cfg.ConsumerIdle) {
		return nil
	}
	return d.consumers(ctx, "sweep")
}

// leave removes this instance's consumer from every shard's streams where
// it holds nothing pending (Run, once its sends ended).
func (d *Dispatcher) leave(ctx context.Context) error { return d.consumers(ctx, "leave") }

func (d *Dispatcher) consumers(ctx context.Context, mode string) error {
	k := keys{d.b}
	var errs []error
	for shard := range d.b.Shards {
		for _, stream := range []string{k.outbox(shard), k.deliveries(shard)} {
			c := consumersCall{stream: stream, mode: mode, self: d.cfg.Consumer, idleMs: d.cfg.ConsumerIdle.Milliseconds()}
			if err := d.b.Runner.Run(ctx, c).Err(); err != nil {
				errs = append(errs, fmt.Errorf("webhooks shard %d: consumers (%s): %w", shard, mode, err))
			}
		}
	}
	return errors.Join(errs...)
}
