package store

import "sync"

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
