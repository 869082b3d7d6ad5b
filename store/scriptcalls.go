package store

import (
	"context"
	"slices"
	"sort"
	"strconv"

	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/sse"

	"github.com/realsync/realsync/store/internal/layout"
	"github.com/realsync/realsync/store/internal/redisx"
)

// The descriptors of every script of store/lua: one struct per script,
// its fields the script's keys and arguments by name, laid out as KEYS and
// ARGV by its KeysArgs in the order the Lua's header documents. A new
// script gets one here; scriptcalls_test.go checks that every script has
// exactly one.

// roomScope is what every mutation script gets first (lua/prelude.lua):
// the room's KEYS[1..12] — and KEYS[13..36], its indexes, the shard stats,
// the lifecycle schedule, its bans and the unheld list, for a script that
// may move the room between indexes — and ARGV[1..6] (Store.common).
type roomScope struct {
	keys []string
	argv []any
}

// scope is room id's scope for a script that moves it between no index.
func (s *Store) scope(shard int, id string) roomScope {
	return roomScope{keys: s.withOutbox(shard, s.keys.RoomKeys(shard, id)), argv: s.common(shard, id)}
}

// indexedScope is the scope of room id of mode and region with its indexes.
func (s *Store) indexedScope(shard int, id, mode, region string) roomScope {
	return roomScope{keys: s.withOutbox(shard, s.keys.RoomKeysWithIndexes(shard, id, mode, region)), argv: s.common(shard, id)}
}

// withOutbox appends the shard's webhook outbox to a scope's keys when
// webhooks are on (ARGV[5] then says so, see lua/prelude.lua).
func (s *Store) withOutbox(shard int, keys []string) []string {
	if s.outboxLen > 0 {
		keys = append(keys, s.keys.WebhookOutbox(shard))
	}
	return keys
}

// scopeOf returns room id's shard and indexed scope, reading its
// (immutable) mode and region when not cached; rooms.ErrRoomNotFound for
// an id this deployment never issued or a room that is gone.
func (s *Store) scopeOf(ctx context.Context, id string) (int, roomScope, error) {
	shard, ok := layout.RoomShard(id, s.shards)
	if !ok {
		return 0, roomScope{}, rooms.ErrRoomNotFound
	}
	p, ok := s.places.get(id)
	if !ok {
		got, err := s.client.HMGet(ctx, s.keys.Room(shard, id), "m", "r").Result()
		if err != nil {
			return 0, roomScope{}, redisx.Wrap(err)
		}
		mode, _ := got[0].(string)
		region, _ := got[1].(string)
		if mode == "" {
			return 0, roomScope{}, rooms.ErrRoomNotFound
		}
		p = place{mode: mode, region: region}
		s.places.put(id, p)
	}
	return shard, s.indexedScope(shard, id, p.mode, p.region), nil
}

// with lays the scope out with the script's own ARGV after ARGV[6].
func (r roomScope) with(args ...any) ([]string, []any) {
	return r.keys, slices.Concat(r.argv, args)
}

func flag(b bool) string {
	if b {
		return "1"
	}
	return ""
}

// createCall is room_create.lua, in an indexed scope.
type createCall struct {
	roomScope
	newRoom
}

// newRoom is room_create.lua's ARGV[7..]: the room p, created by owner,
// with its attributes encoded, its invite code ("" public), the state's
// size, onlyIfNone (refused with JOINABLE_EXISTS when a joinable room of
// its mode and region exists) and firstCheck (Lifecycle.firstCheck).
type newRoom struct {
	p          rooms.NewRoom
	owner      rooms.User
	attrs      []byte
	code       string
	stateSize  int
	onlyIfNone bool
	firstCheck string
}

func (n newRoom) args() []any {
	args := []any{n.p.Name, n.p.Mode, n.p.Region, string(n.p.Visibility),
		n.p.MaxPlayers, string(n.p.StatePolicy), n.attrs, n.code, n.owner.ID, jsonString(n.owner.Name), n.stateSize,
		flag(n.onlyIfNone), n.firstCheck}
	for _, k := range sortedKeys(n.p.State) {
		args = append(args, k, []byte(n.p.State[k]))
	}
	return args
}

func (createCall) Script() *redisx.Script        { return roomCreate }
func (c createCall) KeysArgs() ([]string, []any) { return c.with(c.newRoom.args()...) }

// joinCall is room_join.lua, in an indexed scope: user (nameJSON: the name
// as a JSON string) joins by id, or by invite code when code is given.
type joinCall struct {
	roomScope
	user, nameJSON, code string
}

func (joinCall) Script() *redisx.Script { return roomJoin }
func (c joinCall) KeysArgs() ([]string, []any) {
	return c.with(c.user, c.nameJSON, c.code)
}

// removeCall is player_remove.lua, in an indexed scope: caller ("" the
// server) removes target (a playerId; "" itself) for reason (left,
// kicked), banning target's user when ban.
type removeCall struct {
	roomScope
	caller, target, reason string
	ban                    bool
}

func (removeCall) Script() *redisx.Script { return playerRemove }
func (c removeCall) KeysArgs() ([]string, []any) {
	return c.with(c.caller, c.target, c.reason, flag(c.ban), rooms.MaxBans)
}

// updateCall is room_update.lua, in an indexed scope: caller changes what
// changes names; newCode is the invite code a room made private gets.
type updateCall struct {
	roomScope
	caller  string
	changes roomChanges
	newCode string
}

// roomChanges are room_update.lua's ARGV[8..14]: "" for unchanged fields.
type roomChanges struct {
	name, nameJSON, status, locked, maxPlayers, visibility, attributes string
}

func (updateCall) Script() *redisx.Script { return roomUpdate }
func (c updateCall) KeysArgs() ([]string, []any) {
	ch := c.changes
	return c.with(c.caller, ch.name, ch.nameJSON, ch.status, ch.locked, ch.maxPlayers, ch.visibility, ch.attributes, c.newCode)
}

// deleteCall is room_delete.lua, in an indexed scope.
type deleteCall struct {
	roomScope
	caller string
}

func (deleteCall) Script() *redisx.Script        { return roomDelete }
func (c deleteCall) KeysArgs() ([]string, []any) { return c.with(c.caller) }

// patchCall is state_patch.lua: caller sets set and deletes del if the
// state's version is ifMatch (-1 any). Keys go sorted, so the state event
// lists them in a stable order.
type patchCall struct {
	roomScope
	caller  string
	ifMatch int64
	set     rooms.State
	del     []string
}

func (patchCall) Script() *redisx.Script { return statePatch }
func (c patchCall) KeysArgs() ([]string, []any) {
	args := []any{c.caller, c.ifMatch, rooms.MaxStateKeys, rooms.MaxStateBytes, len(c.set)}
	for _, k := range sortedKeys(c.set) {
		args = append(args, k, []byte(c.set[k]))
	}
	del := slices.Clone(c.del)
	sort.Strings(del)
	for _, k := range del {
		args = append(args, k)
	}
	return c.with(args...)
}

// streamOpenCall is stream_open.lua: user ("" the server) opens or renews
// stream with a lease of ttlMs, reading "none", a "snapshot" or "after"
// cursor (at most limit events replayed).
type streamOpenCall struct {
	roomScope
	user, stream string
	ttlMs        int64
	read         string
	cursor       sse.Cursor
	limit        int
}

func (streamOpenCall) Script() *redisx.Script { return streamOpen }
func (c streamOpenCall) KeysArgs() ([]string, []any) {
	return c.with(c.user, c.stream, c.ttlMs, c.read, c.cursor.Version, c.cursor.Tag, c.limit, rooms.MaxStreamsPerPlayer)
}

// streamCloseCall is stream_close.lua: player's stream closes; the
// player is marked disconnected after graceMs, announced after
// debounceMs.
type streamCloseCall struct {
	roomScope
	player            int
	stream            string
	graceMs, debounce int64
}

func (streamCloseCall) Script() *redisx.Script { return streamClose }
func (c streamCloseCall) KeysArgs() ([]string, []any) {
	return c.with(c.player, c.stream, c.graceMs, c.debounce)
}

// reserveSeatsCall is seats_reserve.lua, in an indexed scope: caller
// ("" the server) holds seats for users for ttlMs, the room's players
// and held seats at most seatCap after (0: maxPlayers only); the matcher's
// backfill refuses the users the room banned (and, on its first hold, the
// users it has or holds a seat for) and a locked room; a match room's
// hold refuses the tickets with a banned user and none in the room,
// releasing their users' seats.
type reserveSeatsCall struct {
	roomScope
	caller  string
	ttlMs   int64
	seatCap int
	matcher string // "", or the matcher's: a backfill's "b" (its first hold), "r" (a repair); a match room's "m" (seats_reserve.lua)
	users   []string
}

func (reserveSeatsCall) Script() *redisx.Script { return seatsReserve }
func (c reserveSeatsCall) KeysArgs() ([]string, []any) {
	seatCap := ""
	if c.seatCap > 0 {
		seatCap = strconv.Itoa(c.seatCap)
	}
	args := []any{c.caller, c.ttlMs, seatCap, c.matcher}
	for _, u := range c.users {
		args = append(args, u)
	}
	return c.with(args...)
}

// sweepCall is presence_sweep.lua, in an indexed scope.
type sweepCall struct {
	roomScope
	graceMs int64
}

func (sweepCall) Script() *redisx.Script        { return presenceSweep }
func (c sweepCall) KeysArgs() ([]string, []any) { return c.with(c.graceMs) }

// messageSendCall is message_send.lua: caller sends a message of type
// (typeJSON, as a JSON string) with data to the players to (none: all);
// once per key ("<Idempotency-Key> <userId>", "" none) within the keys'
// window, a message whose digest (messageDigest) differs from the key's
// first being refused.
type messageSendCall struct {
	roomScope
	caller, typeJSON string
	data             []byte
	to               []int
	key, digest      string
}

func (messageSendCall) Script() *redisx.Script { return messageSend }
func (c messageSendCall) KeysArgs() ([]string, []any) {
	args := []any{c.caller, c.typeJSON, c.data, messageLogLen, c.key, c.digest,
		rooms.MessageKeyWindow.Milliseconds(), rooms.MessageKeysKept}
	for _, to := range c.to {
		args = append(args, to)
	}
	return c.with(args...)
}

// lifecycleCall is room_lifecycle.lua, in an indexed scope, under life.
type lifecycleCall struct {
	roomScope
	life Lifecycle
}

func (lifecycleCall) Script() *redisx.Script        { return roomLifecycle }
func (c lifecycleCall) KeysArgs() ([]string, []any) { return c.with(c.life.argv()...) }

// roomRepairCall is room_repair.lua, in an indexed scope.
type roomRepairCall struct{ roomScope }

func (roomRepairCall) Script() *redisx.Script        { return roomRepair }
func (c roomRepairCall) KeysArgs() ([]string, []any) { return c.with() }

// messageListCall is message_list.lua: caller reads the room's messages
// up to the version end ("+" all), at most count.
type messageListCall struct {
	room, users, messages string
	caller, end           string
	count                 int
}

func (messageListCall) Script() *redisx.Script { return messageList }
func (c messageListCall) KeysArgs() ([]string, []any) {
	return []string{c.room, c.users, c.messages}, []any{c.caller, c.end, c.count}
}
