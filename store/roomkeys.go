package store

import (
	"strings"

	"github.com/realsync/realsync/store/internal/layout"
	"github.com/realsync/realsync/store/internal/redisx"
)

// RoomKeys returns every key that holds room id's own data (hash, state,
// players, users, event log, connected players, presence, messages, bans,
// seat reservations, the Idempotency-Keys of its messages), for
// tools and tests that read or remove a room directly; nil for an id of the
// wrong form.
func (s *Store) RoomKeys(id string) []string {
	shard, ok := layout.RoomShard(id, s.shards)
	if !ok {
		return nil
	}
	room := s.keys.Room(shard, id)
	return []string{room, room + ":state", room + ":players", room + ":users", room + ":log",
		room + ":conn", room + ":presence", room + ":messages", room + ":bans", room + ":reserved",
		room + ":mkeys", room + ":mkeyt"}
}

// RoomTag returns the hash tag of the keys of room id ("{<prefix>:<shard>}")
// in a deployment of shards shards, so an adapter of its own can keep keys
// in the room's slot; false for an id the deployment never issued.
//
// An id "@<userId>" is a user's inbox (the direct messages' rate limit,
// counted like a room's): its tag is the user's slot.
func RoomTag(prefix string, shards int, id string) (string, bool) {
	if uid, ok := strings.CutPrefix(id, "@"); ok && uid != "" {
		return layout.New(prefix, false, false).Tag(redisx.UserShard(uid, shards)), true
	}
	shard, ok := layout.RoomShard(id, shards)
	if !ok {
		return "", false
	}
	return layout.New(prefix, false, false).Tag(shard), true
}
