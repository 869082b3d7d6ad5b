// Package streamtokens records the stream tokens that opened a stream
// (api.StreamTokenUses), so that each opens one: a key per token used, in
// its user's slot, kept until the token stops verifying.
package streamtokens

import (
	"context"
	_ "embed"
	"fmt"
	"time"

	"github.com/realsync/realsync/store/internal/redisx"
)

//go:embed lua/stream_token_use.lua
var useLua string

// script runs twice to the same effect and reply, so a call whose reply
// was lost is sent again (redisx.Idempotent): each opening claims with a
// nonce of its own.
var script = redisx.Idempotent("stream_token_use", useLua)

// call is stream_token_use.lua.
type call struct {
	key, op, nonce string
	ms             int64
}

func (call) Script() *redisx.Script { return script }
func (c call) KeysArgs() ([]string, []any) {
	return []string{c.key}, []any{c.op, c.nonce, c.ms}
}

// Uses implements api.StreamTokenUses on the store's Redis.
type Uses struct{ b *redisx.Base }

// New records uses with b's client, in b's key layout.
func New(b *redisx.Base) *Uses { return &Uses{b: b} }

// key is the use of token id of user uid: "<user's tag>:stu:<id>".
func (u *Uses) key(uid, id string) string { return u.b.Tag(u.b.UserShard(uid)) + ":stu:" + id }

// Use records token id of uid as used by opening, kept for keep (at
// least a millisecond); false when another opening did. Errors:
// rooms.ErrUnavailable.
func (u *Uses) Use(ctx context.Context, uid, id, opening string, keep time.Duration) (bool, error) {
	res, err := u.b.Runner.Run(ctx, call{key: u.key(uid, id), op: "use", nonce: opening, ms: max(keep.Milliseconds(), 1)}).Slice()
	if err != nil {
		return false, redisx.Wrap(err)
	}
	switch status, _ := res[0].(string); status {
	case "OK":
		return true, nil
	case "USED":
		return false, nil
	}
	return false, fmt.Errorf("store: unexpected stream token use reply %v", res)
}

// Used reports whether an opening holds the use of token id of uid.
// Errors: rooms.ErrUnavailable.
func (u *Uses) Used(ctx context.Context, uid, id string) (bool, error) {
	n, err := u.b.Client.Exists(ctx, u.key(uid, id)).Result()
	return n == 1, redisx.Wrap(err)
}

// Release drops the use of token id of uid when opening holds it, so that
// the token may open its stream again.
func (u *Uses) Release(ctx context.Context, uid, id, opening string) error {
	if err := u.b.Runner.Run(ctx, call{key: u.key(uid, id), op: "release", nonce: opening}).Err(); err != nil {
		return fmt.Errorf("stream token use %s: %w", id, redisx.Wrap(err))
	}
	return nil
}
