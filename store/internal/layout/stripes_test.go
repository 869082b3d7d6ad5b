package layout

import (
	"slices"
	"testing"
)

// SlotRange splits the slots as i·16384/k, the ranges the test Cluster
// (and, within a slot, redis-cli) gives k masters.
func TestSlotRange(t *testing.T) {
	tests := []struct{ slot, k, want int }{
		{0, 3, 0}, {5460, 3, 0}, {5461, 3, 1}, {10921, 3, 1}, {10922, 3, 2}, {16383, 3, 2},
		{8191, 2, 0}, {8192, 2, 1}, {16383, 1, 0}, {4095, 4, 0}, {4096, 4, 1}, {16383, 4, 3},
	}
	for _, tc := range tests {
		if got := SlotRange(tc.slot, tc.k); got != tc.want {
			t.Errorf("SlotRange(%d, %d) = %d, want %d", tc.slot, tc.k, got, tc.want)
		}
	}
}

// shardsOf: stripe 0 is the home shard; the stripes are distinct, one per
// slot range when every range holds a shard, and fall back to unused
// shards when one does not (here 2 shards for K = 2 whose slots may share
// a range, and K = shards).
func TestShardsOf(t *testing.T) {
	for _, tc := range []struct {
		shards, k int
		scheme    TagScheme
	}{{64, 3, PlainTags}, {16, 3, PlainTags}, {16, 4, PlainTags}, {2, 2, PlainTags}, {3, 3, PlainTags}, {8, 8, PlainTags},
		{16, 3, SpreadTags}, {16, 5, SpreadTags}, {2, 2, SpreadTags}} {
		tags := NewTags("rs", tc.shards)
		tags.Use(tc.scheme)
		p := NewPlacement(New(tags, false, false), tc.shards, Stripes{Default: tc.k})
		covered := map[int]bool{} // which ranges hold a shard
		for sh := range tc.shards {
			covered[SlotRange(p.Slot(sh), tc.k)] = true
		}
		for _, pair := range [][2]string{{"ranked", "eu"}, {"casual", "us"}, {"duel", ""}, {"", "ap"}} {
			st := p.shardsOf(pair[0], pair[1], tc.k)
			if len(st) != tc.k || st[0] != HomeShard(pair[0], pair[1], tc.shards) {
				t.Fatalf("%d shards, K=%d, %v: stripes %v", tc.shards, tc.k, pair, st)
			}
			sorted := slices.Clone(st)
			slices.Sort(sorted)
			if len(slices.Compact(sorted)) != tc.k {
				t.Fatalf("%d shards, K=%d, %v: stripes %v repeat a shard", tc.shards, tc.k, pair, st)
			}
			if len(covered) == tc.k {
				ranges := map[int]bool{}
				for _, sh := range st {
					ranges[SlotRange(p.Slot(sh), tc.k)] = true
				}
				if len(ranges) != tc.k {
					t.Fatalf("%d shards, K=%d, %v: stripes %v cover %d slot ranges, want %d", tc.shards, tc.k, pair, st, len(ranges), tc.k)
				}
			}
			if again := p.shardsOf(pair[0], pair[1], tc.k); !slices.Equal(again, st) {
				t.Fatalf("placement not deterministic: %v then %v", st, again)
			}
		}
	}
}

// ReadShards is the union of every recorded configuration's stripes, home
// first; CreateShards the current configuration's only.
func TestReadShardsUnion(t *testing.T) {
	p := NewPlacement(Keys{prefix: "rs"}, 64, Stripes{Default: 2})
	p.state.Store(&stripeState{current: Stripes{Default: 2}, used: []Stripes{{Default: 2}, {Default: 1}, {Default: 1, Modes: map[string]int{"hot": 4}}}})
	want := map[int]bool{}
	for _, k := range []int{2, 1, 4} {
		for _, sh := range p.shardsOf("hot", "eu", k) {
			want[sh] = true
		}
	}
	got := p.ReadShards("hot", "eu")
	if len(got) != len(want) || got[0] != HomeShard("hot", "eu", 64) {
		t.Fatalf("ReadShards %v, want the %d shards %v, home first", got, len(want), want)
	}
	for _, sh := range got {
		if !want[sh] {
			t.Fatalf("ReadShards %v has %d, not a stripe of any configuration", got, sh)
		}
	}
	if c := p.CreateShards("hot", "eu"); !slices.Equal(c, p.shardsOf("hot", "eu", 2)) {
		t.Fatalf("CreateShards %v, want K=2's %v", c, p.shardsOf("hot", "eu", 2))
	}
	if cold := p.ReadShards("cold", "eu"); len(cold) != 2 {
		t.Fatalf("cold pair: ReadShards %v, want K=2's and K=1's (a subset): 2 shards", cold)
	}
}

// UsedCreateShards are each recorded configuration's stripes of a mode,
// the current one's first, a K given by several configurations once.
func TestUsedCreateShards(t *testing.T) {
	p := NewPlacement(Keys{prefix: "rs"}, 64, Stripes{Default: 2})
	p.state.Store(&stripeState{current: Stripes{Default: 2},
		used: []Stripes{{Default: 2}, {Default: 1}, {Default: 1, Modes: map[string]int{"hot": 4}}, {Default: 2, Modes: map[string]int{"hot": 1}}}})
	tests := []struct {
		mode string
		ks   []int // the stripe counts of the entries, in order
	}{
		{mode: "hot", ks: []int{2, 1, 4}}, // K=1 twice (Default 1, hot=1): once
		{mode: "cold", ks: []int{2, 1}},   // K=2 twice, K=1 twice
	}
	for _, tc := range tests {
		got := p.UsedCreateShards(tc.mode, "eu")
		var want [][]int
		for _, k := range tc.ks {
			want = append(want, p.shardsOf(tc.mode, "eu", k))
		}
		if !slices.EqualFunc(got, want, slices.Equal) {
			t.Errorf("UsedCreateShards(%q) = %v, want %v (K %v)", tc.mode, got, want, tc.ks)
		}
		if !slices.Equal(got[0], p.CreateShards(tc.mode, "eu")) {
			t.Errorf("UsedCreateShards(%q)[0] = %v, not CreateShards %v", tc.mode, got[0], p.CreateShards(tc.mode, "eu"))
		}
	}
}
