package layout

import (
	"fmt"
	"strings"
	"testing"
)

// Spread tags sit at the middle of their shard's share of the slots, so
// every count of masters of equal slot ranges holds ⌊n/m⌋ or ⌈n/m⌉
// shards; plain tags do not (the defaults fall 8/4/4 on three).
func TestSpreadTags(t *testing.T) {
	for _, prefix := range []string{"rs", "t", "game:prod-eu"} {
		for _, n := range []int{1, 2, 3, 5, 16, 17, 48, 64, 100, MaxShards} {
			tags := NewTags(prefix, n)
			tags.Use(SpreadTags)
			seen := map[string]bool{}
			for s := range n {
				tag, want := tags.Tag(s), (2*s+1)*16384/(2*n)
				salt, ok := strings.CutPrefix(tag, fmt.Sprintf("{%s:%d:", prefix, s))
				salt, closed := strings.CutSuffix(salt, "}")
				if !ok || !closed || salt == "" || strings.Trim(salt, Base62) != "" {
					t.Fatalf("%s, %d shards: shard %d's tag %q, want {%s:%d:<base-62 salt>}", prefix, n, s, tag, prefix, s)
				}
				if got := Slot(tag + ":room:x"); got != want || tags.Slot(s) != want {
					t.Fatalf("%s, %d shards: shard %d's tag %q at slot %d (Slot says %d), want %d", prefix, n, s, tag, got, tags.Slot(s), want)
				}
				if seen[tag] {
					t.Fatalf("%s, %d shards: tag %q twice", prefix, n, tag)
				}
				seen[tag] = true
			}
			for m := 1; m <= min(n, 12); m++ {
				if lo, hi := spread(tags, n, m); hi-lo > 1 {
					t.Errorf("%s, %d shards on %d masters: from %d to %d shards a master, want ⌊n/m⌋ or ⌈n/m⌉", prefix, n, m, lo, hi)
				}
			}
		}
	}
	plain := NewTags("rs", 16)
	if lo, hi := spread(plain, 16, 3); lo != 4 || hi != 8 {
		t.Errorf("plain defaults on 3 masters: %d to %d shards a master, want 4 to 8 (the reason for spread tags)", lo, hi)
	}
}

// spread is the fewest and most shards of tags any of m masters of equal
// slot ranges holds.
func spread(tags *Tags, n, m int) (lo, hi int) {
	counts := make([]int, m)
	for s := range n {
		counts[SlotRange(tags.Slot(s), m)]++
	}
	lo, hi = n, 0
	for _, c := range counts {
		lo, hi = min(lo, c), max(hi, c)
	}
	return lo, hi
}

// Use switches every copy of the Keys built on the tags, and what they
// name: tags, index keys (cached or not), slots, placement.
func TestTagsUse(t *testing.T) {
	tags := NewTags("rs", 16)
	k := New(tags, true, true)
	copied := k
	p := NewPlacement(k, 16, Stripes{Default: 3})
	if got := k.Tag(3); got != "{rs:3}" || k.Scheme() != PlainTags {
		t.Fatalf("before Use: tag %q, scheme %v; want {rs:3}, plain", got, k.Scheme())
	}
	plainIdx := k.IndexKeys(3, "battle", "eu")[0]
	plainStripes := p.CreateShards("battle", "eu")
	tags.Use(SpreadTags)
	tags.Use(SpreadTags) // a no-op
	spread := copied.Tag(3)
	if !strings.HasPrefix(spread, "{rs:3:") || copied.Scheme() != SpreadTags || copied.Slot(3) != Slot(spread) {
		t.Fatalf("after Use: tag %q, scheme %v, slot %d; want {rs:3:<salt>}, spread, %d", spread, copied.Scheme(), copied.Slot(3), Slot(spread))
	}
	if got := copied.IndexKeys(3, "battle", "eu")[0]; got != spread+":idx:waiting" || got == plainIdx {
		t.Errorf("cached index key after Use: %q, want %q", got, spread+":idx:waiting")
	}
	if got := copied.StatusIndex(3, "fill", "battle", ""); got != spread+":idx:fill:mode:battle" {
		t.Errorf("StatusIndex after Use: %q", got)
	}
	ranges := map[int]bool{}
	for _, sh := range p.CreateShards("battle", "eu") {
		ranges[SlotRange(p.Slot(sh), 3)] = true
	}
	if len(ranges) != 3 {
		t.Errorf("stripes after Use %v (before: %v) cover slot ranges %v, want all 3", p.CreateShards("battle", "eu"), plainStripes, ranges)
	}
	for _, key := range copied.RoomKeysWithIndexes(3, NewRoomID(3), "battle", "eu") {
		if tagOf(key) != spread {
			t.Errorf("after Use: key %q has tag %q, want %q", key, tagOf(key), spread)
		}
	}
}

// Slot hashes a key as Redis Cluster does: the first {...} with something
// inside, else the whole key.
func TestSlot(t *testing.T) {
	if got := CRC16("123456789"); got != 0x31C3 {
		t.Fatalf("CRC16 check value %#x, want 0x31c3 (CRC-16/XMODEM)", got)
	}
	whole := func(k string) int { return int(CRC16(k) % 16384) }
	for _, tc := range []struct {
		key  string
		want int
	}{
		{"123456789", 0x31C3 % 16384},
		{"{user1000}.following", whole("user1000")},
		{"foo{}{bar}", whole("foo{}{bar}")},
		{"foo{{bar}}zap", whole("{bar")},
		{"foo{bar}{zap}", whole("bar")},
		{"{", whole("{")},
		{"x}{", whole("x}{")},
	} {
		if got := Slot(tc.key); got != tc.want {
			t.Errorf("Slot(%q) = %d, want %d", tc.key, got, tc.want)
		}
	}
}

func TestSchemeOf(t *testing.T) {
	for _, tc := range []struct {
		v    int
		want TagScheme
		ok   bool
	}{{PlainSchema, PlainTags, true}, {SchemaVersion, SpreadTags, true}, {2, 0, false}, {SchemaVersion + 1, 0, false}} {
		if got, ok := SchemeOf(tc.v); got != tc.want || ok != tc.ok {
			t.Errorf("SchemeOf(%d) = %v, %v; want %v, %v", tc.v, got, ok, tc.want, tc.ok)
		}
		if tc.ok && SchemaOf(tc.want) != tc.v {
			t.Errorf("SchemaOf(%v) = %d, want %d", tc.want, SchemaOf(tc.want), tc.v)
		}
	}
}
