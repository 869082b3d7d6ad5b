package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/rooms"
)

// replyStatus splits a script reply into its status and the rest, mapping
// error statuses to the domain's sentinel errors.
func replyStatus(v any) ([]any, error) {
	arr, ok := v.([]any)
	if !ok || len(arr) == 0 {
		return nil, fmt.Errorf("store: unexpected script reply %T", v)
	}
	status, _ := arr[0].(string)
	if status == "OK" {
		return arr[1:], nil
	}
	if err, ok := scriptErrors[status]; ok {
		return nil, err
	}
	if status == "TO_NOT_MEMBER" && len(arr) == 2 {
		return nil, rooms.Invalid("to", "player %v is not in the room", arr[1])
	}
	return nil, fmt.Errorf("store: unexpected script status %q", status)
}

// scriptErrors maps script statuses to domain errors. CODE_TAKEN and
// ID_TAKEN are retried by the caller and never reach here.
var scriptErrors = map[string]error{
	"ROOM_NOT_FOUND":      rooms.ErrRoomNotFound,
	"NOT_A_MEMBER":        rooms.ErrNotMember,
	"NOT_OWNER":           rooms.ErrNotOwner,
	"PLAYER_NOT_FOUND":    rooms.ErrPlayerNotFound,
	"ROOM_FULL":           rooms.ErrRoomFull,
	"ROOM_NOT_JOINABLE":   rooms.ErrNotJoinable,
	"INVALID_TRANSITION":  rooms.ErrInvalidTransition,
	"ROOM_FINISHED":       rooms.ErrRoomFinished,
	"TOO_MANY_STREAMS":    rooms.ErrTooManyStreams,
	"VERSION_MISMATCH":    rooms.ErrVersionMismatch,
	"STATE_KEY_FORBIDDEN": rooms.ErrStateKeyForbidden,
	"PAYLOAD_TOO_LARGE":   fmt.Errorf("state over %d keys or %d bytes: %w", rooms.MaxStateKeys, rooms.MaxStateBytes, rooms.ErrTooLarge),
	"KICK_SELF":           rooms.Invalid("playerId", "the owner cannot kick themself; leave instead"),
	"MAX_BELOW_COUNT":     rooms.Invalid("maxPlayers", "must not be below the current playerCount plus the seats reserved"),
	"CODE_TAKEN":          errCodeTaken,
	"ID_TAKEN":            errCodeTaken,
	"JOINABLE_EXISTS":     errJoinableExists,
	"BANNED":              rooms.ErrBanned,
	"BANS_FULL":           rooms.Invalid("ban", "the room already holds %d bans, the most it may", rooms.MaxBans),
	"NONE":                errNothingPicked,
	"TAKEN":               errPickTaken,
}

// quick_join.lua's refusals, turned into outcomes by pickAndJoin: no
// joinable room and none to create, or every candidate taken before the
// script ran.
var (
	errNothingPicked = errors.New("store: no room to join and none to create")
	errPickTaken     = errors.New("store: every candidate was taken")
)

// refused reports whether err is a refusal a script answered (one of
// scriptErrors): the script changed nothing. Any other error (a timeout, a
// lost connection, a failover) may have come after the script ran.
func refused(err error) bool {
	for _, e := range scriptErrors {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// pairs turns a flat HGETALL reply into a map.
func pairs(v any) map[string]string {
	arr, _ := v.([]any)
	m := make(map[string]string, len(arr)/2)
	for i := 0; i+1 < len(arr); i += 2 {
		k, _ := arr[i].(string)
		val, _ := arr[i+1].(string)
		m[k] = val
	}
	return m
}

// roomFields are the fields of a room's hash a room is built from, in the
// order of roomHash: a room read reads these (HMGET) rather than the whole
// hash (HGETALL), which costs a map and a string per field name and the
// fields no answer shows.
var roomFields = []string{"n", "m", "r", "vi", "st", "lk", "mx", "pc", "ow", "po", "cd", "cr", "up", "ver", "sv", "at", "rv"}

// The index of each of roomFields in a roomHash.
const (
	fName = iota
	fMode
	fRegion
	fVisibility
	fStatus
	fLocked
	fMax
	fCount
	fOwner
	fPolicy
	fCode
	fCreated
	fUpdated
	fVersion
	fStateVersion
	fAttributes
	fReserved
	nRoomFields
)

// roomHash is a room's hash as its values of roomFields, "" for a field
// not set; nil for a room that is gone.
type roomHash []string

// roomHashArgs are roomFields as command arguments, converted to
// interfaces once: go-redis's HMGet converts (allocates) every field name
// on every call.
var roomHashArgs = func() []any {
	a := make([]any, len(roomFields))
	for i, f := range roomFields {
		a[i] = f
	}
	return a
}()

// queueRoomHash queues the read of a room's hash (key) on p: HMGET of
// roomFields, read as strings ("" for a field not set: a StringSliceCmd
// holds each value once, where HMGet's SliceCmd boxes each again).
func queueRoomHash(ctx context.Context, p redis.Pipeliner, key string) *redis.StringSliceCmd {
	args := make([]any, 2, 2+len(roomHashArgs))
	args[0], args[1] = "hmget", key
	cmd := redis.NewStringSliceCmd(ctx, append(args, roomHashArgs...)...)
	_ = p.Process(ctx, cmd) // a pipeline only queues it; its error is the command's
	return cmd
}

// roomHashOf reads a queueRoomHash: nil when no field is set (the room is
// gone).
func roomHashOf(c *redis.StringSliceCmd) roomHash {
	vals := c.Val()
	if len(vals) != nRoomFields {
		return nil
	}
	for _, v := range vals {
		if v != "" {
			return roomHash(vals)
		}
	}
	return nil
}

// roomHashFrom picks roomFields out of a whole hash (HGETALL): nil when it
// is empty.
func roomHashFrom(m map[string]string) roomHash {
	if len(m) == 0 {
		return nil
	}
	h := make(roomHash, nRoomFields)
	for i, f := range roomFields {
		h[i] = m[f]
	}
	return h
}

// decodeRoom builds a room from its hash, its players and users (userId →
// playerId) hashes and its connected players.
func decodeRoom(id string, h roomHash, players, users map[string]string, conn []string) (rooms.Room, error) {
	created := atoi64(h[fCreated])
	r := rooms.Room{
		ID: id, Name: h[fName], Mode: h[fMode], Region: h[fRegion],
		Visibility: rooms.Visibility(h[fVisibility]), Status: rooms.Status(h[fStatus]), Locked: h[fLocked] == "1",
		MaxPlayers: atoi(h[fMax]), PlayerCount: atoi(h[fCount]), ReservedSeats: atoi(h[fReserved]), OwnerPlayerID: atoi(h[fOwner]),
		StatePolicy: rooms.StatePolicy(h[fPolicy]), InviteCode: h[fCode],
		CreatedAt: time.UnixMicro(created).Truncate(time.Millisecond).UTC(),
		UpdatedAt: time.UnixMilli(atoi64(h[fUpdated])).UTC(),
		Version:   atoi64(h[fVersion]), StateVersion: atoi64(h[fStateVersion]),
	}
	if err := decodeAttributes(h[fAttributes], &r.Attributes); err != nil {
		return rooms.Room{}, fmt.Errorf("store: room %s attributes: %w", id, err)
	}
	if len(players) == 0 {
		r.Players = []rooms.Player{} // a listing's room (no allocation)
		return r, nil
	}
	ps, err := decodePlayers(players, users, conn, created/1000)
	r.Players = ps
	return r, err
}

// decodeAttributes decodes a room's attributes; "{}" (most rooms) without
// a decoder.
func decodeAttributes(s string, attrs *map[string]any) error {
	if s == "{}" {
		*attrs = map[string]any{}
		return nil
	}
	return decodeJSON(s, attrs)
}

// decodePlayers builds the players from the players hash (playerId →
// "<joinedAt, ms after the room's creation>|<name as a JSON string>"), the
// users hash (userId → playerId), the connected playerIds and the room's
// creation (epoch ms), ordered by playerId. Users and connections are
// matched by binary search over the sorted players: no map per read.
func decodePlayers(players, users map[string]string, conn []string, created int64) ([]rooms.Player, error) {
	out := make([]rooms.Player, 0, len(players))
	for pid, rec := range players {
		p, err := decodePlayer(pid, rec, created)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b rooms.Player) int { return a.PlayerID - b.PlayerID })
	find := func(pid string) *rooms.Player {
		id, err := strconv.Atoi(pid)
		if err != nil {
			return nil
		}
		i, ok := slices.BinarySearchFunc(out, id, func(p rooms.Player, id int) int { return p.PlayerID - id })
		if !ok {
			return nil
		}
		return &out[i]
	}
	for uid, pid := range users {
		if p := find(pid); p != nil {
			p.UserID = uid
		}
	}
	for _, pid := range conn {
		if p := find(pid); p != nil {
			p.Connected = true
		}
	}
	return out, nil
}

func decodePlayer(pid, rec string, created int64) (rooms.Player, error) {
	id, err := strconv.Atoi(pid)
	ms, name, ok := strings.Cut(rec, "|")
	joined, err2 := strconv.ParseInt(ms, 10, 64)
	if err != nil || !ok || err2 != nil {
		return rooms.Player{}, fmt.Errorf("store: player %s: record %q", pid, rec)
	}
	p := rooms.Player{PlayerID: id, JoinedAt: time.UnixMilli(created + joined).UTC()}
	if len(name) >= 2 && name[0] == '"' && name[len(name)-1] == '"' && !strings.ContainsRune(name, '\\') {
		p.Name = name[1 : len(name)-1] // no escapes: the JSON string is the name quoted
		return p, nil
	}
	if err := json.Unmarshal([]byte(name), &p.Name); err != nil {
		return rooms.Player{}, fmt.Errorf("store: player %s name: %w", pid, err)
	}
	return p, nil
}

// decodeJSON decodes keeping numbers exact (json.Number).
func decodeJSON(s string, v any) error {
	if s == "" {
		return nil
	}
	d := json.NewDecoder(bytes.NewReader([]byte(s)))
	d.UseNumber()
	return d.Decode(v)
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

func atoi64(s string) int64 {
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}

// toInt64 reads an integer reply, or a string holding one (HGET in Lua).
func toInt64(v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case string:
		return atoi64(x)
	}
	return 0
}
