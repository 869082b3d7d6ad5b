package store

import (
	"context"
	"sync"

	"github.com/realsync/realsync/rooms"

	"github.com/realsync/realsync/store/internal/layout"
	"github.com/realsync/realsync/store/internal/redisx"
	"github.com/realsync/realsync/store/internal/roomlua"
)

// Every room script runs through its descriptor (store/internal/roomlua, a
// redisx.Call) by the store's runner (redisx.Runner: s.runner.Run, Queue,
// RunAll), on the scope of its room (s.env.Scope, Indexed, scopeOf).

// result runs call and decodes its status reply (roomlua.Reply).
func (s *Store) result(ctx context.Context, call redisx.Call) ([]any, error) {
	return roomlua.Reply(s.runner.Run(ctx, call))
}

// scopeOf returns room id's shard and indexed scope, reading its
// (immutable) mode and region when not cached; rooms.ErrRoomNotFound for
// an id this deployment never issued or a room that is gone.
func (s *Store) scopeOf(ctx context.Context, id string) (int, roomlua.Scope, error) {
	shard, ok := layout.RoomShard(id, s.shards)
	if !ok {
		return 0, roomlua.Scope{}, rooms.ErrRoomNotFound
	}
	p, ok := s.places.get(id)
	if !ok {
		got, err := s.client.HMGet(ctx, s.keys.Room(shard, id), "m", "r").Result()
		if err != nil {
			return 0, roomlua.Scope{}, redisx.Wrap(err)
		}
		mode, _ := got[0].(string)
		region, _ := got[1].(string)
		if mode == "" {
			return 0, roomlua.Scope{}, rooms.ErrRoomNotFound
		}
		p = place{mode: mode, region: region}
		s.places.put(id, p)
	}
	return shard, s.env.Indexed(shard, id, p.mode, p.region), nil
}

// place is where a room's index entries live: its mode and region never
// change, so a cached place is never stale.
type place struct {
	mode, region string
}

// placeCache remembers the place of recently seen rooms so that scripts
// that move a room between indexes need no extra read. Bounded: when full
// it starts over.
type placeCache struct {
	mu  sync.RWMutex
	max int
	m   map[string]place
}

func newPlaceCache(max int) *placeCache {
	return &placeCache{max: max, m: make(map[string]place)}
}

func (c *placeCache) get(id string) (place, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	p, ok := c.m[id]
	return p, ok
}

func (c *placeCache) put(id string, p place) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= c.max {
		c.m = make(map[string]place)
	}
	c.m[id] = p
}
