package store

// Test-only access to key names and events, so tests can read Redis
// directly.

// LogKey is the event log key of room id.
func (s *Store) LogKey(id string) string {
	shard, _ := roomShard(id, s.shards)
	return s.keys.room(shard, id) + ":log"
}

// Prefix is the store's key prefix.
func (s *Store) Prefix() string { return s.keys.prefix }
