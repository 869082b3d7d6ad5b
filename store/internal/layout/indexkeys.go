package layout

import (
	"sync"

	"github.com/realsync/realsync/rooms"
)

// indexKeyCache keeps the index keys of a room's (shard, mode, region), as
// RoomKeysWithIndexes names them (12 status, 4 joinable, 4 fill): every
// join, leave and other script that may move a room between indexes names
// them, and building 20 strings per call was a tenth of a join's CPU. The
// keys are a pure function of their place, so a cached entry never goes
// stale; the cache holds at most indexKeyCacheMax places and starts afresh
// when full (a deployment has far fewer places; a flood of made-up modes
// costs a rebuild, never memory).
type indexKeyCache struct {
	mu     sync.RWMutex
	places map[indexPlace][]string
}

// indexPlace is the (shard, mode, region) of a room's indexes, and the
// scheme of the tags they were named with.
type indexPlace struct {
	scheme       TagScheme
	shard        int
	mode, region string
}

// indexKeyCacheMax bounds the places an indexKeyCache holds (about 100
// bytes of keys each, 20 keys: some 8 MiB at most).
const indexKeyCacheMax = 4096

func newIndexKeyCache() *indexKeyCache {
	return &indexKeyCache{places: map[indexPlace][]string{}}
}

// IndexStatuses are the statuses a room's indexes are named after, in the
// order of RoomKeysWithIndexes (and of store/internal/roomlua/lua/prelude.lua's
// index keys).
var IndexStatuses = [...]rooms.Status{rooms.Waiting, rooms.Playing, rooms.Finished, "joinable", "fill"}

// indexKeys are the 20 index keys of a room of mode and region in shard,
// each status's whole-shard, mode, region and mode-and-region index in
// turn. The slice is shared: callers copy it, never write to it. c may be
// nil (no cache).
func (c *indexKeyCache) indexKeys(k Keys, shard int, mode, region string) []string {
	if c == nil {
		return buildIndexKeys(k, shard, mode, region)
	}
	p := indexPlace{k.Scheme(), shard, mode, region}
	c.mu.RLock()
	out, ok := c.places[p]
	c.mu.RUnlock()
	if ok {
		return out
	}
	out = buildIndexKeys(k, shard, mode, region)
	c.mu.Lock()
	if len(c.places) >= indexKeyCacheMax {
		clear(c.places)
	}
	c.places[p] = out
	c.mu.Unlock()
	return out
}

func buildIndexKeys(k Keys, shard int, mode, region string) []string {
	out := make([]string, 0, 4*len(IndexStatuses))
	for _, st := range IndexStatuses {
		out = append(out,
			k.StatusIndex(shard, st, "", ""),
			k.StatusIndex(shard, st, mode, ""),
			k.StatusIndex(shard, st, "", region),
			k.StatusIndex(shard, st, mode, region))
	}
	return out
}
