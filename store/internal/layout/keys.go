// Package layout is how the store keeps a room in Redis, shared by the
// packages that read or write rooms (the root store's scripts, the
// listing): every key and channel name of the rooms and their indexes
// (Keys), room ids and invite codes that carry their shard, the stripes a
// (mode, region)'s rooms are placed on (Placement), the room hash read
// back into a rooms.Room (RoomHash, DecodeRoom), and the key schema's
// version with the error for data of another layout (SchemaVersion,
// ErrLayout). It talks to no server.
package layout

import (
	"strings"

	"github.com/realsync/realsync/rooms"
)

// Keys builds every Redis key and channel name of the rooms. All keys of
// one room and every index it appears in share the room's shard tag
// (Tags), so each script touches a single hash slot on a
// Cluster. Nothing else in the store builds a room's key.
type Keys struct {
	prefix string
	// tags: the shards' tags (nil: PlainTags of prefix, for tests)
	tags *Tags
	// held: a room quota is on, so the scripts that remove players get the
	// shard's unheld list (RoomKeysWithIndexes).
	held bool
	// idx caches the index keys per (shard, mode, region); nil: built on
	// every call.
	idx *indexKeyCache
}

// New returns the keys of a deployment: its prefix and shards' tags.
// held: a room quota is on (RoomKeysWithIndexes adds the unheld list);
// cached: the index keys of a place are built once (IndexKeys), for a
// long-lived store whose tags' scheme is set before their first use.
func New(tags *Tags, held, cached bool) Keys {
	k := Keys{prefix: tags.Prefix(), tags: tags, held: held}
	if cached {
		k.idx = newIndexKeyCache()
	}
	return k
}

// Prefix is the deployment's key prefix.
func (k Keys) Prefix() string { return k.prefix }

// IndexKeys are the 20 index keys of a room of mode and region in shard
// (see indexKeys); shared, never written to.
func (k Keys) IndexKeys(shard int, mode, region string) []string {
	return k.idx.indexKeys(k, shard, mode, region)
}

// Tag is shard's hash tag (Tags: "{<prefix>:<shard>}" or, spread,
// "{<prefix>:<shard>:<salt>}").
func (k Keys) Tag(shard int) string {
	if k.tags == nil {
		return PlainTag(k.prefix, shard)
	}
	return k.tags.Tag(shard)
}

// Slot is the hash slot of shard's tag.
func (k Keys) Slot(shard int) int {
	if k.tags == nil {
		return Slot(PlainTag(k.prefix, shard))
	}
	return k.tags.Slot(shard)
}

// Scheme is the scheme of the shards' tags.
func (k Keys) Scheme() TagScheme {
	if k.tags == nil {
		return PlainTags
	}
	return k.tags.Scheme()
}

// Meta holds the deployment's shard count and key-schema version.
func (k Keys) Meta() string { return k.prefix + ":meta" }

func (k Keys) Room(shard int, id string) string { return RoomKey(k.Tag(shard), id) }

// RoomKey is the hash of room id under its shard's tag (Keys.Room), for
// a package that builds its keys from the tags alone (store/tickets).
func RoomKey(tag, id string) string { return tag + ":room:" + id }

// Lobby is the shard's lobby channel: notices of joinable rooms (the
// scripts derive it from the room channel's tag).
func (k Keys) Lobby(shard int) string { return k.Tag(shard) + ":lobby" }

// Channel is the room's Pub/Sub channel.
func (k Keys) Channel(shard int, id string) string { return k.Tag(shard) + ":ch:" + id }

// Unheld is the shard's list of "<roomId> <c|r|o> <userId>": holdings
// entries that a room script made stale, for the janitor (store/holdings, unheld.go).
func (k Keys) Unheld(shard int) string { return k.Tag(shard) + ":unheld" }

// QuickJoinLock is user uid's quick-join lock (Store.lockQuickJoin), in
// the slot of the user's shard.
func (k Keys) QuickJoinLock(shard int, uid string) string { return k.Tag(shard) + ":qjlock:" + uid }

// WebhookOutbox is the shard's webhook outbox: a stream of the room events
// (fields t: type, d: event JSON), capped MAXLEN ~ (Config.WebhookOutboxLen),
// and the status changes of the shard's users; read by the consumer group
// "wh" of every instance (store/webhooks, whose name of it must be this).
func (k Keys) WebhookOutbox(shard int) string { return k.Tag(shard) + ":webhooks" }

func (k Keys) UserIndex(shard int) string { return k.Tag(shard) + ":users" }
func (k Keys) Codes(shard int) string     { return k.Tag(shard) + ":codes" }
func (k Keys) Clock(shard int) string     { return k.Tag(shard) + ":clock" }

// CreateKeys is the shard's keyed creates: a create's digest → the room
// it made (room_create.lua; the scripts derive it from the room's tag).
func (k Keys) CreateKeys(shard int) string { return k.Tag(shard) + ":ckeys" }

// Due is the shard's presence schedule: roomId scored by the earliest
// presence deadline (ms) of the room.
func (k Keys) Due(shard int) string { return k.Tag(shard) + ":presence:due" }

// RoomsDue is the shard's lifecycle schedule: every room of the shard,
// scored by when the janitor must next look at it (ms, Redis clock; +inf:
// never). It doubles as the shard's list of rooms for the repair sweep.
func (k Keys) RoomsDue(shard int) string { return k.Tag(shard) + ":rooms:due" }

// Janitor is the shard's janitor lease (SET NX PX), held by one instance.
func (k Keys) Janitor(shard int) string { return k.Tag(shard) + ":janitor" }

// StatusIndex is the sorted set (score: createdAt in µs, unique per shard)
// of the public rooms of one status, optionally narrowed to a mode and/or a
// region.
func (k Keys) StatusIndex(shard int, st rooms.Status, mode, region string) string {
	// one allocation (a script of a room names 20 of these per call)
	var buf [128]byte
	b := append(append(append(buf[:0], k.Tag(shard)...), ":idx:"...), st...)
	if mode != "" {
		b = append(append(b, ":mode:"...), mode...)
	}
	if region != "" {
		b = append(append(b, ":region:"...), region...)
	}
	return string(b)
}

// RoomKeys are the KEYS every mutation script gets (store/internal/roomlua/lua/prelude.lua).
func (k Keys) RoomKeys(shard int, id string) []string {
	return k.AppendRoomKeys(make([]string, 0, NRoomKeys), shard, id)
}

// NRoomKeys is the length of roomKeys.
const NRoomKeys = 12

// AppendRoomKeys appends roomKeys to dst.
func (k Keys) AppendRoomKeys(dst []string, shard int, id string) []string {
	room := k.Room(shard, id)
	return append(dst, room, room+":state", room+":players", room+":users", room+":log",
		k.UserIndex(shard), k.Codes(shard), k.Clock(shard),
		room+":conn", room+":presence", room+":messages", k.Due(shard))
}

func (k Keys) Log(shard int, id string) string { return k.Room(shard, id) + ":log" }

// JoinableIndex is the sorted set (score: createdAt in µs) of the joinable
// rooms (public, waiting, unlocked, not full), optionally narrowed.
func (k Keys) JoinableIndex(shard int, mode, region string) string {
	return k.StatusIndex(shard, "joinable", mode, region)
}

// FillIndex holds the same rooms as lexicographic members
// "<FillSeats - seats taken>|<createdAt>|<id>" (score 0): fullest first,
// then oldest (fill.go).
func (k Keys) FillIndex(shard int, mode, region string) string {
	return k.StatusIndex(shard, "fill", mode, region)
}

// FillID is the room id of a fill index member "<...>|<...>|<id>".
func FillID(member string) string { return member[strings.LastIndexByte(member, '|')+1:] }

// Stats is the shard's room and player counts (see
// store/internal/roomlua/lua/prelude.lua).
func (k Keys) Stats(shard int) string { return k.Tag(shard) + ":stats" }

// RoomKeysWithIndexes adds every index of a room of mode and region (12
// status, 4 joinable, 4 fill), the shard stats, the lifecycle schedule,
// the room's bans and, with the quotas on, the shard's unheld list, for
// scripts that may move it between them, close it (which deletes the bans),
// join or kick.
func (k Keys) RoomKeysWithIndexes(shard int, id, mode, region string) []string {
	out := k.AppendRoomKeys(make([]string, 0, NRoomKeys+4*len(IndexStatuses)+4), shard, id)
	out = append(out, k.idx.indexKeys(k, shard, mode, region)...)
	out = append(out, k.Stats(shard), k.RoomsDue(shard), k.Bans(shard, id))
	if k.held {
		out = append(out, k.Unheld(shard))
	}
	return out
}

// Bans is the set of the userIds banned from the room.
func (k Keys) Bans(shard int, id string) string { return k.Room(shard, id) + ":bans" }

// ReadKeys are the room, players, users, state and connected-players
// hashes, as queueRoomRead reads them.
func (k Keys) ReadKeys(shard int, id string) []string {
	room := k.Room(shard, id)
	return []string{room, room + ":players", room + ":users", room + ":state", room + ":conn"}
}

// MessageKeys are the KEYS of message_list.lua.
func (k Keys) MessageKeys(shard int, id string) []string {
	room := k.Room(shard, id)
	return []string{room, room + ":users", room + ":messages"}
}
