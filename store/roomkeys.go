package store

// RoomKeys returns every key that holds room id's own data (hash, state,
// players, users, event log, connected players, presence, messages, bans,
// seat reservations), for
// tools and tests that read or remove a room directly; nil for an id of the
// wrong form.
func (s *Store) RoomKeys(id string) []string {
	shard, ok := roomShard(id, s.shards)
	if !ok {
		return nil
	}
	room := s.keys.room(shard, id)
	return []string{room, room + ":state", room + ":players", room + ":users", room + ":log",
		room + ":conn", room + ":presence", room + ":messages", room + ":bans", room + ":reserved"}
}
