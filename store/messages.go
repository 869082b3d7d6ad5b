package store

import (
	"context"
	"encoding/json"
	"strconv"
	"time"

	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/store/idempotency"
	"github.com/realsync/realsync/store/internal/layout"
	"github.com/realsync/realsync/store/internal/roomlua"
)

// SendMessage implements rooms.MessageStore: a keyed message's receipt
// names its entry in the room's log (store/idempotency's Receipt).
func (s *Store) SendMessage(ctx context.Context, u rooms.User, id string, m rooms.Message) (rooms.Sent, error) {
	c, err := caller(u)
	if err != nil {
		return rooms.Sent{}, err
	}
	shard, ok := layout.RoomShard(id, s.shards)
	if !ok {
		return rooms.Sent{}, rooms.ErrRoomNotFound
	}
	call := roomlua.MessageSendCall{Scope: s.env.Scope(shard, id), Caller: c, TypeJSON: roomlua.JSONString(m.Type), Data: []byte(m.Data), To: m.To}
	if m.Key != "" {
		// a key is visible ASCII, without spaces: the first space ends it
		call.Key, call.Digest = m.Key+" "+u.ID, rooms.MessageDigest(m.Type, call.Data, m.To)
		call.MessageID = rooms.MessageID(m.Key, u.ID)
	}
	rest, err := s.result(ctx, call)
	if err != nil {
		return rooms.Sent{}, err
	}
	sent := rooms.Sent{Version: layout.ToInt64(rest[0])}
	if m.Key != "" && len(rest) == 2 {
		tag, _ := rest[1].(string)
		sent.Receipt = idempotency.Receipt{Log: s.keys.Log(shard, id), Head: s.keys.Room(shard, id), Field: "ver",
			Pos: sent.Version, Tag: tag}.String()
	}
	return sent, nil
}

// Messages implements rooms.MessageStore. The log is capped, so one read
// returns it all.
func (s *Store) Messages(ctx context.Context, u rooms.User, id string, before int64) (int, []rooms.Message, error) {
	c, err := caller(u)
	if err != nil {
		return 0, nil, err
	}
	shard, ok := layout.RoomShard(id, s.shards)
	if !ok {
		return 0, nil, rooms.ErrRoomNotFound
	}
	end := "+"
	if before > 0 {
		end = strconv.FormatInt(before-1, 10) + "-0" // "0-0" holds nothing
	}
	k := s.keys.MessageKeys(shard, id)
	rest, err := s.result(ctx, roomlua.MessageListCall{Room: k[0], Users: k[1], Messages: k[2], Caller: c, End: end, Count: 4 * roomlua.MessageLogLen})
	if err != nil {
		return 0, nil, err
	}
	entries := roomlua.LogEntries(rest[1])
	out := make([]rooms.Message, 0, len(entries))
	for _, e := range entries {
		m, err := decodeMessage(e.Data)
		if err != nil {
			return 0, nil, err
		}
		out = append(out, m)
	}
	return int(layout.ToInt64(rest[0])), out, nil
}

// messageEvent is the logged form of a message event, its ts parsed.
type messageEvent struct {
	Version int64                  `json:"version"`
	TS      time.Time              `json:"ts"`
	Message rooms.MessageEventBody `json:"message"`
}

func decodeMessage(data string) (rooms.Message, error) {
	var e messageEvent
	if err := json.Unmarshal([]byte(data), &e); err != nil {
		return rooms.Message{}, err
	}
	return rooms.Message{Version: e.Version, From: e.Message.From, Type: e.Message.Type,
		Data: e.Message.Data, To: e.Message.To, TS: e.TS, MessageID: e.Message.MessageID}, nil
}
