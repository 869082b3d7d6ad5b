package store

import (
	"context"

	"github.com/realsync/realsync/store/internal/redisx"
)

// MasterShards counts the shards each Redis Cluster master holds, by the
// master's address as CLUSTER SLOTS gives it, every master that owns a
// slot included (0: none of the shards). A master carries the shards whose
// tags' slots it owns, whatever its count of slots: these counts, not
// the slot counts Redis' tools balance, are how the deployment's load
// spreads (spread tags, key schema 4, hold even counts on masters of equal
// slot ranges; plain tags do not: the defaults' 16 fall 8/4/4 on 3 such
// ranges). A shard whose slot no master owns is not counted. nil without
// a Cluster (one master holds every shard). The error, when no node
// answers with a layout, is rooms.ErrUnavailable's (redisx.Wrap).
func (s *Store) MasterShards(ctx context.Context) (map[string]int, error) {
	if s.conn.Slots == nil {
		return nil, nil
	}
	// the layout as the store's clients read it: node after node until one
	// answers, addresses named as the clients dial them (not CLUSTER SLOTS
	// of the client's next node, which may be a master holding no shard,
	// or hung)
	ranges, err := s.conn.Slots.Slots(ctx)
	if err != nil {
		return nil, redisx.Wrap(err)
	}
	out := map[string]int{}
	for _, r := range ranges {
		if len(r.Nodes) > 0 {
			out[r.Nodes[0].Addr] = 0 // before any count
		}
	}
	for shard := range s.shards {
		slot := s.stripes.Slot(shard)
		for _, r := range ranges {
			if slot >= int(r.Start) && slot <= int(r.End) && len(r.Nodes) > 0 {
				out[r.Nodes[0].Addr]++
				break
			}
		}
	}
	return out, nil
}
