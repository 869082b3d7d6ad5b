package store

import (
	"github.com/realsync/realsync/store/internal/layout"
	"github.com/realsync/realsync/store/internal/redisx"
)

// RoomKeys returns every key that holds room id's own data (hash, state,
// players, users, event log, connected players, presence, messages, bans,
// seat reservations, kicks, the Idempotency-Keys of its messages), for
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
		room + ":kicked", room + ":mkeys", room + ":mkeyt"}
}

// RoomTag returns the hash tag of the keys of room id (layout.Tags: the
// tag of the room's shard in the scheme the deployment recorded, so call
// it after Init), so an adapter of its own can keep keys in the room's
// slot; false for an id the deployment never issued.
//
// An id "@<userId>" is a user's inbox (the direct messages' rate limit,
// counted like a room's), "&<userId>" its share for the users the user
// follows: their tag is the user's slot.
func (s *Store) RoomTag(id string) (string, bool) {
	if len(id) > 1 && (id[0] == '@' || id[0] == '&') {
		return s.keys.Tag(redisx.UserShard(id[1:], s.shards)), true
	}
	shard, ok := layout.RoomShard(id, s.shards)
	if !ok {
		return "", false
	}
	return s.keys.Tag(shard), true
}

// ShardTags are the shards' hash tags of a deployment of prefix, shards
// shards and key schema schema, as its meta hash ("<prefix>:meta", field
// schema) records it: plain for PlainSchema, spread for SchemaVersion
// (layout.TagScheme); nil for a schema this release does not serve. For
// tools and tests that read a deployment's keys directly.
func ShardTags(prefix string, shards, schema int) []string {
	sc, ok := layout.SchemeOf(schema)
	if !ok {
		return nil
	}
	t := layout.NewTags(prefix, shards)
	t.Use(sc)
	out := make([]string, shards)
	for i := range out {
		out[i] = t.Tag(i)
	}
	return out
}
