package store

import (
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"

	"github.com/realsync/realsync/internal/idempotency"

	"github.com/realsync/realsync/store/internal/redisx"
)

var _ idempotency.Store = (*Store)(nil)

//go:embed lua/idempotency.lua
var idempotencyLua string

var idempotencyScript = plain("idempotency", idempotencyLua)

// idempotencyCall is idempotency.lua: op on the record key, laid out whole
// for every op (what an op does not use is "").
type idempotencyCall struct {
	key, op, token, fingerprint string
	ms                          int64 // claim: the hold; record: the TTL
	answer                      idempotency.Answer
}

func (idempotencyCall) Script() *redisx.Script { return idempotencyScript }
func (c idempotencyCall) KeysArgs() ([]string, []any) {
	return []string{c.key}, []any{c.op, c.token, c.fingerprint, c.ms,
		c.answer.Status, c.answer.ContentType, c.answer.Location, c.answer.Body}
}

// idempotencyKey is the record of scope's key, in the slot of scope's
// shard (as the user's other keys): the pair hashed, so neither may
// contain anything that reads as the other.
func (s *Store) idempotencyKey(scope, key string) string {
	sum := sha256.Sum256([]byte(scope + "\x00" + key))
	return s.keys.tag(redisx.UserShard(scope, s.shards)) + ":idem:" + hex.EncodeToString(sum[:16])
}

// Claim implements idempotency.Store with one script.
func (s *Store) Claim(ctx context.Context, scope, key, fingerprint string, hold time.Duration) (idempotency.Claim, error) {
	c := idempotencyCall{key: s.idempotencyKey(scope, key), op: "claim", token: randomString(16, base62),
		fingerprint: fingerprint, ms: max(hold.Milliseconds(), 1)}
	res, err := s.runner.Run(ctx, c).Slice()
	if err != nil {
		return idempotency.Claim{}, redisx.Wrap(err)
	}
	status, _ := res[0].(string)
	switch {
	case status == "NEW":
		return idempotency.Claim{Outcome: idempotency.New, Key: c.key, Token: c.token}, nil
	case status == "MISMATCH":
		return idempotency.Claim{Outcome: idempotency.Mismatch}, nil
	case status == "IN_USE":
		return idempotency.Claim{Outcome: idempotency.InUse}, nil
	case status == "DONE" && len(res) == 5:
		code, _ := res[1].(string)
		ct, _ := res[2].(string)
		loc, _ := res[3].(string)
		body, _ := res[4].(string)
		n, err := strconv.Atoi(code)
		if err != nil {
			return idempotency.Claim{}, fmt.Errorf("store: idempotency record with status %q", code)
		}
		return idempotency.Claim{Outcome: idempotency.Replay,
			Answer: idempotency.Answer{Status: n, ContentType: ct, Location: loc, Body: []byte(body)}}, nil
	}
	return idempotency.Claim{}, fmt.Errorf("store: unexpected idempotency reply %v", res)
}

// Record implements idempotency.Store.
func (s *Store) Record(ctx context.Context, c idempotency.Claim, a idempotency.Answer) (bool, error) {
	res, err := s.runner.Run(ctx, idempotencyCall{key: c.Key, op: "record", token: c.Token,
		ms: idempotency.TTL.Milliseconds(), answer: a}).Slice()
	if err != nil {
		return false, redisx.Wrap(err)
	}
	return res[0] == "OK", nil
}

// Release implements idempotency.Store.
func (s *Store) Release(ctx context.Context, c idempotency.Claim) error {
	return redisx.Wrap(s.runner.Run(ctx, idempotencyCall{key: c.Key, op: "release", token: c.Token}).Err())
}
