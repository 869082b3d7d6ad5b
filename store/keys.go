package store

import (
	"strconv"
	"strings"

	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/store/internal/redisx"
)

// keys builds every Redis key and channel name. All keys of one room and
// every index it appears in share the room's shard tag "{<prefix>:<shard>}",
// so each script touches a single hash slot on a Cluster. Nothing else in
// this package builds a key.
type keys struct {
	prefix string
	// held: a room quota is on, so the scripts that remove players get the
	// shard's unheld list (roomKeysWithIndexes).
	held bool
	// idx caches the index keys per (shard, mode, region); nil: built on
	// every call.
	idx *indexKeyCache
}

func (k keys) tag(shard int) string {
	return "{" + k.prefix + ":" + strconv.Itoa(shard) + "}"
}

// meta holds the deployment's shard count and key-schema version.
func (k keys) meta() string { return k.prefix + ":meta" }

func (k keys) room(shard int, id string) string { return k.tag(shard) + ":room:" + id }

// lobby is the shard's lobby channel: notices of joinable rooms (the
// scripts derive it from the room channel's tag).
func (k keys) lobby(shard int) string { return k.tag(shard) + ":lobby" }

// channel is the room's Pub/Sub channel.
func (k keys) channel(shard int, id string) string { return k.tag(shard) + ":ch:" + id }

// unheld is the shard's list of "<roomId> <c|r|o> <userId>": holdings
// entries that a room script made stale, for the janitor (store/holdings, unheld.go).
func (k keys) unheld(shard int) string { return k.tag(shard) + ":unheld" }

// quickJoinLock is user uid's quick-join lock (Store.lockQuickJoin), in
// the slot of the user's shard.
func (k keys) quickJoinLock(shard int, uid string) string { return k.tag(shard) + ":qjlock:" + uid }

// webhookOutbox is the shard's webhook outbox: a stream of the room events
// (fields t: type, d: event JSON), capped MAXLEN ~ (Config.WebhookOutboxLen),
// and the status changes of the shard's users; read by the consumer group
// "wh" of every instance (store/webhooks, whose name of it must be this).
func (k keys) webhookOutbox(shard int) string { return k.tag(shard) + ":webhooks" }

func (k keys) userIndex(shard int) string { return k.tag(shard) + ":users" }
func (k keys) codes(shard int) string     { return k.tag(shard) + ":codes" }
func (k keys) clock(shard int) string     { return k.tag(shard) + ":clock" }

// due is the shard's presence schedule: roomId scored by the earliest
// presence deadline (ms) of the room.
func (k keys) due(shard int) string { return k.tag(shard) + ":presence:due" }

// roomsDue is the shard's lifecycle schedule: every room of the shard,
// scored by when the janitor must next look at it (ms, Redis clock; +inf:
// never). It doubles as the shard's list of rooms for the repair sweep.
func (k keys) roomsDue(shard int) string { return k.tag(shard) + ":rooms:due" }

// janitor is the shard's janitor lease (SET NX PX), held by one instance.
func (k keys) janitor(shard int) string { return k.tag(shard) + ":janitor" }

// statusIndex is the sorted set (score: createdAt in µs, unique per shard)
// of the public rooms of one status, optionally narrowed to a mode and/or a
// region.
func (k keys) statusIndex(shard int, st rooms.Status, mode, region string) string {
	// one allocation (a script of a room names 20 of these per call)
	var buf [128]byte
	b := append(append(append(buf[:0], '{'), k.prefix...), ':')
	b = append(append(strconv.AppendInt(b, int64(shard), 10), "}:idx:"...), st...)
	if mode != "" {
		b = append(append(b, ":mode:"...), mode...)
	}
	if region != "" {
		b = append(append(b, ":region:"...), region...)
	}
	return string(b)
}

// roomKeys are the KEYS every mutation script gets (store/lua/prelude.lua).
func (k keys) roomKeys(shard int, id string) []string {
	return k.appendRoomKeys(make([]string, 0, nRoomKeys), shard, id)
}

// nRoomKeys is the length of roomKeys.
const nRoomKeys = 12

// appendRoomKeys appends roomKeys to dst.
func (k keys) appendRoomKeys(dst []string, shard int, id string) []string {
	room := k.room(shard, id)
	return append(dst, room, room+":state", room+":players", room+":users", room+":log",
		k.userIndex(shard), k.codes(shard), k.clock(shard),
		room+":conn", room+":presence", room+":messages", k.due(shard))
}

func (k keys) log(shard int, id string) string { return k.room(shard, id) + ":log" }

// joinableIndex is the sorted set (score: createdAt in µs) of the joinable
// rooms (public, waiting, unlocked, not full), optionally narrowed.
func (k keys) joinableIndex(shard int, mode, region string) string {
	return k.statusIndex(shard, "joinable", mode, region)
}

// fillIndex holds the same rooms as lexicographic members
// "<100-playerCount>|<createdAt>|<id>" (score 0): fullest first, then oldest.
func (k keys) fillIndex(shard int, mode, region string) string {
	return k.statusIndex(shard, "fill", mode, region)
}

// stats is the shard's room and player counts (see lua/prelude.lua).
func (k keys) stats(shard int) string { return k.tag(shard) + ":stats" }

// roomKeysWithIndexes adds every index of a room of mode and region (12
// status, 4 joinable, 4 fill), the shard stats, the lifecycle schedule,
// the room's bans and, with the quotas on, the shard's unheld list, for
// scripts that may move it between them, close it (which deletes the bans),
// join or kick.
func (k keys) roomKeysWithIndexes(shard int, id, mode, region string) []string {
	out := k.appendRoomKeys(make([]string, 0, nRoomKeys+4*len(indexStatuses)+4), shard, id)
	out = append(out, k.idx.indexKeys(k, shard, mode, region)...)
	out = append(out, k.stats(shard), k.roomsDue(shard), k.bans(shard, id))
	if k.held {
		out = append(out, k.unheld(shard))
	}
	return out
}

// bans is the set of the userIds banned from the room.
func (k keys) bans(shard int, id string) string { return k.room(shard, id) + ":bans" }

// readKeys are the room, players, users, state and connected-players
// hashes, as queueRoomRead reads them.
func (k keys) readKeys(shard int, id string) []string {
	room := k.room(shard, id)
	return []string{room, room + ":players", room + ":users", room + ":state", room + ":conn"}
}

// messageKeys are the KEYS of message_list.lua.
func (k keys) messageKeys(shard int, id string) []string {
	room := k.room(shard, id)
	return []string{room, room + ":users", room + ":messages"}
}

// RoomTag returns the hash tag of the keys of room id ("{<prefix>:<shard>}")
// in a deployment of shards shards, so an adapter of its own can keep keys
// in the room's slot; false for an id the deployment never issued.
//
// An id "@<userId>" is a user's inbox (the direct messages' rate limit,
// counted like a room's): its tag is the user's slot.
func RoomTag(prefix string, shards int, id string) (string, bool) {
	if uid, ok := strings.CutPrefix(id, "@"); ok && uid != "" {
		return keys{prefix: prefix}.tag(redisx.UserShard(uid, shards)), true
	}
	shard, ok := roomShard(id, shards)
	if !ok {
		return "", false
	}
	return keys{prefix: prefix}.tag(shard), true
}
