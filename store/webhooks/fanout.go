package webhooks

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/store/internal/redisx"
)

// fanoutBatch is the most outbox entries of a shard one round of an
// instance reads and fans out.
const fanoutBatch = 256

// fanoutShard fans out shard's outbox entries, in order, as many as
// fanoutRoom allows: first those this consumer left pending in the outbox
// (heldOutbox), then abandoned ones (XAUTOCLAIM) and new ones (read).
// Each goes through webhook_fanout.lua, which refuses an endpoint at
// MaxBacklog (the dead letters) while another endpoint in force has room,
// and otherwise, every endpoint in force at its bound, leaves the entry
// as it is: in the outbox, pending for this consumer. The round stops
// there; the entries after it stay pending behind it, and the next round
// with room fans them out from it, in order (heldOutbox). So while the
// only endpoint is down, or every endpoint is at its bound, events wait
// in the outbox, none refused, however a round's read straddles the
// bound (the round that took the last endpoint to its bound refused the
// rest of its read, and so did each round after its backlog dipped below
// the bound, until 2026-12-07: a tester's 1 300 events to one endpoint
// down, 262 dead-lettered).
//
// Several instances fan a shard out at once as before: the consumer group
// gives each entry to one consumer at a time, and the script, which
// deletes the entry it fans out and acknowledges one already gone, fans
// out each once, whoever runs it. Entries held here stay this
// consumer's while its rounds re-read them (a read resets their idle
// time); those it does not re-read within ClaimIdle (it died, or the
// bound left room for fewer) are taken over, oldest first, by the first
// XAUTOCLAIM to find them idle, this instance's or another's. What a
// consumer holds so is at most a round's read, fanoutBatch entries: it
// reads no others while it holds any.
//
// handled counts the entries fanned out (or found gone); lag is the age
// of the first entry read, or, when there was no room to read, of the
// outbox's first (0: none).
func (d *Dispatcher) fanoutShard(ctx context.Context, shard int) (handled int, lag time.Duration, err error) {
	outbox := keys{d.b}.outbox(shard)
	limit, err := d.fanoutRoom(ctx, shard)
	if err != nil {
		return 0, 0, err
	}
	if limit <= 0 { // the backlog waits in the outbox: its oldest entry's age
		first, err := d.b.Client.XRangeN(ctx, outbox, "-", "+", 1).Result()
		if err != nil {
			return 0, 0, redisx.Wrap(err)
		}
		if len(first) > 0 {
			lag = d.age(first[0].ID)
		}
		return 0, lag, nil
	}
	d.mu.Lock()
	kept := d.held[shard]
	d.mu.Unlock()
	var entries []redis.XMessage
	if kept {
		if entries, err = d.heldOutbox(ctx, outbox, limit); err != nil {
			return 0, 0, err
		}
		kept = int64(len(entries)) >= limit // more may be held behind them
	}
	handled, err = d.fanoutEntries(ctx, shard, entries)
	if err == nil && !kept && handled == len(entries) && int64(len(entries)) < limit {
		var more []redis.XMessage
		n := 0
		if more, err = d.read(ctx, outbox, limit-int64(len(entries))); err == nil {
			n, err = d.fanoutEntries(ctx, shard, more)
		}
		handled += n
		entries = append(entries, more...)
	}
	if len(entries) > 0 {
		lag = d.age(entries[0].ID)
	}
	d.mu.Lock()
	// held, or read and not fanned out (a failed read may have claimed
	// some): pending here, for the next round with room to read first
	d.held[shard] = kept || handled < len(entries) || err != nil
	d.mu.Unlock()
	return handled, lag, err
}

// fanoutEntries fans out the outbox entries es of shard in order until
// one is held (every endpoint in force at its bound) or fails, and
// returns how many it fanned out (or found gone): the rest stay pending
// for this consumer.
func (d *Dispatcher) fanoutEntries(ctx context.Context, shard int, es []redis.XMessage) (int, error) {
	k := keys{d.b}
	eps := d.eps.Load().list
	for i, e := range es {
		t, _ := e.Values["t"].(string)
		var want, others []string
		for _, ep := range eps {
			if ep.wants(t) {
				want = append(want, ep.ID)
			} else {
				others = append(others, ep.ID)
			}
		}
		held, refused, err := d.fanout(ctx, fanoutCall{outbox: k.outbox(shard), deliveries: k.deliveries(shard),
			backlog: k.backlog(shard), dead: k.dead(shard), entry: e.ID, message: "msg_" + strconv.Itoa(shard) + "_" + e.ID,
			maxBacklog: d.cfg.MaxBacklog, deadCap: d.deadCap(), nowMs: d.cfg.Now().UnixMilli(), refusedErr: d.refusedErr,
			endpoints: want, others: others})
		if err != nil || held {
			return i, err
		}
		if d.cfg.Metrics != nil {
			for _, ep := range refused {
				d.cfg.Metrics.WebhookRefused(ep)
			}
		}
	}
	return len(es), nil
}

// fanout runs webhook_fanout.lua: held says the entry was left in the
// outbox, pending (every endpoint in force at MaxBacklog), refused names
// the endpoints whose delivery went to the dead letters.
func (d *Dispatcher) fanout(ctx context.Context, c fanoutCall) (held bool, refused []string, err error) {
	out, err := d.b.Runner.Run(ctx, c).StringSlice()
	if err != nil {
		return false, nil, redisx.Wrap(err)
	}
	if len(out) == 0 {
		return false, nil, errors.New("webhook_fanout: empty reply")
	}
	switch out[0] {
	case "held":
		return true, nil, nil
	case "fanned", "gone":
		return false, out[1:], nil
	}
	return false, nil, fmt.Errorf("webhook_fanout: unexpected reply %v", out)
}

// heldOutbox returns up to count of the outbox entries this consumer
// holds pending, oldest first (XREADGROUP from 0, which resets their idle
// time): those a round held (fanoutShard), read back without their fields
// if the outbox's cap dropped them meanwhile (the script acknowledges
// those).
func (d *Dispatcher) heldOutbox(ctx context.Context, outbox string, count int64) ([]redis.XMessage, error) {
	if err := d.ensureGroup(ctx, outbox); err != nil {
		return nil, err
	}
	res, err := d.b.Client.XReadGroup(ctx, &redis.XReadGroupArgs{Group: group, Consumer: d.cfg.Consumer,
		Streams: []string{outbox, "0"}, Count: count, Block: -1}).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, redisx.Wrap(d.groupLost(outbox, err))
	}
	var out []redis.XMessage
	for _, r := range res {
		out = append(out, r.Messages...)
	}
	return out, nil
}

// fanoutRoom is how many outbox entries a round may read from shard's
// outbox and fan out: fanoutBatch at most; no more than leave the shard's
// deliveries stream at most MaxDeliveries long, the deliveries of
// endpoints at MaxBacklog aside once it is that long (refusing the full
// ones lets the others' events through; each holds its bound); and no
// more than the endpoints in force have room for together (the sum of
// MaxBacklog less each one's backlog: an entry fanned out takes one of it
// from each endpoint that gets it, so more would be read only to be held;
// the counts are read only when the stream is that long, or the hash has
// as many fields as endpoints in force, or MaxBacklog is under a round's
// read: else an endpoint without a count has room for it). 0 when every
// endpoint in force is at its bound: the events wait in the outbox, as a
// backlog of every endpoint does (the lag metric sees them), whatever the
// stream's length (a dead endpoint's deliveries wait mostly in the
// retries). The backlog
// counts retries too, so the stream's allowance may take a little more
// off than the stream holds of the full endpoints: the stream stays
// bounded, by MaxDeliveries plus MaxBacklog for each endpoint at it (plus
// a round's fan-out per instance).
func (d *Dispatcher) fanoutRoom(ctx context.Context, shard int) (int64, error) {
	k := keys{d.b}
	eps := d.eps.Load().list
	var xlen, hlen *redis.IntCmd
	_, err := d.b.Client.Pipelined(ctx, func(p redis.Pipeliner) error {
		xlen = p.XLen(ctx, k.deliveries(shard))
		hlen = p.HLen(ctx, k.backlog(shard))
		return nil
	})
	if err != nil {
		return 0, redisx.Wrap(err)
	}
	n, maxDels, bound := xlen.Val(), int64(d.cfg.MaxDeliveries), int64(d.cfg.MaxBacklog)
	if n < maxDels && (len(eps) == 0 || hlen.Val() < int64(len(eps)) && bound >= fanoutBatch) {
		// an endpoint in force without a count has room for a round's read
		return min(fanoutBatch, maxDels-n), nil
	}
	counts, err := d.b.Client.HGetAll(ctx, k.backlog(shard)).Result()
	if err != nil {
		return 0, redisx.Wrap(err)
	}
	count := func(ep string) int64 { c, _ := strconv.ParseInt(counts[ep], 10, 64); return c }
	room := int64(fanoutBatch)
	if len(eps) > 0 {
		var free int64
		for _, ep := range eps {
			free += max(0, bound-count(ep.ID))
		}
		room = min(room, free)
	}
	if n >= maxDels {
		for ep := range counts {
			if c := count(ep); c >= bound {
				n -= c
			}
		}
	}
	return max(0, min(room, maxDels-max(n, 0))), nil
}
