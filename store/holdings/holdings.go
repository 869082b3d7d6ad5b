// Package holdings bounds the rooms one user owns and is in at once (the
// room quotas), across every shard and instance.
//
// A user's rooms span shards, so no room script sees them all. The room
// quotas are kept in a holdings hash per user, in the user's own slot
// (Key): every create and join first reserves the room there
// (holdings_reserve.lua, atomic, so N concurrent requests of one user on
// any number of instances never take more than the quota), then runs the
// room script, and drops the reservation when that fails. A leave drops
// the entry after the room script, an owner's leave marks the new owner;
// a kick or ban drops the kicked user's entry the same way (Left, with the
// value read before the kick). A join of a room held already (a retry, a
// second tab, a join racing a leave of the same room) re-stamps the entry:
// in flight again until its script ran. When the script added the user
// (or its outcome is unknown) it stamps the entry anew, so a correction
// that read the join's first stamp keeps it; when the script changed
// nothing (the user was a member, or it refused) it puts the value before
// back (Release), so a leave's correction that read that value still
// drops it, before the undo or after (holdings_release.lua's notes).
//
// Entries of rooms the user left otherwise (removed by the janitor, the
// room closed, or a kick whose own correction was lost) are listed by the room script in the room's
// shard and dropped by the janitor's next visit (Sweep, unheld.go). Should that
// list be lost, the holdings over-count, and a user who reaches a limit
// gets the entries older than InFlight checked against the rooms
// and corrected (dropped, ownership fixed) before being refused. They
// under-count only after a quick-join whose reply or rebind was lost: its
// placeholder entry holds the count but not the room's id; the check that
// finds such a placeholder stale adds every room the user is in and the
// holdings lack (read from the user indexes). So the holdings bound the
// quotas, and nothing reads them as the list of a user's rooms (quick-join's
// memberOf reads the user indexes). A key left with no room keeps its
// marker, "in no room", until it expires; a missing key (new user, or
// expired after TTL without a reservation) is rebuilt from the
// shard user indexes. Ownership the janitor passed on (a disconnected owner
// removed) is recorded by the same visit.
//
// A rebuild that cannot read some shards (a Cluster master down, no
// replica to take over) builds the key from the shards it read and marks
// it partial: the rooms of the masters down are out of the user's reach
// while they are, and their rooms' requests fail anyway, so the user's
// other requests go on, where a rebuild failed whole refused every create
// and join of a new user (or one idle for TTL) on every master. A
// reservation that checks a limit against a partial key older than
// Reread reads the rooms again and adds those the key lacks (the key's
// entries are kept: they may be reservations whose scripts have not run),
// and the key is whole again once every shard was read. So while a master
// is down, a quota may let such a user hold, beyond it, at most the rooms
// the user is in on that master; once it is back, the user's next create
// or join (Reread after the last read) counts them, and refuses until the
// user is under the quota again (TestQuotaBuiltFromTheMastersUp). A check
// at a limit that finds a stale placeholder still needs every shard
// (recheck), as it adds the rooms the holdings lack.
package holdings

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/rooms"

	"github.com/realsync/realsync/store/internal/redisx"
)

const (
	// TTL: a user's holdings key expires this long after the user's last
	// create or join; the next one rebuilds it from the rooms.
	TTL = time.Hour
	// InFlight: a reservation younger than this may belong to a room
	// script not run yet, so a check never drops it. It must outlast the
	// longest a store call may take to send its script after reserving:
	// a wait for a pooled connection (12 s, tried twice), dials and
	// replies of its tries (about 3 s each), a batch's wait; some 30 s at
	// worst. A quick-join reserves with its lock, before its look for a
	// room the user is in and its reads of candidates: those run within
	// the API's request timeout (10 s) too. A check that dropped a
	// reservation whose script then ran would let the user past a limit.
	InFlight = time.Minute
	// Reread is how long a key built partially (a shard unread) is counted
	// as it is before a reservation that checks a limit reads the rooms
	// again: every such read waits for the masters down, at once when
	// they refuse connections, for the call's bound (6 s) when they hang;
	// and the quota counts the rooms of a master come back this long
	// after its return at most (at the user's next create or join).
	Reread = 10 * time.Second
	// unheldBatch bounds the unheld entries one shard visit handles; the
	// rest wait for the next visit.
	unheldBatch = 1000
)

// Rooms is what the holdings read of the rooms; the root store, which
// owns the room layout, implements it.
type Rooms interface {
	// RoomsOf lists the rooms uid is in, on every shard it could read
	// (the user indexes, checked against the rooms), with whether uid
	// owns each; unread names the shards it could not read (a Cluster
	// master down), whose rooms ids lacks. err when it read no shard, or
	// could not check the rooms it found.
	RoomsOf(ctx context.Context, uid string) (ids []string, owned []bool, unread []int, err error)
	// Membership reports, in one pipeline, whether uid is in each room
	// of ids and owns it.
	Membership(ctx context.Context, uid string, ids []string) (member, owner []bool, err error)
	// InRooms reports, in one pipeline, whether uids[i] is in rooms[i].
	InRooms(ctx context.Context, uids, rooms []string) ([]bool, error)
	// IsRoom reports whether id is a room id (of this deployment's shards).
	IsRoom(id string) bool
	// UnheldKey is shard's unheld list, which the room scripts append to.
	UnheldKey(shard int) string
}

// Config bounds the holdings; 0 switches a limit off, and with both off
// nothing is kept.
type Config struct {
	Base          *redisx.Base
	Owned, Joined int
	Rooms         Rooms
}

// Holdings keeps the users' holdings. Safe for concurrent use.
type Holdings struct {
	b   *redisx.Base
	cfg Config
}

// New keeps holdings with cfg.Base's client and layout.
func New(cfg Config) *Holdings { return &Holdings{b: cfg.Base, cfg: cfg} }

// On reports whether a limit is on (else every method is a no-op).
func (h *Holdings) On() bool { return h.cfg.Owned > 0 || h.cfg.Joined > 0 }

// Key is user uid's holdings hash, in the slot of the user's shard.
func (h *Holdings) Key(uid string) string { return h.b.Tag(h.b.UserShard(uid)) + ":held:" + uid }

// Hold is a reservation made by Reserve; Release undoes it.
type Hold struct {
	key, room, value string
	fresh            bool   // the room was not held before (a placeholder: always)
	before           string // the entry's value before, when held before
}

// HeldBefore reports whether r found its room held already (the user in
// it, or left it a moment ago): the entry was re-stamped and marked in
// flight, not made, and its value before kept in r for Undo.
func (r Hold) HeldBefore() bool { return r.key != "" && !r.fresh }

// Reserve records that uid is about to be in room (as its owner when
// owner) and returns the reservation; rooms.ErrOwnedRoomsLimit or
// rooms.ErrJoinedRoomsLimit when that would exceed a limit even after the
// holdings were checked against the rooms.
func (h *Holdings) Reserve(ctx context.Context, uid, room string, owner bool) (Hold, error) {
	return h.reserve(ctx, uid, room, owner, h.cfg.Owned, h.cfg.Joined, false)
}

// Check reports whether uid may be in one more room (as its owner when
// owner): nil, or the error Reserve would give, after the same check of
// the holdings against the rooms. It reserves nothing (a cold key is
// built, as for a reservation).
func (h *Holdings) Check(ctx context.Context, uid string, owner bool) error {
	_, err := h.Reserve(ctx, uid, "", owner)
	return err
}

// Record is Reserve past the limits, for a room uid is in already or that
// was made for uid (a match room), once its room script ran: holdings
// that missed it would let uid past the limits later.
func (h *Holdings) Record(ctx context.Context, uid, room string, owner bool) (Hold, error) {
	return h.reserve(ctx, uid, room, owner, 0, 0, true)
}

// Found is Record for a room a read found uid in (a quick-join's look for
// a room uid is in), which changes no room: the entry is made when
// missing; one there already is re-stamped as a join's reservation is, in
// flight until the caller undoes it (Undo) once done with the room, or
// drops it (Forget) when the room was gone. Record's new stamp instead
// would outlive a leave racing the read, whose correction looks for the
// stamp it read.
func (h *Holdings) Found(ctx context.Context, uid, room string, owner bool) (Hold, error) {
	return h.reserve(ctx, uid, room, owner, 0, 0, false)
}

func (h *Holdings) reserve(ctx context.Context, uid, room string, owner bool, maxOwned, maxJoined int, record bool) (Hold, error) {
	if !h.On() {
		return Hold{}, nil
	}
	key := h.Key(uid)
	var seed []any
	var unread []int
	checked := false
	for range 3 {
		call := h.reserveCall(uid, room, owner, maxOwned, maxJoined, record, seed)
		call.partial = len(unread) > 0
		res, err := h.b.Runner.Run(ctx, call).Result()
		if err != nil {
			return Hold{}, redisx.Wrap(err)
		}
		arr, _ := res.([]any)
		status, _ := arr[0].(string)
		switch status {
		case "OK":
			return held(key, room, arr), nil
		case "COLD", "PARTIAL": // a key to build, or to complete
			if seed, unread, err = h.seed(ctx, uid); err != nil {
				return Hold{}, err
			}
		case "OWNED_ROOMS_LIMIT", "JOINED_ROOMS_LIMIT":
			limit := map[string]error{"OWNED_ROOMS_LIMIT": fmt.Errorf("%w (%d)", rooms.ErrOwnedRoomsLimit, h.cfg.Owned),
				"JOINED_ROOMS_LIMIT": fmt.Errorf("%w (%d)", rooms.ErrJoinedRoomsLimit, h.cfg.Joined)}[status]
			if checked {
				return Hold{}, limit
			}
			checked = true
			now, _ := arr[1].(string)
			n, err := h.recheck(ctx, uid, key, redisx.Int(now), arr[2:])
			if err != nil {
				return Hold{}, err
			}
			if n == 0 {
				return Hold{}, limit
			}
		default:
			return Hold{}, fmt.Errorf("store: unexpected holdings reply %v", arr)
		}
	}
	return Hold{}, fmt.Errorf("%w: holdings of a user changed three times in a row", rooms.ErrUnavailable)
}

// Release undoes a reservation whose room script refused or was never
// sent: a fresh entry is dropped, a re-stamped one is undone (Undo). Best
// effort: an entry left behind only over-counts until the next check at
// a limit looks at it (InFlight after r).
func (h *Holdings) Release(ctx context.Context, r Hold) {
	if r.key != "" && r.fresh {
		// as a leave's correction: a join of the room re-stamped the entry
		// since gets the stamp noted, so that its undo, putting this one
		// back, drops the entry instead
		h.b.Runner.Run(context.WithoutCancel(ctx), releaseCall{r.key, []heldChange{{r.room, r.value, "left"}}})
	}
	h.Undo(ctx, r)
}

// Undo puts back the value a reservation of a room held already
// re-stamped, once its room script changed nothing (it refused, was never
// sent, or found the user a member already: a retry, a second tab), as if
// it had never come; dropped instead when a leave or kick of the user
// corrected meanwhile (holdings_release.lua's notes): so a leave racing
// the join leaves no entry behind whatever the order. Only while the
// entry holds r's reservation; nothing for a fresh one (the user is in
// the room, or Release drops it). Best effort, as Release.
func (h *Holdings) Undo(ctx context.Context, r Hold) {
	if r.key != "" && !r.fresh && r.before != "" {
		h.b.Runner.Run(context.WithoutCancel(ctx), releaseCall{r.key, []heldChange{{r.room, r.value, "undo:" + r.before}}})
	}
}

// reserveCall is holdings_reserve.lua's call reserving room for uid.
func (h *Holdings) reserveCall(uid, room string, owner bool, maxOwned, maxJoined int, record bool, seed []any) reserveCall {
	return reserveCall{key: h.Key(uid), room: room, role: map[bool]string{true: "o", false: "m"}[owner],
		owned: maxOwned, joined: maxJoined, ttlMs: TTL.Milliseconds(), record: record, seed: seed}
}

// held is the reservation of room in key that reply, holdings_reserve's
// "OK", made.
func held(key, room string, reply []any) Hold {
	v, _ := reply[1].(string)
	var before string
	if len(reply) > 3 {
		before, _ = reply[3].(string)
	}
	// a placeholder is new to its quick-join: held before only when the
	// first run of a call sent again (its reply lost) made it
	return Hold{key: key, room: room, value: v, fresh: reply[2] == "1" || isPlaceholder(room), before: before}
}

// ReservePlaceholder reserves ph, a Placeholder, for a quick-join of uid,
// and reports whether the quick-join may create its room: as owner within
// the owned limit when create, else (and past that limit) past the owned
// limit but still as an owner, so that a placeholder whose rebind is lost
// never under-counts the rooms uid owns (ownership of the room it joined
// may pass to uid later). The joined limit holds either way.
func (h *Holdings) ReservePlaceholder(ctx context.Context, uid, ph string, create bool) (Hold, bool, error) {
	if create {
		r, err := h.Reserve(ctx, uid, ph, true)
		if !errors.Is(err, rooms.ErrOwnedRoomsLimit) {
			return r, true, err
		}
	}
	r, err := h.reserve(ctx, uid, ph, true, 0, h.cfg.Joined, false)
	return r, false, err
}

// PlaceholderTry is ReservePlaceholder's first call as holdings_reserve's
// KEYS[1] and ARGV, for a script of the quick-join's own in uid's slot
// that runs it as the function holdings_reserve(KEYS, ARGV) (FunctionsLua)
// beside its lock; Reserved reads its reply.
func (h *Holdings) PlaceholderTry(uid, ph string, create bool) (key string, args []any) {
	maxOwned := 0
	if create {
		maxOwned = h.cfg.Owned
	}
	keys, args := h.reserveCall(uid, ph, true, maxOwned, h.cfg.Joined, false, nil).KeysArgs()
	return keys[0], args
}

// Reserved is the reservation PlaceholderTry's call made, from its reply,
// and whether the quick-join may create its room (as ReservePlaceholder
// says); ok is false when it made none (a cold key, a limit reached:
// nothing written; ReservePlaceholder makes it, with a check of the
// holdings against the rooms when needed).
func (h *Holdings) Reserved(uid, ph string, create bool, reply []any) (r Hold, mayCreate, ok bool) {
	if len(reply) < 3 || reply[0] != "OK" {
		return Hold{}, false, false
	}
	return held(h.Key(uid), ph, reply), create, true
}

// Placeholder returns a new id under which a quick-join reserves its room
// before its script picks the room (EndPlaceholder turns it into the
// room's entry); no room id has its prefix. One left behind (a lost reply,
// a crash before the rebind) counts until a check finds it stale.
func Placeholder(random string) string { return placeholderPrefix + random }

const placeholderPrefix = "qj:"

func isPlaceholder(id string) bool { return strings.HasPrefix(id, placeholderPrefix) }

// EndPlaceholder is holdings_rebind's KEYS[1] and ARGV that end uid's
// reservation under placeholder ph, for a script of the quick-join's own
// that runs it as the function holdings_rebind(KEYS, ARGV) (FunctionsLua)
// beside its lock's release: turned into room's entry (as its owner when
// created), or dropped when room is "" (the quick-join joined nothing).
// Best effort, as Release: a rebind lost leaves the placeholder, which a
// check finds stale.
func (h *Holdings) EndPlaceholder(uid, ph, room string, created bool) (key string, args []any) {
	keys, args := rebindCall{key: h.Key(uid), placeholder: ph, room: room,
		role: map[bool]string{true: "o", false: "m"}[created]}.KeysArgs()
	return keys[0], args
}

// Forget drops the entry r made or refreshed, if it still holds r's
// reservation: for a room found gone right after (room ids are never
// reused). Best effort, as Release.
func (h *Holdings) Forget(ctx context.Context, r Hold) {
	if r.key != "" {
		h.b.Runner.Run(context.WithoutCancel(ctx), releaseCall{r.key, []heldChange{{r.room, r.value, ""}}})
	}
}

// Value reads uid's entry for room before a leave ("" without limits or
// entry), so that dropping it afterwards (Left) cannot drop a reservation
// made meanwhile.
func (h *Holdings) Value(ctx context.Context, uid, room string) string {
	if !h.On() {
		return ""
	}
	// a pipeline of one (redisx.HMGet), not an HGET, which went alone: a
	// round trip of its own before every leave
	var cmd *redis.StringSliceCmd
	h.b.Client.Pipelined(ctx, func(p redis.Pipeliner) error {
		cmd = redisx.HMGet(ctx, p, h.Key(uid), room)
		return nil
	})
	if v := cmd.Val(); len(v) == 1 {
		return v[0] // "": no entry
	}
	return ""
}

// Left corrects the holdings after uid left room: its entry (as read
// before, by Value) dropped, and room marked owned by newOwner when
// ownership passed on. An entry a join of the room re-stamped since, or
// is in flight on (it may put uid back), is kept, with the leave noted
// for that join's Undo. Best effort, as Release.
func (h *Holdings) Left(ctx context.Context, uid, room, before, newOwner string) {
	if !h.On() {
		return
	}
	ctx = context.WithoutCancel(ctx)
	if before != "" { // noted on an entry re-stamped meanwhile, for its join's undo
		h.b.Runner.Run(ctx, releaseCall{h.Key(uid), []heldChange{{room, before, "left"}}})
	}
	if newOwner != "" {
		h.b.Runner.Run(ctx, releaseCall{h.Key(newOwner), []heldChange{{room, "*", "o"}}})
	}
}

// Stamp is the time (µs, of the key's node) of the reservation an entry's
// value holds: the number after its role, before the notes
// holdings_release.lua adds.
func Stamp(v string) (int64, bool) {
	_, rest, ok := strings.Cut(v, ":")
	if end := strings.IndexAny(rest, "^~-"); end >= 0 {
		rest = rest[:end]
	}
	n, err := strconv.ParseInt(rest, 10, 64)
	return n, ok && err == nil
}

// seed reads, from the rooms, the rooms uid is in: roomId, role pairs as
// holdings_reserve's seed, and the shards left unread (RoomsOf).
func (h *Holdings) seed(ctx context.Context, uid string) ([]any, []int, error) {
	ids, owned, unread, err := h.cfg.Rooms.RoomsOf(ctx, uid)
	if err != nil {
		return nil, nil, err
	}
	seed := []any{}
	for i, id := range ids {
		seed = append(seed, id, map[bool]string{true: "o", false: "m"}[owned[i]])
	}
	return seed, unread, nil
}

// recheck checks uid's held entries (roomId, value pairs of a limit reply;
// now in µs of the same node) older than InFlight against the rooms and
// corrects them; returns how many changed. A stale placeholder (a
// quick-join whose reply or rebind was lost, so it may be in a room the
// holdings lack) is dropped and every room uid is in without an entry is
// added.
func (h *Holdings) recheck(ctx context.Context, uid, key string, now int64, entries []any) (int, error) {
	var ids, values []string
	var gone []heldChange
	held := map[string]bool{}
	for i := 0; i+1 < len(entries); i += 2 {
		id, _ := entries[i].(string)
		v, _ := entries[i+1].(string)
		held[id] = true
		stamp, ok := Stamp(v)
		if id == "#" || !ok || stamp > now-InFlight.Microseconds() {
			continue
		}
		if isPlaceholder(id) { // a quick-join's reservation it never turned into its room's
			gone = append(gone, heldChange{id, v, ""})
			continue
		}
		if !h.cfg.Rooms.IsRoom(id) {
			continue
		}
		ids, values = append(ids, id), append(values, v)
	}
	member, owner, err := h.cfg.Rooms.Membership(ctx, uid, ids)
	if err != nil {
		return 0, err
	}
	changes := gone
	if len(gone) > 0 {
		seed, unread, err := h.seed(ctx, uid)
		if err != nil {
			return 0, err
		}
		if len(unread) > 0 {
			// the placeholder may stand for a room of a shard unread:
			// dropped, it would leave that room uncounted for good
			return 0, fmt.Errorf("%w: the rooms of shards %v unread", rooms.ErrUnavailable, unread)
		}
		for i := 0; i+1 < len(seed); i += 2 {
			if id := seed[i].(string); !held[id] {
				changes = append(changes, heldChange{id, "+", seed[i+1].(string)})
			}
		}
	}
	for i, id := range ids {
		role := map[bool]string{true: "o", false: "m"}[owner[i]]
		switch {
		case !member[i]:
			changes = append(changes, heldChange{id, values[i], ""})
		case values[i][:1] != role:
			changes = append(changes, heldChange{id, values[i], role})
		}
	}
	if len(changes) == 0 {
		return 0, nil
	}
	res, err := h.b.Runner.Run(ctx, releaseCall{key, changes}).Result()
	if err != nil {
		return 0, redisx.Wrap(err)
	}
	arr, _ := res.([]any)
	return int(redisx.Int(arr[1])), nil
}
