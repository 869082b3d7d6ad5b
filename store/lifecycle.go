package store

import (
	"context"
	"strconv"
	"time"

	"github.com/realsync/realsync/players"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/store/internal/roomlua"
)

// Lifecycle says when the janitor closes rooms and drops idle event logs.
// Zero durations switch a rule off. Use the same values on every instance.
type Lifecycle struct {
	// IdleTimeout closes a room (room_closed, reason expired) with no
	// mutation and no connected player for that long.
	IdleTimeout time.Duration
	// FinishedRetention closes a finished room (reason finished) that long
	// after it finished.
	FinishedRetention time.Duration
	// MaxLifetime closes a room (reason expired) that long after its
	// creation, however active.
	MaxLifetime time.Duration
	// LogIdleTrim drops the event log of a room with no mutation and no
	// connected player for that long (a later resume gets a snapshot).
	LogIdleTrim time.Duration
}

// DefaultLogIdleTrim is when an idle room's event log is dropped.
const DefaultLogIdleTrim = time.Minute

// firstCheck is when the janitor first looks at a new room: ms from its
// creation, or "inf" when no rule applies.
func (l Lifecycle) firstCheck() string {
	first := time.Duration(0)
	for _, d := range []time.Duration{l.IdleTimeout, l.MaxLifetime, l.LogIdleTrim} {
		if d > 0 && (first == 0 || d < first) {
			first = d
		}
	}
	if first == 0 {
		return "inf"
	}
	return strconv.FormatInt(first.Milliseconds(), 10)
}

// rules are l as room_lifecycle.lua takes them (roomlua.LifecycleCall).
func (l Lifecycle) rules() [4]int64 {
	return [4]int64{l.IdleTimeout.Milliseconds(), l.FinishedRetention.Milliseconds(),
		l.MaxLifetime.Milliseconds(), l.LogIdleTrim.Milliseconds()}
}

// lifecycleRoom runs room_lifecycle for room id of shard; returns what it
// did: "lifetime", "finished" or "expired" (closed: its members are told
// on their personal streams, room_closed), "trimmed" (log dropped), "none"
// or "gone".
func (s *Store) lifecycleRoom(ctx context.Context, shard int, id string) (string, error) {
	_, scope, err := s.scopeOf(ctx, id)
	if err != nil {
		return "", err
	}
	rest, err := s.result(ctx, roomlua.LifecycleCall{Scope: scope, Rules: s.life.rules()})
	if err != nil {
		return "", err
	}
	action, _ := rest[0].(string)
	reason := rooms.ClosedExpired
	if action == "finished" {
		reason = rooms.ClosedFinished
	}
	if uids := roomlua.Strings(rest[1:]); len(uids) > 0 {
		// as rooms.Service.Delete's notices: the room's stream told its
		// connected members; a store failure here loses the personal
		// copy, and does not hold up the janitor's pass
		ev := players.RoomClosedEvent{UserEventHeader: players.NewHeader(players.EventRoomClosed, "", time.Now()),
			RoomID: id, Reason: reason}
		_ = s.ulog.SendToMany(ctx, uids, ev)
	}
	return action, nil
}

// repairRoom runs room_repair.lua on room id of shard (the repair walk's
// Config.Room): the kinds of what it repaired; rooms.ErrRoomNotFound when
// the room is gone.
func (s *Store) repairRoom(ctx context.Context, shard int, id string) ([]string, error) {
	_, scope, err := s.scopeOf(ctx, id)
	if err != nil {
		return nil, err
	}
	rest, err := s.result(ctx, roomlua.RoomRepairCall{Scope: scope})
	if err != nil {
		return nil, err
	}
	return roomlua.Strings(rest), nil
}
