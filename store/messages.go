package store

import (
	"context"
	"encoding/json"
	"strconv"
	"time"

	"github.com/realsync/realsync/rooms"
)

// messageLogLen caps a room's message log (MAXLEN ~ keeps at least this).
const messageLogLen = rooms.MessageHistoryMin

// SendMessage implements rooms.MessageStore.
func (s *Store) SendMessage(ctx context.Context, u rooms.User, id string, m rooms.Message) (int64, error) {
	c, err := caller(u)
	if err != nil {
		return 0, err
	}
	shard, ok := roomShard(id, s.shards)
	if !ok {
		return 0, rooms.ErrRoomNotFound
	}
	args := append(s.common(shard, id), c, jsonString(m.Type), []byte(m.Data), messageLogLen)
	for _, to := range m.To {
		args = append(args, to)
	}
	res, err := s.runMutation(ctx, messageSend, s.keys.roomKeys(shard, id), args...).Result()
	if err != nil {
		return 0, wrap(err)
	}
	if arr, ok := res.([]any); ok && len(arr) == 2 && arr[0] == "TO_NOT_MEMBER" {
		return 0, rooms.Invalid("to", "player %v is not in the room", arr[1])
	}
	rest, err := replyStatus(res)
	if err != nil {
		return 0, err
	}
	return toInt64(rest[0]), nil
}

// Messages implements rooms.MessageStore. The log is capped, so one read
// returns it all.
func (s *Store) Messages(ctx context.Context, u rooms.User, id string, before int64) (int, []rooms.Message, error) {
	c, err := caller(u)
	if err != nil {
		return 0, nil, err
	}
	shard, ok := roomShard(id, s.shards)
	if !ok {
		return 0, nil, rooms.ErrRoomNotFound
	}
	end := "+"
	if before > 0 {
		end = strconv.FormatInt(before-1, 10) + "-0" // "0-0" holds nothing
	}
	res, err := messageList.Run(ctx, s.client, s.keys.messageKeys(shard, id), c, end, 4*messageLogLen).Result()
	if err != nil {
		return 0, nil, wrap(err)
	}
	rest, err := replyStatus(res)
	if err != nil {
		return 0, nil, err
	}
	entries := logEntries(rest[1])
	out := make([]rooms.Message, 0, len(entries))
	for _, e := range entries {
		m, err := decodeMessage(e.data)
		if err != nil {
			return 0, nil, err
		}
		out = append(out, m)
	}
	return int(toInt64(rest[0])), out, nil
}

// messageEvent is the logged form of a message event.
type messageEvent struct {
	Version int64     `json:"version"`
	TS      time.Time `json:"ts"`
	Message struct {
		From int             `json:"from"`
		Type string          `json:"type"`
		Data json.RawMessage `json:"data"`
		To   []int           `json:"to"`
	} `json:"message"`
}

func decodeMessage(data string) (rooms.Message, error) {
	var e messageEvent
	if err := json.Unmarshal([]byte(data), &e); err != nil {
		return rooms.Message{}, err
	}
	return rooms.Message{Version: e.Version, From: e.Message.From, Type: e.Message.Type,
		Data: e.Message.Data, To: e.Message.To, TS: e.TS}, nil
}
