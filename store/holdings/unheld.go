package holdings

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/store/internal/redisx"
)

// Sweep pops a batch of shard's unheld list (the janitor calls it on each
// visit that finds the list not empty, or after a task of the visit did
// something) and corrects the holdings of the users it names.
//
// A room script that removes a player otherwise than by a leave (a kick, a
// ban, the janitor's removal after a disconnect) or closes a room (owner or
// server delete, the lifecycle, the last player removed) cannot reach its
// users' holdings, which are in their own slots. It lists them instead, in
// the shard's unheld list (Rooms.UnheldKey, in the room's slot: unhold in
// store/internal/roomlua/lua/prelude.lua), and every janitor visit of the shard pops a batch
// and corrects each user's holdings (holdings_release.lua; a key left
// with no room keeps its marker until it expires):
//   - "c", the room closed: the entry is dropped whatever it holds (room
//     ids are never reused, and a join of the closed room fails and would
//     drop its reservation anyway);
//   - "r", the user was removed: the entry is dropped unless the user is in
//     the room again, only if it still holds the value read, and only if
//     that value is older than InFlight by its own node's clock (as
//     recheck: a younger one may be a rejoin's reservation whose join has
//     not run yet). An entry kept for being too young goes back to the end
//     of the list for a later visit;
//   - "o", the user was handed the room's ownership: the entry marked owned.
//
// A leave corrects the holdings at once (Left), so a user at a limit
// may leave and join again at once; it lists nothing.
func (h *Holdings) Sweep(ctx context.Context, shard int) error {
	if !h.On() {
		return nil
	}
	list := h.cfg.Rooms.UnheldKey(shard)
	raw, err := h.b.Client.LPopCount(ctx, list, unheldBatch).Result()
	if errors.Is(err, redis.Nil) || (err == nil && len(raw) == 0) {
		return nil
	}
	if err != nil {
		return redisx.Wrap(err)
	}
	type entry struct {
		raw, room, kind, uid, key string
		value                     *redis.StringCmd
	}
	entries := make([]*entry, 0, len(raw))
	var removed []*entry
	var uids, rms []string
	for _, r := range raw {
		f := strings.SplitN(r, " ", 3)
		if len(f) != 3 {
			continue
		}
		e := &entry{raw: r, room: f[0], kind: f[1], uid: f[2], key: h.Key(f[2])}
		entries = append(entries, e)
		if e.kind == "r" {
			removed, uids, rms = append(removed, e), append(uids, e.uid), append(rms, e.room)
		}
	}
	// requeue puts entries back for a later visit; best effort: one lost
	// only over-counts until its user's next check at a limit.
	requeue := func(rs []any) {
		if len(rs) > 0 {
			// the pop may have deleted the list: the new one expires too
			c := context.WithoutCancel(ctx)
			h.b.Client.Pipelined(c, func(p redis.Pipeliner) error {
				p.RPush(c, list, rs...)
				p.PExpire(c, list, TTL)
				return nil
			})
		}
	}
	var member []bool
	if len(removed) > 0 {
		_, err = h.b.Client.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, e := range removed {
				e.value = p.HGet(ctx, e.key, e.room)
			}
			return nil
		})
		if err == nil || errors.Is(err, redis.Nil) {
			member, err = h.cfg.Rooms.InRooms(ctx, uids, rms)
		}
		if err != nil && !errors.Is(err, redis.Nil) {
			requeue(toAny(raw))
			return redisx.Wrap(err)
		}
	}
	back := make(map[*entry]bool, len(removed))
	for i, e := range removed {
		back[e] = member[i]
	}
	// every release compares or is idempotent: RunAll may run them twice
	var releases []redisx.Call
	var waits []string // the entry, if it may have to wait
	inFlight := "-" + strconv.FormatInt(InFlight.Microseconds(), 10)
	for _, e := range entries {
		switch e.kind {
		case "c":
			releases, waits = append(releases, releaseCall{e.key, []heldChange{{e.room, "*", ""}}}), append(waits, "")
		case "o":
			releases, waits = append(releases, releaseCall{e.key, []heldChange{{e.room, "*", "o"}}}), append(waits, "")
		case "r":
			if v := e.value.Val(); v != "" && !back[e] {
				releases, waits = append(releases, releaseCall{e.key, []heldChange{{e.room, v, inFlight}}}), append(waits, e.raw)
			} // else gone already, or the user is back in the room
		}
	}
	if len(releases) == 0 {
		return nil
	}
	cmds, err := h.b.Runner.RunAll(ctx, releases)
	if err != nil {
		requeue(toAny(raw))
		return redisx.Wrap(err)
	}
	// an "r" entry kept for being too young: looked at again later
	var later []any
	for i, w := range waits {
		if arr, _ := cmds[i].Val().([]any); w != "" && len(arr) == 3 && redisx.Int(arr[2]) > 0 {
			later = append(later, w)
		}
	}
	requeue(later)
	return nil
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}
