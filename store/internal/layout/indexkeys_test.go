package layout

import (
	"fmt"
	"slices"
	"testing"
)

// A store's keys name a room's indexes as uncached keys do, place after
// place and again from the cache; a full cache starts afresh and still
// answers right.
func TestIndexKeyCache(t *testing.T) {
	plain := Keys{prefix: "rs", held: true}
	cached := plain
	cached.idx = newIndexKeyCache()
	places := []indexPlace{{shard: 0, mode: "battle", region: "eu"}, {shard: 7, mode: "battle", region: "eu"},
		{shard: 0, mode: "race", region: "eu"}, {shard: 0, mode: "battle", region: "us"}, {shard: 3}}
	for round := range 2 {
		for _, p := range places {
			id := NewRoomID(p.shard)
			want := plain.RoomKeysWithIndexes(p.shard, id, p.mode, p.region)
			if got := cached.RoomKeysWithIndexes(p.shard, id, p.mode, p.region); !slices.Equal(got, want) {
				t.Errorf("round %d, %v: cached keys\n%q\nwant\n%q", round, p, got, want)
			}
			if len(want) != NRoomKeys+20+4 || want[NRoomKeys+3] != plain.StatusIndex(p.shard, "waiting", p.mode, p.region) {
				t.Errorf("%v: keys %q, not the 12 room keys, 20 indexes and 4 more", p, want)
			}
		}
	}
	if n := len(cached.idx.places); n != len(places) {
		t.Errorf("cache holds %d places, want %d", n, len(places))
	}
	for i := range indexKeyCacheMax + 10 {
		cached.idx.indexKeys(cached, 0, fmt.Sprint("m", i), "eu")
	}
	if n := len(cached.idx.places); n > indexKeyCacheMax || n == 0 {
		t.Errorf("cache holds %d places, want 1..%d", n, indexKeyCacheMax)
	}
	p := places[0]
	if got, want := cached.idx.indexKeys(cached, p.shard, p.mode, p.region), buildIndexKeys(plain, p.shard, p.mode, p.region); !slices.Equal(got, want) {
		t.Errorf("after the cache started afresh: %q, want %q", got, want)
	}
}
