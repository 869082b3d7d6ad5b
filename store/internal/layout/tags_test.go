package layout

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// Spread tags sit at the middle of their shard's share of the slots, so
// every count of masters of equal slot ranges holds ⌊n/m⌋ or ⌈n/m⌉
// shards; plain tags do not (the defaults fall 8/4/4 on three).
func TestSpreadTags(t *testing.T) {
	for _, prefix := range []string{"rs", "t", "game:prod-eu"} {
		for _, n := range []int{1, 2, 3, 5, 16, 17, 48, 64, 100, MaxShards} {
			if n == MaxShards && prefix != "rs" {
				continue // one prefix is enough
			}
			tags := NewTags(prefix, n)
			tags.Use(SpreadTags)
			seen := map[string]bool{}
			for s := range n {
				tag, want := tags.Tag(s), spreadSlot(s, n)
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
		}
	}
	plain := NewTags("rs", 16)
	if lo, hi := spread(16, cliRanges(3), plain.Slot); lo != 4 || hi != 8 {
		t.Errorf("plain defaults on 3 masters: %d to %d shards a master, want 4 to 8 (the reason for spread tags)", lo, hi)
	}
}

// Spread slots hold ⌊n/m⌋ or ⌈n/m⌉ shards a master for every shard count
// and up to 24 masters of redis-cli's ranges (43 of exact ranges), and at
// most one more or fewer than that up to 128 masters: what SpreadTags'
// doc says.
func TestSpreadSlotsOnMasters(t *testing.T) {
	for _, kind := range []struct {
		name   string
		ranges func(m int) []int
		even   int // masters up to which the counts differ by 1 at most
	}{{"redis-cli", cliRanges, 24}, {"exact", exactRanges, 43}} {
		for m := 1; m <= 128; m++ {
			ends := kind.ranges(m)
			for n := m; n <= MaxShards; n++ {
				lo, hi := spreadCounted(n, ends)
				if want := 1 + btoi(m > kind.even); hi-lo > want {
					t.Fatalf("%s ranges, %d shards on %d masters: from %d to %d shards a master, want a spread of %d at most", kind.name, n, m, lo, hi, want)
				}
				if n <= 64 || n%97 == 0 { // the count checked against the slots themselves
					if blo, bhi := spread(n, ends, func(s int) int { return spreadSlot(s, n) }); blo != lo || bhi != hi {
						t.Fatalf("%s ranges, %d shards on %d masters: counted %d..%d, slot by slot %d..%d", kind.name, n, m, lo, hi, blo, bhi)
					}
				}
			}
		}
	}
}

// spreadCounted is spread of n spread slots, counted per range: the
// slots ≤ e are those of shards s with (2s+1)·8192 < (e+1)·n, that is
// 2s+1 ≤ ((e+1)·n − 1)/8192 (130 000 pairs of n and m slot by slot took
// seconds, more under -race).
func spreadCounted(n int, ends []int) (lo, hi int) {
	below := func(e int) int { return min(n, (((e+1)*n-1)/8192+1)/2) }
	lo, hi, prev := n, 0, 0
	for _, e := range ends {
		c := below(e) - prev
		prev += c
		lo, hi = min(lo, c), max(hi, c)
	}
	return lo, hi
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// spread is the fewest and most of n shards (their slots slot(s)) any
// master holds, the masters' ranges ending at ends (ascending, the last
// 16383).
func spread(n int, ends []int, slot func(s int) int) (lo, hi int) {
	counts := make([]int, len(ends))
	for s := range n {
		counts[sort.SearchInts(ends, slot(s))]++
	}
	lo, hi = n, 0
	for _, c := range counts {
		lo, hi = min(lo, c), max(hi, c)
	}
	return lo, hi
}

// cliRanges are the last slots of m masters' ranges as `redis-cli
// --cluster create` assigns them (redis-cli.c: a float32 cursor advanced
// by 16384/m, each range ending at lroundf(cursor + 16384/m - 1), the last
// at 16383).
func cliRanges(m int) []int {
	per := float32(16384) / float32(m)
	var cursor float32
	ends, first := make([]int, m), 0
	for i := range m {
		last := int(math.Round(float64(cursor + per - 1)))
		if last > 16384 || i == m-1 {
			last = 16383
		}
		last = max(last, first)
		ends[i], first = last, last+1
		cursor += per
	}
	return ends
}

// exactRanges are the last slots of m ranges [i·16384/m, (i+1)·16384/m).
func exactRanges(m int) []int {
	ends := make([]int, m)
	for i := range m {
		ends[i] = (i+1)*16384/m - 1
	}
	return ends
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
	}
}

// spreadTagSearch is spreadTag by trying every salt in order, shortest
// first.
func spreadTagSearch(prefix string, s, n int) (string, int) {
	want := uint16(spreadSlot(s, n))
	head := prefix + ":" + strconv.Itoa(s) + ":"
	if salt, ok := searchSalt(crc16Update(0, head), want, 1, 6); ok {
		return "{" + head + salt + "}", int(want)
	}
	panic("layout: no salt puts shard " + strconv.Itoa(s) + "'s tag at its slot")
}

// The solved salts are the ones a search in order finds: shortest first,
// the first of their length.
func TestSpreadTagSolvedAsSearched(t *testing.T) {
	for _, prefix := range []string{"rs", "t", "game:prod-eu", "x9"} {
		for _, n := range []int{1, 7, 16, 100} {
			for s := range n {
				gotTag, gotSlot := spreadTag(prefix, s, n)
				wantTag, wantSlot := spreadTagSearch(prefix, s, n)
				if gotTag != wantTag || gotSlot != wantSlot {
					t.Fatalf("%s, shard %d of %d: solved %q at %d, searched %q at %d", prefix, s, n, gotTag, gotSlot, wantTag, wantSlot)
				}
			}
		}
	}
}
