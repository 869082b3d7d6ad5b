package roomlua

import (
	"slices"
	"sort"
	"strconv"

	"github.com/realsync/realsync/internal/jsonout"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/sse"

	"github.com/realsync/realsync/store/internal/layout"
	"github.com/realsync/realsync/store/internal/redisx"
)

// The descriptors of every script of lua/: one struct per script, its
// fields the script's keys and arguments by name, laid out as KEYS and
// ARGV by its KeysArgs in the order the Lua's header documents. A new
// script gets one here; calls_test.go checks that every script has
// exactly one.

// CreateCall is room_create.lua, in an indexed scope.
type CreateCall struct {
	Scope
	Room NewRoom
}

// NewRoom is room_create.lua's ARGV[7..]: the room P, created by Owner,
// with its attributes encoded, its invite code ("" public), the state's
// size, OnlyIfNone (refused with JOINABLE_EXISTS when a joinable room of
// its mode and region exists), Digest (a keyed create's, of its creator,
// key and body: the room the shard's create keys name for it, when Owner
// is in it, is answered instead; "" not keyed; never with OnlyIfNone) and
// FirstCheck (when the janitor first looks at it: ms after its creation,
// or "inf").
type NewRoom struct {
	P          rooms.NewRoom
	Owner      rooms.User
	Attrs      []byte
	Code       string
	StateSize  int
	OnlyIfNone bool
	Digest     string
	FirstCheck string
}

func (n NewRoom) args() []any {
	how := flag(n.OnlyIfNone)
	if n.Digest != "" {
		how = "k" + n.Digest
	}
	args := []any{n.P.Name, n.P.Mode, n.P.Region, string(n.P.Visibility),
		n.P.MaxPlayers, string(n.P.StatePolicy), n.Attrs, n.Code, n.Owner.ID, JSONString(n.Owner.Name), n.StateSize,
		how, n.FirstCheck}
	for _, k := range sortedKeys(n.P.State) {
		args = append(args, k, []byte(n.P.State[k]))
	}
	return args
}

func (CreateCall) Script() *redisx.Script        { return roomCreate }
func (c CreateCall) KeysArgs() ([]string, []any) { return c.with(c.Room.args()...) }

// JoinCall is room_join.lua, in an indexed scope: User (NameJSON: the name
// as a JSON string) joins by id, or by invite code when Code is given.
type JoinCall struct {
	Scope
	User, NameJSON, Code string
	// Picked: the server picked the room (a quick-join), so a room that
	// kicked User refuses them as BANNED.
	Picked bool
}

func (JoinCall) Script() *redisx.Script { return roomJoin }
func (c JoinCall) KeysArgs() ([]string, []any) {
	picked := ""
	if c.Picked {
		picked = "p"
	}
	return c.with(c.User, c.NameJSON, c.Code, picked)
}

// RemoveCall is player_remove.lua, in an indexed scope: Caller ("" the
// server) removes Target (a playerId; "" itself) for Reason (left,
// kicked), banning Target's user when Ban.
type RemoveCall struct {
	Scope
	Caller, Target, Reason string
	Ban                    bool
}

func (RemoveCall) Script() *redisx.Script { return playerRemove }
func (c RemoveCall) KeysArgs() ([]string, []any) {
	return c.with(c.Caller, c.Target, c.Reason, flag(c.Ban), rooms.MaxBans)
}

// UpdateCall is room_update.lua, in an indexed scope: Caller changes what
// Changes names; NewCode is the invite code a room made private gets.
type UpdateCall struct {
	Scope
	Caller  string
	Changes RoomChanges
	NewCode string
}

// RoomChanges are room_update.lua's ARGV[8..14]: "" for unchanged fields.
type RoomChanges struct {
	Name, NameJSON, Status, Locked, MaxPlayers, Visibility, Attributes string
}

func (UpdateCall) Script() *redisx.Script { return roomUpdate }
func (c UpdateCall) KeysArgs() ([]string, []any) {
	ch := c.Changes
	return c.with(c.Caller, ch.Name, ch.NameJSON, ch.Status, ch.Locked, ch.MaxPlayers, ch.Visibility, ch.Attributes, c.NewCode)
}

// DeleteCall is room_delete.lua, in an indexed scope.
type DeleteCall struct {
	Scope
	Caller string
}

func (DeleteCall) Script() *redisx.Script        { return roomDelete }
func (c DeleteCall) KeysArgs() ([]string, []any) { return c.with(c.Caller) }

// PatchCall is state_patch.lua: Caller sets Set and deletes Del if the
// state's version is IfMatch (-1 any). Keys go sorted, so the state event
// lists them in a stable order.
type PatchCall struct {
	Scope
	Caller  string
	IfMatch int64
	Set     rooms.State
	Del     []string
}

func (PatchCall) Script() *redisx.Script { return statePatch }
func (c PatchCall) KeysArgs() ([]string, []any) {
	args := []any{c.Caller, c.IfMatch, rooms.MaxStateKeys, rooms.MaxStateBytes, len(c.Set)}
	for _, k := range sortedKeys(c.Set) {
		args = append(args, k, []byte(c.Set[k]))
	}
	del := slices.Clone(c.Del)
	sort.Strings(del)
	for _, k := range del {
		args = append(args, k)
	}
	return c.with(args...)
}

// StreamOpenCall is stream_open.lua: User ("" the server) opens or renews
// Stream with a lease of TTLMs, reading "none", a "snapshot" or "after"
// Cursor (at most Limit events replayed).
type StreamOpenCall struct {
	Scope
	User, Stream string
	TTLMs        int64
	Read         string
	Cursor       sse.Cursor
	Limit        int
}

func (StreamOpenCall) Script() *redisx.Script { return streamOpen }
func (c StreamOpenCall) KeysArgs() ([]string, []any) {
	return c.with(c.User, c.Stream, c.TTLMs, c.Read, c.Cursor.Version, c.Cursor.Tag, c.Limit, rooms.MaxStreamsPerPlayer)
}

// StreamCloseCall is stream_close.lua: Player's Stream closes; the
// player is marked disconnected after GraceMs, announced after
// DebounceMs.
type StreamCloseCall struct {
	Scope
	Player              int
	Stream              string
	GraceMs, DebounceMs int64
}

func (StreamCloseCall) Script() *redisx.Script { return streamClose }
func (c StreamCloseCall) KeysArgs() ([]string, []any) {
	return c.with(c.Player, c.Stream, c.GraceMs, c.DebounceMs)
}

// ReserveSeatsCall is seats_reserve.lua, in an indexed scope: Caller
// ("" the server) holds seats for Users for TTLMs, the room's players
// and held seats at most SeatCap after (0: maxPlayers only); the matcher's
// backfill refuses the users the room banned (and, on its first hold, the
// users it has or holds a seat for) and a locked room; a match room's
// hold refuses the tickets with a banned user and none in the room,
// releasing their users' seats.
type ReserveSeatsCall struct {
	Scope
	Caller  string
	TTLMs   int64
	SeatCap int
	Matcher string // "", or the matcher's: a backfill's "b" (its first hold), "r" (a repair); a match room's "m", "s" (a committed match's repair), "x" (seats released; seats_reserve.lua)
	Users   []string
}

func (ReserveSeatsCall) Script() *redisx.Script { return seatsReserve }
func (c ReserveSeatsCall) KeysArgs() ([]string, []any) {
	seatCap := ""
	if c.SeatCap > 0 {
		seatCap = strconv.Itoa(c.SeatCap)
	}
	args := []any{c.Caller, c.TTLMs, seatCap, c.Matcher}
	for _, u := range c.Users {
		args = append(args, u)
	}
	return c.with(args...)
}

// SweepCall is presence_sweep.lua, in an indexed scope.
type SweepCall struct {
	Scope
	GraceMs int64
}

func (SweepCall) Script() *redisx.Script        { return presenceSweep }
func (c SweepCall) KeysArgs() ([]string, []any) { return c.with(c.GraceMs) }

// MessageLogLen caps a room's message log (MAXLEN ~ keeps at least this).
const MessageLogLen = rooms.MessageHistoryMin

// MessageSendCall is message_send.lua: Caller sends a message of type
// (TypeJSON, as a JSON string) with Data to the players To (none: all);
// once per Key ("<Idempotency-Key> <userId>", "" none) within the keys'
// window, a message whose Digest differs from the key's first being
// refused; a keyed message carries MessageID (rooms.MessageID).
type MessageSendCall struct {
	Scope
	Caller, TypeJSON       string
	Data                   []byte
	To                     []int
	Key, Digest, MessageID string
}

func (MessageSendCall) Script() *redisx.Script { return messageSend }
func (c MessageSendCall) KeysArgs() ([]string, []any) {
	args := []any{c.Caller, c.TypeJSON, c.Data, MessageLogLen, c.Key, c.Digest,
		rooms.MessageKeyWindow.Milliseconds(), rooms.MessageKeysKept, c.MessageID}
	for _, to := range c.To {
		args = append(args, to)
	}
	return c.with(args...)
}

// LifecycleCall is room_lifecycle.lua, in an indexed scope, under the
// rules Rules: the idle timeout, the finished rooms' retention, the
// longest lifetime and the log's idle trim, each in ms (0: off).
type LifecycleCall struct {
	Scope
	Rules [4]int64
}

func (LifecycleCall) Script() *redisx.Script { return roomLifecycle }
func (c LifecycleCall) KeysArgs() ([]string, []any) {
	return c.with(c.Rules[0], c.Rules[1], c.Rules[2], c.Rules[3])
}

// RoomRepairCall is room_repair.lua, in an indexed scope.
type RoomRepairCall struct{ Scope }

func (RoomRepairCall) Script() *redisx.Script        { return roomRepair }
func (c RoomRepairCall) KeysArgs() ([]string, []any) { return c.with() }

// MessageListCall is message_list.lua: Caller reads the room's messages
// up to the version End ("+" all), at most Count.
type MessageListCall struct {
	Room, Users, Messages string
	Caller, End           string
	Count                 int
}

func (MessageListCall) Script() *redisx.Script { return messageList }
func (c MessageListCall) KeysArgs() ([]string, []any) {
	return []string{c.Room, c.Users, c.Messages}, []any{c.Caller, c.End, c.Count}
}

// QuickJoinCall is quick_join.lua's descriptor: User (a player) with
// NameJSON (the name as a JSON string) joins the best room of (Mode,
// Region) in its stripe Shard, or the first of Candidates that is still
// joinable when given, or creates Create as CreateID when there is none
// (CreateID "": never create).
type QuickJoinCall struct {
	Env
	Shard        int
	Mode, Region string
	User         string
	NameJSON     string
	Candidates   []string
	CreateID     string
	Create       NewRoom
}

func (QuickJoinCall) Script() *redisx.Script { return quickJoin }

// KeysArgs: the prelude's KEYS and ARGV of a join, built for a room id of
// "" (the script appends the id it picks), then the candidates, then what
// to create.
func (c QuickJoinCall) KeysArgs() ([]string, []any) {
	args := []any{"", c.Keys.Channel(c.Shard, ""), c.PubCmd, layout.EventTag(), c.LogArgs[0], c.LogArgs[1],
		c.User, c.NameJSON, "", len(c.Candidates)}
	for _, id := range c.Candidates {
		args = append(args, id)
	}
	args = append(args, c.CreateID)
	if c.CreateID != "" {
		args = append(args, c.Create.args()...)
	}
	return c.withOutbox(c.Shard, c.Keys.RoomKeysWithIndexes(c.Shard, "", c.Mode, c.Region)), args
}

func flag(b bool) string {
	if b {
		return "1"
	}
	return ""
}

// JSONString is s as a JSON string (jsonout's: <, > and & as they are).
func JSONString(s string) string {
	b, _ := jsonout.Marshal(s)
	return string(b)
}

func sortedKeys(m rooms.State) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
