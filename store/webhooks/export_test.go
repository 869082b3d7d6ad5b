package webhooks

import "context"

// RecountStep runs one step of shard's backlog recount (webhook_recount.lua).
func (d *Dispatcher) RecountStep(ctx context.Context, shard int) error { return d.recount(ctx, shard) }

// RecountStepRead is RecountStep, also returning how many entries
// (retries and deliveries) the step's script read.
func (d *Dispatcher) RecountStepRead(ctx context.Context, shard int) (int, error) {
	return d.recountStep(ctx, shard)
}

// Due moves at most limit retries of shard due by nowMs back into the
// deliveries (webhook_due.lua) and returns how many it moved.
func (d *Dispatcher) Due(ctx context.Context, shard int, nowMs int64, limit int) (int, error) {
	k := keys{d.b}
	return d.b.Runner.Run(ctx, dueCall{retries: k.retries(shard), deliveries: k.deliveries(shard),
		recount: k.recount(shard), nowMs: nowMs, limit: limit}).Int()
}

// Settle settles delivery entry id of shard as sent (webhook_settle.lua).
func (d *Dispatcher) Settle(ctx context.Context, shard int, id string) error {
	k := keys{d.b}
	return d.b.Runner.Run(ctx, settleCall{deliveries: k.deliveries(shard), backlog: k.backlog(shard),
		retries: k.retries(shard), recount: k.recount(shard), entry: id}).Err()
}

// Fail fails a try of delivery entry id of shard (webhook_fail.lua), due
// at dueMs, and returns the outcome.
func (d *Dispatcher) Fail(ctx context.Context, shard int, id string, dueMs int64) (string, error) {
	k := keys{d.b}
	return d.b.Runner.Run(ctx, failCall{deliveries: k.deliveries(shard), retries: k.retries(shard), dead: k.dead(shard),
		backlog: k.backlog(shard), recount: k.recount(shard), entry: id, dueMs: dueMs, maxAttempts: d.cfg.MaxAttempts,
		deadCap: d.deadCap(), nowMs: dueMs, lastErr: "down"}).Text()
}

// RecountStepBytes is how many bytes of entries a recount step reads at
// most, give or take a chunk of 16 entries (recountStepBytes).
const RecountStepBytes = recountStepBytes

// OutboxTime is outboxTime.
var OutboxTime = outboxTime
