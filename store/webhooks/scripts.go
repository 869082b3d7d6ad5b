package webhooks

import (
	_ "embed"
	"strconv"

	"github.com/realsync/realsync/store/internal/redisx"
)

// keys are the webhook keys of one shard, all in its slot (b.Tag): the
// outbox name is the one the root store's scripts write
// (layout.Keys.WebhookOutbox in store/internal/layout).
type keys struct{ b *redisx.Base }

// outbox is the shard's webhook outbox: a stream of events (t type, d
// JSON), read by the consumer group of every instance.
func (k keys) outbox(shard int) string { return k.b.Tag(shard) + ":webhooks" }

// deliveries is the shard's stream of pending deliveries, one per (event,
// endpoint).
func (k keys) deliveries(shard int) string { return k.b.Tag(shard) + ":webhooks:deliveries" }

// retries is the shard's zset of failed deliveries waiting for their next
// try, scored by due time (ms).
func (k keys) retries(shard int) string { return k.b.Tag(shard) + ":webhooks:retries" }

// dead is the shard's dead-letter stream (capped MAXLEN ~).
func (k keys) dead(shard int) string { return k.b.Tag(shard) + ":webhooks:dead" }

// backlog is the shard's hash of each endpoint's backlog: its deliveries
// in the deliveries stream and in the retries. The scripts that add and
// remove them keep it (a field deleted at 0, the hash once the shard's
// deliveries and retries are empty).
func (k keys) backlog(shard int) string { return k.b.Tag(shard) + ":webhooks:backlog" }

// recount is the shard's backlog recount (a hash, webhook_recount.lua):
// the walk under way, expiring a while after its last step, or the pause
// after a recount, expiring when the next may start.
func (k keys) recount(shard int) string { return k.b.Tag(shard) + ":webhooks:recount" }

// recountChecks is the number of the shard's recounts whose counts added
// up since the last walk (webhook_recount.lua): deleted by the walk it
// leads to, expiring a while after the last recount.
func (k keys) recountChecks(shard int) string { return k.b.Tag(shard) + ":webhooks:recount:checks" }

//go:embed lua/webhook_fanout.lua
var fanoutLua string

//go:embed lua/webhook_fail.lua
var failLua string

//go:embed lua/webhook_settle.lua
var settleLua string

//go:embed lua/webhook_due.lua
var dueLua string

//go:embed lua/webhook_replay.lua
var replayLua string

//go:embed lua/webhook_recount.lua
var recountLua string

//go:embed lua/webhook_consumers.lua
var consumersLua string

// preludeLua is what the scripts that move deliveries and retries ask of
// a recount's walk, and the dead letters' cap, put before them.
//
//go:embed lua/prelude.lua
var preludeLua string

var (
	fanoutScript = redisx.Plain("webhook_fanout", preludeLua+fanoutLua)
	failScript   = redisx.Plain("webhook_fail", preludeLua+failLua)
	settleScript = redisx.Plain("webhook_settle", preludeLua+settleLua)
	dueScript    = redisx.Plain("webhook_due", preludeLua+dueLua)
	replayScript = redisx.Plain("webhook_replay", replayLua)
	// recountScript writes only what it recounts (a hash replaced by one
	// of about its size)
	recountScript = redisx.Plain("webhook_recount", recountLua)
	// consumersScript removes only consumers with nothing pending
	consumersScript = redisx.Plain("webhook_consumers", consumersLua)
)

// consumersCall is webhook_consumers.lua: stream's consumers with nothing
// pending removed, this instance's own (leave) or those of others idle
// at least idleMs (sweep).
type consumersCall struct {
	stream, mode, self string
	idleMs             int64
}

func (consumersCall) Script() *redisx.Script { return consumersScript }
func (c consumersCall) KeysArgs() ([]string, []any) {
	return []string{c.stream}, []any{group, c.mode, c.self, c.idleMs}
}

// fanoutCall is webhook_fanout.lua: outbox entry becomes message's
// delivery to each of endpoints (those wanting its type), but for those
// whose backlog has reached maxBacklog: theirs goes to the dead letters,
// untried, with refusedErr; unless every one of endpoints and others (the
// rest of the endpoints in force) is at maxBacklog: then the entry is
// left in the outbox (Dispatcher.fanout decodes the reply).
type fanoutCall struct {
	outbox, deliveries, backlog, dead string
	entry, message                    string
	maxBacklog                        int
	deadCap                           deadCap
	nowMs                             int64
	refusedErr                        string
	endpoints, others                 []string
}

func (fanoutCall) Script() *redisx.Script { return fanoutScript }
func (c fanoutCall) KeysArgs() ([]string, []any) {
	args := []any{group, c.entry, c.message, c.maxBacklog, c.deadCap.arg(), c.nowMs, c.refusedErr, len(c.endpoints)}
	for _, e := range c.endpoints {
		args = append(args, e)
	}
	for _, e := range c.others {
		args = append(args, e)
	}
	return []string{c.outbox, c.deliveries, c.backlog, c.dead}, args
}

// deadCap bounds a shard's dead letters (deadLetter, lua/prelude.lua): at
// most count, and about bytes of them.
type deadCap struct{ count, bytes int }

func (c deadCap) arg() string { return strconv.Itoa(c.count) + " " + strconv.Itoa(c.bytes) }

// failCall is webhook_fail.lua: delivery entry failed a try.
type failCall struct {
	deliveries, retries, dead, backlog, recount string
	entry                                       string
	dueMs                                       int64
	maxAttempts                                 int
	deadCap                                     deadCap
	nowMs                                       int64
	lastErr                                     string
}

func (failCall) Script() *redisx.Script { return failScript }
func (c failCall) KeysArgs() ([]string, []any) {
	return []string{c.deliveries, c.retries, c.dead, c.backlog, c.recount},
		[]any{group, c.entry, c.dueMs, c.maxAttempts, c.deadCap.arg(), c.nowMs, c.lastErr}
}

// settleCall is webhook_settle.lua: delivery entry was sent; it runs out
// of memory.
type settleCall struct {
	deliveries, backlog, retries, recount, entry string
}

func (settleCall) Script() *redisx.Script { return settleScript }
func (c settleCall) KeysArgs() ([]string, []any) {
	return []string{c.deliveries, c.backlog, c.retries, c.recount}, []any{group, c.entry}
}

// dueCall is webhook_due.lua: at most limit retries due by nowMs go back
// into the deliveries (and off the recount's walk, if it counted them),
// stopping after about recountStepBytes of them (a chunk of 16 past it at
// most), as a recount step does.
type dueCall struct {
	retries, deliveries, recount string
	nowMs                        int64
	limit                        int
}

func (dueCall) Script() *redisx.Script { return dueScript }
func (c dueCall) KeysArgs() ([]string, []any) {
	return []string{c.retries, c.deliveries, c.recount}, []any{c.nowMs, c.limit, recountStepBytes}
}

// replayCall is webhook_replay.lua: dead letter entry goes back into the
// deliveries and its endpoint's backlog, unless that backlog is at
// maxBacklog or the deliveries at maxDeliveries, or (inForce not nil) its
// endpoint is not among inForce.
type replayCall struct {
	dead, deliveries, backlog, entry string
	maxBacklog, maxDeliveries        int
	inForce                          []string
}

func (replayCall) Script() *redisx.Script { return replayScript }
func (c replayCall) KeysArgs() ([]string, []any) {
	args := []any{c.entry, c.maxBacklog, c.maxDeliveries, 0}
	if c.inForce != nil {
		args[3] = 1
		for _, id := range c.inForce {
			args = append(args, id)
		}
	}
	return []string{c.dead, c.deliveries, c.backlog}, args
}

// recountCall is webhook_recount.lua: one step of the shard's backlog
// recount, walking at most step entries, and stopping once it has read
// stepBytes of them (16 entries at a time); a walk left expires ttlMs
// after its last step, a recount done pauses pauseMs; every walkEvery-th
// recount walks though the counts add up (checks counts them, expiring
// checksTTLMs after the last).
type recountCall struct {
	deliveries, retries, backlog, recount, checks string
	step, stepBytes                               int
	ttlMs, pauseMs                                int64
	walkEvery                                     int
	checksTTLMs                                   int64
}

func (recountCall) Script() *redisx.Script { return recountScript }
func (c recountCall) KeysArgs() ([]string, []any) {
	return []string{c.deliveries, c.retries, c.backlog, c.recount, c.checks},
		[]any{c.step, c.ttlMs, c.pauseMs, c.walkEvery, c.checksTTLMs, c.stepBytes}
}
