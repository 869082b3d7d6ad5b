package webhooks

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/internal/webhook/deadletter"
	"github.com/realsync/realsync/store/internal/redisx"
)

// DeadLetters is the dead-letter queue of every shard: the deliveries that
// failed MaxAttempts tries, for the admin routes (deadletter.Queue).
type DeadLetters struct {
	b *redisx.Base
	// maxBacklog, maxDeliveries: the dispatchers' Config.MaxBacklog and
	// MaxDeliveries, which a replay may not pass
	maxBacklog, maxDeliveries int
	// inForce is the ids of the endpoints in force (SetEndpoints); nil
	// until then: not checked
	inForce atomic.Pointer[[]string]
}

var _ deadletter.Queue = (*DeadLetters)(nil)

// NewDeadLetters reads and replays the dead letters of b's shards. Of
// cfg it takes the bounds a replay keeps, MaxBacklog and MaxDeliveries
// (their defaults when zero): give it the dispatchers' Config.
func NewDeadLetters(b *redisx.Base, cfg Config) *DeadLetters {
	cfg = cfg.withDefaults()
	return &DeadLetters{b: b, maxBacklog: cfg.MaxBacklog, maxDeliveries: cfg.MaxDeliveries}
}

// SetEndpoints gives the ids of the endpoints in force (the endpoints
// file's, at its load and at each reload): from then on a replay of a
// dead letter whose endpoint is not among them is
// deadletter.ErrEndpointRemoved, the letter untouched, as its tries would
// all fail ("no longer configured") and bring it back with its error
// lost. Until it is called, no endpoint is refused.
func (q *DeadLetters) SetEndpoints(ids []string) {
	ids = slices.Clone(ids)
	if ids == nil {
		ids = []string{}
	}
	q.inForce.Store(&ids)
}

// DeadLetters lists up to limit dead letters, shard by shard, oldest first,
// after the cursor (a DeadLetter.ID; "" from the start; anything else is
// deadletter.ErrBadCursor); next is the cursor of the following page, ""
// when this page holds the last letter (it reads one letter more to know).
func (q *DeadLetters) DeadLetters(ctx context.Context, after string, limit int) (list []deadletter.Letter, next string, err error) {
	shard, start := 0, "-"
	if after != "" {
		sh, id, ok := parseDeadID(after, q.b.Shards)
		if !ok {
			return nil, "", deadletter.ErrBadCursor
		}
		shard, start = sh, "("+id
		if id == lastStreamID { // nothing follows it in its shard, and Redis refuses "(" of it
			shard, start = sh+1, "-"
		}
	}
	for ; shard < q.b.Shards; shard, start = shard+1, "-" {
		msgs, err := q.b.Client.XRangeN(ctx, keys{q.b}.dead(shard), start, "+", int64(limit+1-len(list))).Result()
		if err != nil {
			return nil, "", redisx.Wrap(err)
		}
		for _, m := range msgs {
			list = append(list, deadLetter(shard, m))
		}
		if len(list) > limit {
			return list[:limit], list[limit-1].ID, nil
		}
	}
	return list, "", nil
}

func deadLetter(shard int, m redis.XMessage) deadletter.Letter {
	str := func(f string) string { v, _ := m.Values[f].(string); return v }
	n, _ := strconv.Atoi(str("n"))
	at, _ := strconv.ParseInt(str("at"), 10, 64)
	return deadletter.Letter{ID: strconv.Itoa(shard) + "." + m.ID, MessageID: str("m"), Endpoint: str("e"), Type: str("t"),
		Event: []byte(str("d")), Attempts: n, FailedAt: time.UnixMilli(at).UTC(), LastError: str("err")}
}

// lastStreamID is the greatest id a stream entry may have.
const lastStreamID = "18446744073709551615-18446744073709551615"

// parseDeadID splits "<shard>.<ms>-<seq>", each number in canonical form
// only (decimal digits, no sign, no leading zero): "+0.<entry>" or
// "02.<entry>" is no dead letter's id, as strconv would read it as one.
func parseDeadID(id string, shards int) (int, string, bool) {
	sh, rest, ok := strings.Cut(id, ".")
	if !ok || !canonical(sh) {
		return 0, "", false
	}
	n, err := strconv.Atoi(sh)
	if err != nil || n >= shards {
		return 0, "", false
	}
	ms, seq, ok := strings.Cut(rest, "-")
	if !ok || !canonical(ms) || !canonical(seq) {
		return 0, "", false
	}
	if _, err := strconv.ParseUint(ms, 10, 64); err != nil {
		return 0, "", false
	}
	if _, err := strconv.ParseUint(seq, 10, 64); err != nil {
		return 0, "", false
	}
	return n, rest, true
}

// canonical reports whether s is a number as the server writes it:
// decimal digits, no sign, no leading zero.
func canonical(s string) bool {
	if s == "" || len(s) > 1 && s[0] == '0' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// ReplayDeadLetter puts dead letter id back into its shard's deliveries,
// retry count reset, and its endpoint's backlog; deadletter.ErrNotFound
// when there is no such one. When its endpoint's backlog in the shard is
// at MaxBacklog, or the shard's deliveries at MaxDeliveries (counted as
// the fan-out counts them: less the backlogs at MaxBacklog), it is
// deadletter.ErrBacklogFull and the letter stays where it is, untouched:
// the check is the replay script's, atomic with the move, so replays at
// once never take an endpoint past its bound. A letter of an endpoint
// not in force (SetEndpoints) is deadletter.ErrEndpointRemoved, untouched.
func (q *DeadLetters) ReplayDeadLetter(ctx context.Context, id string) error {
	shard, entry, ok := parseDeadID(id, q.b.Shards)
	if !ok {
		return deadletter.ErrNotFound
	}
	k := keys{q.b}
	call := replayCall{dead: k.dead(shard), deliveries: k.deliveries(shard), backlog: k.backlog(shard), entry: entry,
		maxBacklog: q.maxBacklog, maxDeliveries: q.maxDeliveries}
	if ids := q.inForce.Load(); ids != nil {
		call.inForce = *ids
	}
	out, err := q.b.Runner.Run(ctx, call).Slice()
	if err != nil {
		return redisx.Wrap(err)
	}
	code, ok := elem[int64](out, 0)
	if !ok {
		return fmt.Errorf("webhooks: the replay script answered %v", out)
	}
	count, _ := elem[int64](out, 1)
	switch code {
	case 1:
		return nil
	case 0:
		return deadletter.ErrNotFound
	case -1:
		ep, _ := elem[string](out, 2)
		return fmt.Errorf("endpoint %q has %d deliveries pending or retrying in shard %d, its bound REALSYNC_WEBHOOK_MAX_BACKLOG (%d): replay dead letter %s once it has caught up: %w",
			ep, count, shard, q.maxBacklog, id, deadletter.ErrBacklogFull)
	case -3:
		ep, _ := elem[string](out, 2)
		return fmt.Errorf("endpoint %q of dead letter %s is not in the endpoints file: its tries would all fail (\"no longer configured\"); add the endpoint back to replay it: %w",
			ep, id, deadletter.ErrEndpointRemoved)
	case -2:
		return fmt.Errorf("shard %d's deliveries stream holds %d deliveries of endpoints under their backlog bound, its bound (%d): replay dead letter %s once they have been sent: %w",
			shard, count, q.maxDeliveries, id, deadletter.ErrBacklogFull)
	}
	return fmt.Errorf("webhooks: the replay script answered %v", out)
}

// elem is out[i] as a T, and whether it is one.
func elem[T any](out []any, i int) (T, bool) {
	var zero T
	if i >= len(out) {
		return zero, false
	}
	v, ok := out[i].(T)
	return v, ok
}
