package store

import "context"

// Test-only access to the registry's and janitor's keys.

// JanitorKey is shard's janitor lease.
func (s *Store) JanitorKey(shard int) string { return s.keys.Janitor(shard) }

// Shards is the store's shard count.
func (s *Store) Shards() int { return s.shards }

// InstancesPattern matches every key of the instance registry (SCAN MATCH).
func (s *Store) InstancesPattern() string { return s.fleet.Pattern() }

// ReleaseJanitorLeases deletes every shard's janitor lease one of ids
// holds (janitor.Janitor.Release).
func (s *Store) ReleaseJanitorLeases(ctx context.Context, ids ...string) error {
	return s.janitor.Release(ctx, ids)
}
