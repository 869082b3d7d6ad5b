// Package idempotency keeps the answers of requests sent with an
// Idempotency-Key in Redis: the Redis side of the contract in
// internal/idempotency, one script per step, each record in the slot of
// its caller's own keys.
package idempotency

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	contract "github.com/realsync/realsync/internal/idempotency"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/store/internal/redisx"
)

//go:embed lua/idempotency.lua
var idempotencyLua string

var script = redisx.Plain("idempotency", idempotencyLua)

// call is idempotency.lua: op on the record key, laid out whole for every
// op (what an op does not use is "").
type call struct {
	key, op, token, fingerprint string
	ms                          int64 // claim: the hold; record: the TTL
	answer                      contract.Answer
	by                          int64 // claim: made until then (ms since the epoch; 0 any)
	// budget: the caller's budget (0: none); kept and spent its answers'
	// keys (ledger)
	budget      int
	kept, spent string
	// record: the answer's receipt; redo: the token of the answer taken
	// back
	extra string
}

func (call) Script() *redisx.Script { return script }
func (c call) KeysArgs() ([]string, []any) {
	keys := []string{c.key}
	if c.budget > 0 {
		keys = append(keys, c.kept, c.spent)
	}
	return keys, []any{c.op, c.token, c.fingerprint, c.ms,
		c.answer.Status, c.answer.ContentType, c.answer.Location, c.answer.Body, c.by,
		c.budget, contract.TTL.Milliseconds(), c.extra}
}

// lateMargin is how long after its caller gave up a claim is still made:
// Redis' clock and this instance's may differ by that much, and a claim
// refused while its caller still waits is a 503. A Redis whose clock is
// further ahead is learned (Store.leads).
const lateMargin = time.Second

// leadKept is how long a Redis clock's lead learned from a claim refused
// LATE is added to claims' deadlines: then a claim may be refused again
// (one round trip more), and learns it anew.
const leadKept = 10 * time.Minute

// Store implements contract.Store on the store's Redis.
type Store struct {
	b      *redisx.Base
	budget int
	// leads is, per user shard, how far ahead of this instance's clock
	// Redis' was found (a claim refused LATE while its call still waited:
	// an instance whose clock is behind Redis' by more than lateMargin
	// had every keyed write refused 503, an abuse tester's find), added
	// to claims' deadlines for leadKept.
	leads []lead
	// behind sets this instance's clock back, for tests.
	behind time.Duration
}

// lead is a Redis clock's lead over this instance's, in ms, and when it
// was learned (Unix ms of this instance's clock).
type lead struct{ ms, at atomic.Int64 }

// leadOf is the lead learned for shard, 0 once leadKept old.
func (s *Store) leadOf(shard int, now time.Time) int64 {
	l := &s.leads[shard]
	if now.UnixMilli()-l.at.Load() > leadKept.Milliseconds() {
		return 0
	}
	return l.ms.Load()
}

var _ contract.Store = (*Store)(nil)

// New keeps records with b's client, in b's key layout, each user's
// within contract.Budget.
func New(b *redisx.Base) *Store {
	return &Store{b: b, budget: contract.Budget, leads: make([]lead, b.Shards)}
}

// WithClockBehind sets this instance's clock d behind Redis' as Claim
// reads it (tests: clocks apart), and returns s.
func (s *Store) WithClockBehind(d time.Duration) *Store { s.behind = d; return s }

// WithBudget sets the bytes of answers one user's records may hold
// (tests: a small one), and returns s.
func (s *Store) WithBudget(n int) *Store { s.budget = n; return s }

// ledger is scope's budget: 0 for an API key (a game server), else the
// Store's; and the keys of its kept answers and their bytes, in the slot
// of its records.
func (s *Store) ledger(c *call, scope string) {
	if strings.HasPrefix(scope, rooms.ServerUserPrefix) || s.budget <= 0 {
		return
	}
	sum := sha256.Sum256([]byte(scope))
	h := s.b.Tag(s.b.UserShard(scope)) + ":idemq:" + hex.EncodeToString(sum[:16])
	c.budget, c.kept, c.spent = s.budget, h, h+":n"
}

// key is the record of scope's key, "<user tag>:idem:<hash>", in the slot
// of scope's shard (as the user's other keys): the pair hashed, so neither
// may contain anything that reads as the other.
func (s *Store) key(scope, key string) string {
	sum := sha256.Sum256([]byte(scope + "\x00" + key))
	return s.b.Tag(s.b.UserShard(scope)) + ":idem:" + hex.EncodeToString(sum[:16])
}

// Claim implements contract.Store with one script. A claim Redis would
// run after this call gave up is not made (idempotency.lua's ARGV[9]): by
// this instance's clock, plus lateMargin and the lead Redis' clock was
// found to have (Store.leads). A claim refused so while its call still
// waits by this instance's clock (the clocks are apart) learns the lead
// from the time Redis answered with, and is sent again once with it.
//
// An answer with a receipt (contract.Answer.Receipt) is replayed once its
// write is found where it was made, or cannot be told otherwise (lost);
// a lost one is taken back and the key claimed anew (idempotency.lua's
// redo), once per call: the answer of a retry that redid it first is
// replayed as it is.
func (s *Store) Claim(ctx context.Context, scope, key, fingerprint string, hold time.Duration) (contract.Claim, error) {
	c := call{key: s.key(scope, key), op: "claim", token: rand.Text(),
		fingerprint: fingerprint, ms: max(hold.Milliseconds(), 1)}
	s.ledger(&c, scope)
	got, answered, err := s.claim(ctx, c, scope)
	if err != nil || got.Outcome != contract.Replay || got.Answer.Receipt == "" {
		return got, err
	}
	if lost, err := s.lost(ctx, got.Answer.Receipt); err != nil || !lost {
		return got, err
	}
	c.op, c.extra = "redo", answered
	got, _, err = s.claim(ctx, c, scope)
	return got, err
}

// claim runs c, a claim or a redo of scope's key, learning Redis' lead
// (Claim); answered is a Replay's token, its answer's (for a redo: a
// Replay's Claim has none, it is no claim to Record or Release).
func (s *Store) claim(ctx context.Context, c call, scope string) (got contract.Claim, answered string, err error) {
	shard := s.b.UserShard(scope)
	ends := s.b.Bound.Ends(ctx)
	if !ends.IsZero() {
		ends = ends.Add(-s.behind)
		c.by = ends.Add(lateMargin).UnixMilli() + s.leadOf(shard, time.Now().Add(-s.behind))
	}
	res, err := s.b.Runner.Run(ctx, c).Slice()
	if err != nil {
		return contract.Claim{}, "", redisx.Wrap(err)
	}
	status, _ := res[0].(string)
	if now := time.Now().Add(-s.behind); status == "LATE" && len(res) == 2 && now.Before(ends.Add(lateMargin)) {
		redisMs, _ := res[1].(string)
		if ms, err := strconv.ParseInt(redisMs, 10, 64); err == nil && ms > now.UnixMilli() {
			l := &s.leads[shard]
			l.ms.Store(ms - now.UnixMilli())
			l.at.Store(now.UnixMilli())
			c.by = ends.Add(lateMargin).UnixMilli() + (ms - now.UnixMilli())
			if res, err = s.b.Runner.Run(ctx, c).Slice(); err != nil {
				return contract.Claim{}, "", redisx.Wrap(err)
			}
			status, _ = res[0].(string)
		}
	}
	switch {
	case status == "NEW":
		return contract.Claim{Outcome: contract.New, Key: c.key, Token: c.token, Scope: scope}, "", nil
	case status == "OVER" && len(res) == 2:
		ms, _ := res[1].(string)
		n, _ := strconv.ParseInt(ms, 10, 64)
		return contract.Claim{Outcome: contract.OverBudget, RetryAfter: time.Duration(n) * time.Millisecond}, "", nil
	case status == "MISMATCH":
		return contract.Claim{Outcome: contract.Mismatch}, "", nil
	case status == "IN_USE":
		return contract.Claim{Outcome: contract.InUse}, "", nil
	case status == "LATE": // a call that gave up, or clocks drifting apart faster than learned
		return contract.Claim{}, "", fmt.Errorf("%w: the key's claim reached Redis after its call gave up", rooms.ErrUnavailable)
	case status == "DONE" && len(res) == 7:
		f := make([]string, 6)
		for i := range f {
			f[i], _ = res[i+1].(string)
		}
		n, err := strconv.Atoi(f[0])
		if err != nil {
			return contract.Claim{}, "", fmt.Errorf("store: idempotency record with status %q", f[0])
		}
		return contract.Claim{Outcome: contract.Replay,
			Answer: contract.Answer{Status: n, ContentType: f[1], Location: f[2], Body: []byte(f[3]), Receipt: f[5]}}, f[4], nil
	}
	return contract.Claim{}, "", fmt.Errorf("store: unexpected idempotency reply %v", res)
}

// Record implements contract.Store.
func (s *Store) Record(ctx context.Context, c contract.Claim, a contract.Answer) (bool, error) {
	rc := call{key: c.Key, op: "record", token: c.Token, ms: contract.TTL.Milliseconds(), answer: a, extra: a.Receipt}
	s.ledger(&rc, c.Scope)
	res, err := s.b.Runner.Run(ctx, rc).Slice()
	if err != nil {
		return false, redisx.Wrap(err)
	}
	return res[0] == "OK", nil
}

// Release implements contract.Store.
func (s *Store) Release(ctx context.Context, c contract.Claim) error {
	return redisx.Wrap(s.b.Runner.Run(ctx, call{key: c.Key, op: "release", token: c.Token}).Err())
}
