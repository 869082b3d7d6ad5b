package store

import (
	"github.com/realsync/realsync/matchmaking"
	"github.com/realsync/realsync/store/internal/layout"
)

// Test-only access to stripe placement.

// StripesOf is every shard that may hold a room of (mode, region): the
// union of the recorded configurations' stripes, home shard first.
func (s *Store) StripesOf(mode, region string) []int { return s.stripes.ReadShards(mode, region) }

// CreateStripesOf are the stripes new rooms of (mode, region) go to.
func (s *Store) CreateStripesOf(mode, region string) []int {
	return s.stripes.CreateShards(mode, region)
}

// ShardTag is shard's hash tag (layout.Tags).
func (s *Store) ShardTag(shard int) string { return s.keys.Tag(shard) }

// PlacedSlot is the slot the placement takes shard's tag to be at.
func (s *Store) PlacedSlot(shard int) int { return s.stripes.Slot(shard) }

// ShardOfRoom decodes the shard of a room id (-1 if none).
func (s *Store) ShardOfRoom(id string) int {
	if sh, ok := layout.RoomShard(id, s.shards); ok {
		return sh
	}
	return -1
}

// CRC16 is the Cluster key hash the placement uses.
func CRC16(v string) uint16 { return layout.CRC16(v) }

// SlotRange is which of k equal slot ranges holds slot.
func SlotRange(slot, k int) int { return layout.SlotRange(slot, k) }

// MatchRoomIDs are the ids match m's room may have, one per recorded
// stripe configuration, the current one's first.
func (s *Store) MatchRoomIDs(m matchmaking.Match) []string { return s.matchRoomIDs(m) }
