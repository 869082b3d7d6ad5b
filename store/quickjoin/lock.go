package quickjoin

import (
	"context"
	_ "embed"
	"time"

	"github.com/realsync/realsync/store/holdings"
	"github.com/realsync/realsync/store/internal/layout"
	"github.com/realsync/realsync/store/internal/redisx"
)

// quickJoinLockTTL bounds how long one quick-join of a user holds back
// the user's next (begin), should its instance die holding it.
const quickJoinLockTTL = 5 * time.Second

// quickJoinLockPoll is how often a waiting quick-join tries the lock.
const quickJoinLockPoll = 10 * time.Millisecond

// userHold is a quick-join's hold on its user: the user's quick-join lock,
// and with the room quotas on, for a quick-join into one region, the
// placeholder reservation made in the same call (holdings.PlaceholderTry);
// end releases both in one call.
type userHold struct {
	uid, lock, token string
	ph               string        // the placeholder ("": none)
	held             holdings.Hold // its reservation
	mayCreate        bool          // the quick-join may create: within the owned limit, or no quotas
	create           bool          // a create is asked for: the reservation as an owner within the limit
	pending          bool          // the reservation is still to make (reserve)
	room             string        // the room joined or created, once picked
	created          bool
	keep             bool // the placeholder may count a room joined: left for a check
}

// begin takes user uid's quick-join lock (quickjoin_lock.lua: SET NX PX in
// the user's slot, expiring after quickJoinLockTTL; a script, so that under
// load it leaves in a batch: a plain SET went alone, a round trip and
// Redis' read and write of its own), waiting while another quick-join of
// uid holds it; with reserve (the room quotas on, one region), its first
// try reserves the quick-join's placeholder in the same call, as owner
// within the owned limit when create (holdings.ReservePlaceholder; the
// rest of a reservation the first try could not make, a cold key or a
// limit to check against the rooms, follows as its own calls). So
// quick-joins of one user at once (two tabs, a client's retry) run one
// after the other and the later finds the earlier's room (memberOf)
// instead of joining or creating another; quick-joins of different users
// never wait for each other. The caller ends the hold (end).
func (q *QuickJoin) begin(ctx context.Context, uid string, reserve, create bool) (*userHold, error) {
	l := &userHold{uid: uid, lock: q.Keys.QuickJoinLock(redisx.UserShard(uid, q.Shards), uid),
		token: layout.RandomString(layout.IDRandLen, layout.Base62), create: create, mayCreate: true}
	call := lockCall{key: l.lock, token: l.token, ttl: quickJoinLockTTL}
	if reserve {
		l.ph = holdings.Placeholder(layout.RandomString(layout.IDRandLen, layout.Base62))
		call.held, call.reserve = q.Held.PlaceholderTry(uid, l.ph, create)
	}
	for {
		res, err := q.Runner.Run(ctx, call).Slice()
		if err != nil {
			// the reply lost and not sent again (in a batch with a script
			// sent once, go-redis resends none of it), or an error reply
			// to a resend whose first run went through (a failover's
			// READONLY): the lock and the placeholder may be ours; given
			// back, so that the user's retry does not wait for the lock's
			// TTL nor find its quota taken
			if !redisx.NeverSent(err) {
				q.end(ctx, l)
			}
			return nil, redisx.Wrap(err)
		}
		if len(res) >= 2 && res[1] == int64(1) {
			if reserve {
				var ok bool
				if l.held, l.mayCreate, ok = q.Held.Reserved(uid, l.ph, create, res[2:]); !ok {
					// a cold key or a limit to check: the reservation is
					// made after memberOf (reserve), which a user at a
					// limit who is in a room of the mode already must reach
					l.pending = true
				}
			}
			return l, nil
		}
		select {
		case <-ctx.Done():
			return nil, redisx.Wrap(ctx.Err())
		case <-time.After(quickJoinLockPoll):
		}
	}
}

// reserve makes l's placeholder reservation when begin's first try could
// not (pending): holdings.ReservePlaceholder's calls.
func (q *QuickJoin) reserve(ctx context.Context, l *userHold) error {
	if !l.pending {
		return nil
	}
	var err error
	l.held, l.mayCreate, err = q.Held.ReservePlaceholder(ctx, l.uid, l.ph, l.create)
	l.pending = false
	return err // the placeholder, should a lost reply have made it, dropped by end
}

// end ends l: its placeholder turned into the room's entry (the room
// picked), dropped (none), or left as it is (keep), and its lock released,
// in one call (quickjoin_end.lua). Best effort: a lock left expires after
// quickJoinLockTTL, a placeholder left counts until a check finds it
// stale.
func (q *QuickJoin) end(ctx context.Context, l *userHold) {
	call := endCall{key: l.lock, token: l.token}
	if l.ph != "" && !l.keep {
		call.held, call.rebind = q.Held.EndPlaceholder(l.uid, l.ph, l.room, l.created)
	}
	q.Runner.Run(context.WithoutCancel(ctx), call)
}

// dropPlaceholder drops l's placeholder now (before the store's own
// create, which reserves the room it creates: both would count).
func (q *QuickJoin) dropPlaceholder(ctx context.Context, l *userHold) {
	if l.ph != "" {
		q.Held.Release(ctx, l.held)
		l.ph = ""
	}
}

//go:embed lua/quickjoin_lock.lua
var lockLua string

//go:embed lua/quickjoin_end.lua
var endLua string

var (
	// lockScript is sent again when its reply was lost: the second run
	// finds the lock held by the call's own token, and the placeholder
	// held (stamped anew).
	lockScript = redisx.Idempotent("quickjoin_lock", holdings.FunctionsLua+lockLua)
	endScript  = redisx.Plain("quickjoin_end", holdings.FunctionsLua+endLua)
)

// lockCall is quickjoin_lock.lua: key taken for token for ttl, or found
// held by token; with held (the user's holdings key), holdings_reserve's
// arguments reserve after.
type lockCall struct {
	key, token string
	ttl        time.Duration
	held       string
	reserve    []any
}

func (lockCall) Script() *redisx.Script { return lockScript }
func (c lockCall) KeysArgs() ([]string, []any) {
	keys, args := []string{c.key}, []any{c.token, c.ttl.Milliseconds()}
	if c.held != "" {
		keys, args = append(keys, c.held), append(args, c.reserve...)
	}
	return keys, args
}

// endCall is quickjoin_end.lua: with held (the user's holdings key),
// holdings_rebind's arguments, then key released if token holds it.
type endCall struct {
	key, token string
	held       string
	rebind     []any
}

func (endCall) Script() *redisx.Script { return endScript }
func (c endCall) KeysArgs() ([]string, []any) {
	keys, args := []string{c.key}, []any{c.token}
	if c.held != "" {
		keys, args = append(keys, c.held), append(args, c.rebind...)
	}
	return keys, args
}
