package layout

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// Stripes says over how many shards ("stripes") the rooms of one (mode,
// region) are spread, so that a hot pair uses more than one Redis master.
// Stripe 0 of a pair is its home shard (HomeShard), so K = 1 is the
// original layout: every pair on one shard, listing and quick-join on one
// slot. The zero value is K = 1 everywhere.
type Stripes struct {
	// Default is K for every mode without an override; 0 means 1.
	Default int
	// Modes are per-mode overrides of Default.
	Modes map[string]int
}

// ParseStripes reads REALSYNC_MODE_STRIPES: "K" (every mode), or
// "K,mode=K,..." (a default and per-mode overrides), or "mode=K,..."
// (default 1). Each K is an integer ≥ 1; the upper bound (the shard count)
// is checked by New. Errors name the bad item.
func ParseStripes(v string) (Stripes, error) {
	st := Stripes{Default: 1}
	if strings.TrimSpace(v) == "" {
		return st, nil
	}
	seenDefault := false
	for _, item := range strings.Split(v, ",") {
		item = strings.TrimSpace(item)
		mode, k, isMode := strings.Cut(item, "=")
		if !isMode {
			k, mode = item, ""
		}
		n, err := strconv.Atoi(strings.TrimSpace(k))
		if err != nil || n < 1 {
			return Stripes{}, fmt.Errorf("%q: a stripe count must be an integer ≥ 1", item)
		}
		mode = strings.TrimSpace(mode)
		switch {
		case !isMode && seenDefault:
			return Stripes{}, fmt.Errorf("%q: the default stripe count is given twice", item)
		case !isMode:
			st.Default, seenDefault = n, true
		case mode == "":
			return Stripes{}, fmt.Errorf("%q: a mode name is missing before '='", item)
		default:
			if _, dup := st.Modes[mode]; dup {
				return Stripes{}, fmt.Errorf("%q: mode %q is given twice", item, mode)
			}
			if st.Modes == nil {
				st.Modes = map[string]int{}
			}
			st.Modes[mode] = n
		}
	}
	return st, nil
}

// K is the stripe count of mode.
func (st Stripes) K(mode string) int {
	if k, ok := st.Modes[mode]; ok {
		return k
	}
	return max(st.Default, 1)
}

// Max is the largest K of any mode.
func (st Stripes) Max() int {
	m := max(st.Default, 1)
	for _, k := range st.Modes {
		m = max(m, k)
	}
	return m
}

// String is the canonical form ParseStripes reads back: the default, then
// the overrides that differ from it, sorted by mode.
func (st Stripes) String() string {
	out := strconv.Itoa(max(st.Default, 1))
	modes := make([]string, 0, len(st.Modes))
	for m, k := range st.Modes {
		if k != max(st.Default, 1) {
			modes = append(modes, m)
		}
	}
	sort.Strings(modes)
	for _, m := range modes {
		out += "," + m + "=" + strconv.Itoa(st.Modes[m])
	}
	return out
}

// stripeState is the current configuration and every configuration
// recorded in the meta hash (the current one included).
type stripeState struct {
	current Stripes
	used    []Stripes
}

// Placement holds a store's stripe configuration and places the rooms of
// each (mode, region) on its stripes.
type Placement struct {
	state  atomic.Pointer[stripeState]
	keys   Keys // the shards' tags' slots
	shards int
	// cache: "<scheme><mode>\x00<region>\x00<K>" → the pair's first K
	// stripes
	cache sync.Map
}

// NewPlacement places rooms by cur on shards shards, by the slots of k's
// tags (as they are when a pair is first placed: the root store sets
// their scheme before its first request).
func NewPlacement(k Keys, shards int, cur Stripes) *Placement {
	p := &Placement{keys: k, shards: shards}
	p.state.Store(&stripeState{current: cur, used: []Stripes{cur}})
	return p
}

// Slot is the hash slot of shard's tag.
func (p *Placement) Slot(shard int) int { return p.keys.Slot(shard) }

// Current is the configuration new rooms are placed by.
func (p *Placement) Current() Stripes { return p.state.Load().current }

// Used are every configuration recorded (the current one first), as last
// set.
func (p *Placement) Used() []Stripes { return p.state.Load().used }

// SetUsed sets the configurations recorded besides the current one, which
// reads cover (ReadShards).
func (p *Placement) SetUsed(others []Stripes) {
	p.state.Store(&stripeState{current: p.Current(), used: append([]Stripes{p.Current()}, others...)})
}

// SlotRange is which of k equal ranges of the 16384 hash slots holds slot:
// range i is [i·16384/k, (i+1)·16384/k − 1], what internal/redistest and
// `redis-cli --cluster create` assign to k masters (the latter differs by
// at most one slot at a range's end).
func SlotRange(slot, k int) int {
	i := slot * k / 16384
	for i+1 < k && (i+1)*16384/k <= slot {
		i++
	}
	return i
}

// shardsOf returns the first k stripes of (mode, region), stripe 0 first:
// stripe 0 is the home shard; stripe i is the first shard after the home
// shard (cyclically), not already a stripe, whose hash slot lies in slot
// range (r0 + i) mod k of k equal ranges, r0 the home shard's range; when
// no shard is there, the first unused shard. On a Cluster whose k masters
// own k equal contiguous slot ranges each stripe is on a master of its
// own: placement follows slot ranges, not the live topology.
func (p *Placement) shardsOf(mode, region string, k int) []int {
	shards := p.shards
	k = min(k, shards)
	if k <= 1 {
		return []int{HomeShard(mode, region, shards)}
	}
	key := string(rune('0'+p.keys.Scheme())) + mode + "\x00" + region + "\x00" + strconv.Itoa(k)
	if v, ok := p.cache.Load(key); ok {
		return v.([]int)
	}
	home := HomeShard(mode, region, shards)
	out := []int{home}
	r0 := SlotRange(p.Slot(home), k)
	for i := 1; i < k; i++ {
		want, pick, spare := (r0+i)%k, -1, -1
		for j := 1; j < shards && pick < 0; j++ {
			sh := (home + j) % shards
			if slices.Contains(out, sh) {
				continue
			}
			if spare < 0 {
				spare = sh
			}
			if SlotRange(p.Slot(sh), k) == want {
				pick = sh
			}
		}
		if pick < 0 {
			pick = spare
		}
		out = append(out, pick)
	}
	p.cache.Store(key, out)
	return out
}

// CreateShards are the stripes a new room of (mode, region) may go to:
// the current configuration's.
func (p *Placement) CreateShards(mode, region string) []int {
	return p.shardsOf(mode, region, p.state.Load().current.K(mode))
}

// UsedCreateShards are the stripes a room of (mode, region) was created
// on under each recorded configuration (CreateShards as each had it), the
// current configuration's first; configurations of the same K for mode
// give one entry. A room whose stripe derives from a seed (a match room)
// has one candidate place per entry.
func (p *Placement) UsedCreateShards(mode, region string) [][]int {
	st := p.state.Load()
	out := [][]int{p.shardsOf(mode, region, st.current.K(mode))}
	for _, c := range st.used {
		sh := p.shardsOf(mode, region, c.K(mode))
		if !slices.ContainsFunc(out, func(o []int) bool { return slices.Equal(o, sh) }) {
			out = append(out, sh)
		}
	}
	return out
}

// ReadShards are every shard that may hold a room of (mode, region): the
// union of the stripes of every recorded configuration, home shard first,
// so rooms on a stripe no longer configured are still listed and joined
// (they drain: no new room is created there).
func (p *Placement) ReadShards(mode, region string) []int {
	st := p.state.Load()
	if len(st.used) == 1 {
		return p.shardsOf(mode, region, st.used[0].K(mode))
	}
	var out []int
	for _, c := range st.used {
		for _, sh := range p.shardsOf(mode, region, c.K(mode)) {
			if !slices.Contains(out, sh) {
				out = append(out, sh)
			}
		}
	}
	return out
}

// Drained reports whether shard is a read stripe of (mode, region) where
// no room is created any more.
func (p *Placement) Drained(mode, region string, shard int) bool {
	return !slices.Contains(p.CreateShards(mode, region), shard)
}

// RandomCreateShard is a stripe of the current configuration, uniformly at
// random: rooms spread evenly over the stripes.
func (p *Placement) RandomCreateShard(mode, region string) int {
	c := p.CreateShards(mode, region)
	return c[rand.IntN(len(c))]
}

// SeededCreateShard is the stripe of the current configuration that seed
// picks: the same seed, the same stripe while the configuration stands (a
// keyed create run again looks there for the room its first run made);
// seeds spread evenly over the stripes.
func (p *Placement) SeededCreateShard(mode, region string, seed [32]byte) int {
	c := p.CreateShards(mode, region)
	return c[binary.BigEndian.Uint64(seed[24:])%uint64(len(c))]
}

// CRC16 is Redis Cluster's key hash (CRC-16/XMODEM: polynomial 0x1021,
// initial value 0), taken mod 16384 for the hash slot.
func CRC16(s string) uint16 { return crc16Update(0, s) }
