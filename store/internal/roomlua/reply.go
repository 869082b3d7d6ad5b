package roomlua

import (
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/store/internal/layout"
	"github.com/realsync/realsync/store/internal/redisx"
)

// Reply decodes the status reply of a script's cmd, run or queued: what
// follows "OK", or the error its status names (ReplyStatus), or Redis'
// own (redisx.Wrap).
func Reply(cmd *redis.Cmd) ([]any, error) {
	res, err := cmd.Result()
	if err != nil {
		return nil, redisx.Wrap(err)
	}
	return ReplyStatus(res)
}

// Strings is the rest of a reply whose items are strings (userIds,
// kinds), each "" where one is not.
func Strings(rest []any) []string {
	out := make([]string, len(rest))
	for i, v := range rest {
		out[i], _ = v.(string)
	}
	return out
}

// ReplyStatus splits a script reply into its status and the rest, mapping
// error statuses to the domain's sentinel errors.
func ReplyStatus(v any) ([]any, error) {
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
	"KICK_SELF":           rooms.Invalid("playerId", "must not be the owner's own: the owner leaves instead"),
	"MAX_BELOW_COUNT":     rooms.Invalid("maxPlayers", "must not be below the current playerCount plus the seats reserved"),
	"CODE_TAKEN":          ErrCodeTaken,
	"ID_TAKEN":            ErrIDTaken,
	"JOINABLE_EXISTS":     ErrJoinableExists,
	"BANNED":              rooms.ErrBanned,
	"KEY_REUSED":          rooms.ErrKeyReused,
	"BANS_FULL":           rooms.Invalid("ban", "the room already holds %d bans, the most it may", rooms.MaxBans),
	"NONE":                ErrNothingPicked,
	"NONE_BANNED":         ErrAllBanned,
	"TAKEN":               ErrPickTaken,
}

// CollisionRetries is how many fresh ids or invite codes a create tries
// while the script answers ErrCodeTaken.
const CollisionRetries = 5

// ErrCodeTaken: a fresh room id or invite code collided; the caller
// retries with new random ones (at most CollisionRetries times). ErrIDTaken is ErrCodeTaken for the id: a
// room, or a closed room's log, holds it. ErrJoinableExists: a
// quick-join's create found a joinable room meanwhile.
var (
	ErrCodeTaken      = errors.New("store: room id or invite code taken")
	ErrIDTaken        = fmt.Errorf("%w: the id", ErrCodeTaken)
	ErrJoinableExists = errors.New("store: a joinable room exists")
)

// quick_join.lua's refusals, turned into outcomes by the store's
// quick-join: no joinable room and none to create, or every candidate
// taken before the script ran.
var (
	ErrNothingPicked = errors.New("store: no room to join and none to create")
	ErrAllBanned     = errors.New("store: no room to join but rooms that banned the caller")
	ErrPickTaken     = errors.New("store: every candidate was taken")
)

// Refused reports whether err is a refusal a script answered (one of
// scriptErrors): the script made no change the caller asked for (at most
// it dropped index entries of rooms that are gone: room_create's
// JOINABLE_EXISTS). Any other error (a timeout, a lost connection, a
// failover) may have come after the script ran.
func Refused(err error) bool {
	for _, e := range scriptErrors {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// NotRun reports whether err says a create's or join's script certainly
// did not do what it was sent to do, so the quota reservation made for it
// is released: the script refused (Refused), or it was never sent, its
// caller having given up first (a client that hung up while the script
// waited its turn: redisx.NeverSent). Any other error (a lost reply, a
// read timeout) leaves the outcome unknown: the reservation is kept, and
// the holdings check drops it within a minute if no room took it.
func NotRun(err error) bool {
	return Refused(err) || redisx.NeverSent(err)
}

// Pairs turns a flat HGETALL reply into a map.
func Pairs(v any) map[string]string {
	arr, _ := v.([]any)
	m := make(map[string]string, len(arr)/2)
	for i := 0; i+1 < len(arr); i += 2 {
		k, _ := arr[i].(string)
		val, _ := arr[i+1].(string)
		m[k] = val
	}
	return m
}

// RefusedUsers is the users a backfill's seats_reserve refused (its
// {"REFUSED", userId...} reply), nil for any other reply.
func RefusedUsers(cmd *redis.Cmd) []string {
	arr, ok := cmd.Val().([]any)
	if !ok || len(arr) < 2 || arr[0] != "REFUSED" {
		return nil
	}
	out := make([]string, 0, len(arr)-1)
	for _, v := range arr[1:] {
		u, _ := v.(string)
		out = append(out, u)
	}
	return out
}

// LogEntry is one entry of a room's event or message log.
type LogEntry struct {
	Version int64
	Tag     string // the event log's only
	Data    string
}

// LogEntries decodes an XRANGE reply of a room's log: entries
// "<version>-0" with fields g (tag, event log only) and d (the event's
// JSON).
func LogEntries(v any) []LogEntry {
	arr, _ := v.([]any)
	out := make([]LogEntry, 0, len(arr))
	for _, x := range arr {
		e, _ := x.([]any)
		if len(e) != 2 {
			continue
		}
		id, _ := e[0].(string)
		ver, _ := strings.CutSuffix(id, "-0")
		f := Pairs(e[1])
		out = append(out, LogEntry{Version: layout.Atoi64(ver), Tag: f["g"], Data: f["d"]})
	}
	return out
}
