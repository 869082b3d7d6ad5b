package layout

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/rooms"
)

// A room's hash (the room record the scripts keep,
// store/internal/roomlua/lua/prelude.lua) read and decoded into a
// rooms.Room.

// roomFields are the fields of a room's hash a room is built from, in the
// order of RoomHash: a room read reads these (HMGET) rather than the whole
// hash (HGETALL), which costs a map and a string per field name and the
// fields no answer shows.
var roomFields = []string{"n", "m", "r", "vi", "st", "lk", "mx", "pc", "ow", "po", "cd", "cr", "up", "ver", "sv", "at", "rv"}

// The index of each of roomFields in a RoomHash.
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

// RoomHash is a room's hash as its values of roomFields, "" for a field
// not set; nil for a room that is gone.
type RoomHash []string

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

// RoomHashFields are the fields a room's hash is read by, as command
// arguments (redisx.HMGet, read by RoomHashOf). The slice is shared:
// callers pass it on, never change it.
func RoomHashFields() []any { return roomHashArgs }

// RoomHashOf reads a room's hash read by its RoomHashFields: nil when no
// field is set (the room is gone).
func RoomHashOf(c *redis.StringSliceCmd) RoomHash {
	vals := c.Val()
	if len(vals) != nRoomFields {
		return nil
	}
	for _, v := range vals {
		if v != "" {
			return RoomHash(vals)
		}
	}
	return nil
}

// RoomHashFrom picks roomFields out of a whole hash (HGETALL): nil when it
// is empty.
func RoomHashFrom(m map[string]string) RoomHash {
	if len(m) == 0 {
		return nil
	}
	h := make(RoomHash, nRoomFields)
	for i, f := range roomFields {
		h[i] = m[f]
	}
	return h
}

// DecodeRoom builds a room from its hash, its players and users (userId →
// playerId) hashes and its connected players.
func DecodeRoom(id string, h RoomHash, players, users map[string]string, conn []string) (rooms.Room, error) {
	created := Atoi64(h[fCreated])
	r := rooms.Room{
		ID: id, Name: h[fName], Mode: h[fMode], Region: h[fRegion],
		Visibility: rooms.Visibility(h[fVisibility]), Status: rooms.Status(h[fStatus]), Locked: h[fLocked] == "1",
		MaxPlayers: Atoi(h[fMax]), PlayerCount: Atoi(h[fCount]), ReservedSeats: Atoi(h[fReserved]), OwnerPlayerID: Atoi(h[fOwner]),
		StatePolicy: rooms.StatePolicy(h[fPolicy]), InviteCode: h[fCode],
		CreatedAt: time.UnixMicro(created).Truncate(time.Millisecond).UTC(),
		UpdatedAt: time.UnixMilli(Atoi64(h[fUpdated])).UTC(),
		Version:   Atoi64(h[fVersion]), StateVersion: Atoi64(h[fStateVersion]),
	}
	attrs, err := decodeAttributes(h[fAttributes])
	if err != nil {
		return rooms.Room{}, fmt.Errorf("store: room %s attributes: %w", id, err)
	}
	r.Attributes = attrs
	if len(players) == 0 {
		r.Players = []rooms.Player{} // a listing's room (no allocation)
		return r, nil
	}
	ps, err := decodePlayers(players, users, conn, created/1000)
	r.Players = ps
	return r, err
}

// decodeAttributes decodes a room's attributes; "{}" (most rooms) without
// a decoder. It returns the map rather than filling a field of the room:
// a room whose field's address went to the decoder would be moved to the
// heap, one allocation of a whole room per room read.
func decodeAttributes(s string) (map[string]any, error) {
	if s == "{}" {
		return map[string]any{}, nil
	}
	var attrs map[string]any
	err := DecodeJSON(s, &attrs)
	return attrs, err
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

// DecodeJSON decodes keeping numbers exact (json.Number).
func DecodeJSON(s string, v any) error {
	if s == "" {
		return nil
	}
	d := json.NewDecoder(bytes.NewReader([]byte(s)))
	d.UseNumber()
	return d.Decode(v)
}

// Atoi reads a decimal field: 0 for one not set ("") or not a number.
// An empty field returns at once: strconv's error for it is an
// allocation, once per unset field of every room read.
func Atoi(s string) int {
	if s == "" {
		return 0
	}
	n, _ := strconv.Atoi(s)
	return n
}

// Atoi64 is Atoi for an int64 field.
func Atoi64(s string) int64 {
	if s == "" {
		return 0
	}
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}

// ToInt64 reads an integer reply, or a string holding one (HGET in Lua).
func ToInt64(v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case string:
		return Atoi64(x)
	}
	return 0
}
