package quickjoin

import (
	"context"
	_ "embed"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/store/internal/layout"
	"github.com/realsync/realsync/store/internal/redisx"
	"github.com/realsync/realsync/store/janitor"
)

// quickJoinLockTTL bounds how long one quick-join of a user holds back
// the user's next (lockQuickJoin), should its instance die holding it.
const quickJoinLockTTL = 5 * time.Second

// quickJoinLockPoll is how often a waiting quick-join tries the lock.
const quickJoinLockPoll = 10 * time.Millisecond

// lockQuickJoin takes user uid's quick-join lock (quickjoin_lock.lua: SET
// NX PX in the user's slot, expiring after quickJoinLockTTL; a script, so
// that under load it leaves in a batch: a plain SET went alone, a round
// trip and Redis' read and write of its own), waiting while another
// quick-join of uid holds it, and returns its release (compare and
// delete). So quick-joins of one user at once (two tabs, a client's
// retry) run one after the other and the later finds the earlier's room
// (memberOf) instead of joining or creating another; quick-joins of
// different users never wait for each other.
func (q *QuickJoin) lockQuickJoin(ctx context.Context, uid string) (func(), error) {
	key, token := q.Keys.QuickJoinLock(redisx.UserShard(uid, q.Shards), uid), layout.RandomString(layout.IDRandLen, layout.Base62)
	release := func() { q.Runner.Run(context.WithoutCancel(ctx), janitor.ReleaseCall(key, token)) }
	for {
		res, err := q.Runner.Run(ctx, lockCall{key: key, token: token, ttl: quickJoinLockTTL}).Slice()
		if err != nil {
			// the reply lost and not sent again (in a batch with a script
			// sent once, go-redis resends none of it): the lock may be
			// ours; released, so that the user's retry does not wait for
			// its TTL
			if !redisx.NeverSent(err) && !errors.As(err, new(redis.Error)) {
				release()
			}
			return nil, redisx.Wrap(err)
		}
		if len(res) == 2 && res[1] == int64(1) {
			return release, nil
		}
		select {
		case <-ctx.Done():
			return nil, redisx.Wrap(ctx.Err())
		case <-time.After(quickJoinLockPoll):
		}
	}
}

//go:embed lua/quickjoin_lock.lua
var lockLua string

// lockScript is sent again when its reply was lost: the second run finds
// the lock held by the call's own token.
var lockScript = redisx.Idempotent("quickjoin_lock", lockLua)

// lockCall is quickjoin_lock.lua: key taken for token for ttl, or found
// held by token.
type lockCall struct {
	key, token string
	ttl        time.Duration
}

func (lockCall) Script() *redisx.Script { return lockScript }
func (c lockCall) KeysArgs() ([]string, []any) {
	return []string{c.key}, []any{c.token, c.ttl.Milliseconds()}
}
