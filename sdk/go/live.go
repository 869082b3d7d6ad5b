package realsync

import (
	"encoding/json"
	"fmt"
	"slices"
)

// LiveRoom is a local copy of a room kept up to date from its event
// stream: pass every item of a Stream to Apply. Not safe for concurrent
// use: apply and read from one goroutine, or guard it.
//
//	live := &realsync.LiveRoom{}
//	for ev, err := range s.Events() {
//		...
//		live.Apply(ev)
//	}
type LiveRoom struct {
	// Room is the room with its players (Room.Players), as GET
	// /v1/rooms/{roomId} would answer.
	Room Room
	// State is the room state at StateVersion.
	State        State
	StateVersion int64
	// Version is the room version of the last event applied.
	Version int64
	// Ready: a snapshot was applied (before it, Apply ignores changes).
	Ready bool
}

// Apply updates the copy with ev: a Snapshot replaces it, every room
// change updates it, messages and lifecycle items only move Version (or
// nothing). It returns an error only for a room_updated change that does
// not fit the Room type (a newer server's field of another type); the
// other changes of that event are applied.
func (l *LiveRoom) Apply(ev Event) error {
	if s, ok := ev.(*Snapshot); ok {
		l.Room, l.State, l.StateVersion, l.Version, l.Ready = s.Room, s.State, s.StateVersion, s.Version, true
		if l.State == nil {
			l.State = State{}
		}
		return nil
	}
	h, ok := ev.(headed)
	if !ok || !l.Ready {
		return nil
	}
	l.Version = max(l.Version, h.header().Version)
	l.Room.Version = l.Version
	switch ev := ev.(type) {
	case *StateChanged:
		for k, v := range ev.Set {
			l.State[k] = v
		}
		for _, k := range ev.Del {
			delete(l.State, k)
		}
		l.StateVersion = ev.StateVersion
	case *PlayerJoined:
		l.setPlayers(append(slices.DeleteFunc(l.players(), func(p Player) bool { return p.PlayerId == ev.Player.PlayerId }), ev.Player))
		if ev.ReservedSeats != nil {
			l.Room.ReservedSeats = *ev.ReservedSeats
		}
	case *SeatsReserved:
		l.Room.ReservedSeats = ev.ReservedSeats
	case *ReservationExpired:
		l.Room.ReservedSeats = ev.ReservedSeats
	case *PlayerLeft:
		l.setPlayers(slices.DeleteFunc(l.players(), func(p Player) bool { return p.PlayerId == ev.PlayerID }))
	case *PlayerConnected:
		l.setConnected(ev.PlayerID, true)
	case *PlayerDisconnected:
		l.setConnected(ev.PlayerID, false)
	case *RoomUpdated:
		return l.update(ev.Changes)
	}
	return nil
}

func (l *LiveRoom) players() []Player {
	if l.Room.Players == nil {
		return nil
	}
	return *l.Room.Players
}

func (l *LiveRoom) setPlayers(ps []Player) {
	l.Room.Players = &ps
	l.Room.PlayerCount = len(ps)
}

func (l *LiveRoom) setConnected(id int, on bool) {
	for i, p := range l.players() {
		if p.PlayerId == id {
			(*l.Room.Players)[i].Connected = on
		}
	}
}

// update merges a room_updated event's changes into Room, field by field
// as the JSON names them, so that a field this package does not know is
// no error.
func (l *LiveRoom) update(changes map[string]json.RawMessage) error {
	var firstErr error
	for name, value := range changes {
		one, _ := json.Marshal(map[string]json.RawMessage{name: value})
		if name == "attributes" {
			l.Room.Attributes = nil // replaced whole, not merged
		}
		if err := json.Unmarshal(one, &l.Room); err != nil && firstErr == nil {
			firstErr = fmt.Errorf("realsync: room_updated %s: %w", name, err)
		}
	}
	return firstErr
}
