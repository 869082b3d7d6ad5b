package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

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
	"MAX_BELOW_COUNT":     rooms.Invalid("maxPlayers", "must not be below the current playerCount"),
	"CODE_TAKEN":          errCodeTaken,
	"ID_TAKEN":            errCodeTaken,
	"JOINABLE_EXISTS":     errJoinableExists,
	"BANNED":              rooms.ErrBanned,
	"BANS_FULL":           rooms.Invalid("ban", "the room already holds %d bans, the most it may", rooms.MaxBans),
}

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

// decodeRoom builds a room from its hash, its players and users (userId →
// playerId) hashes and its connected players.
func decodeRoom(id string, h, players, users map[string]string, conn []string) (rooms.Room, error) {
	r := rooms.Room{
		ID: id, Name: h["n"], Mode: h["m"], Region: h["r"],
		Visibility: rooms.Visibility(h["vi"]), Status: rooms.Status(h["st"]), Locked: h["lk"] == "1",
		MaxPlayers: atoi(h["mx"]), PlayerCount: atoi(h["pc"]), OwnerPlayerID: atoi(h["ow"]),
		StatePolicy: rooms.StatePolicy(h["po"]), InviteCode: h["cd"],
		CreatedAt: time.UnixMicro(atoi64(h["cr"])).Truncate(time.Millisecond).UTC(),
		UpdatedAt: time.UnixMilli(atoi64(h["up"])).UTC(),
		Version:   atoi64(h["ver"]), StateVersion: atoi64(h["sv"]),
	}
	if err := decodeJSON(h["at"], &r.Attributes); err != nil {
		return rooms.Room{}, fmt.Errorf("store: room %s attributes: %w", id, err)
	}
	ps, err := decodePlayers(players, users, atoi64(h["cr"])/1000)
	connected := map[string]bool{}
	for _, pid := range conn {
		connected[pid] = true
	}
	for i := range ps {
		ps[i].Connected = connected[strconv.Itoa(ps[i].PlayerID)]
	}
	r.Players = ps
	return r, err
}

// decodePlayers builds the players from the players hash (playerId →
// "<joinedAt, ms after the room's creation>|<name as a JSON string>"), the
// users hash (userId → playerId) and the room's creation (epoch ms),
// ordered by playerId.
func decodePlayers(players, users map[string]string, created int64) ([]rooms.Player, error) {
	byPID := make(map[string]string, len(users))
	for uid, pid := range users {
		byPID[pid] = uid
	}
	out := make([]rooms.Player, 0, len(players))
	for pid, rec := range players {
		p, err := decodePlayer(pid, rec, created)
		if err != nil {
			return nil, err
		}
		p.UserID = byPID[pid]
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].PlayerID < out[j].PlayerID })
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
