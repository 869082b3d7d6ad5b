package layout

import (
	"strconv"
	"sync"
	"sync/atomic"
)

// TagScheme is how a deployment's shards' hash tags are made. Every key of
// a shard starts with the shard's tag, so the shard's keys share one hash
// slot, and on a Cluster a master carries the shards whose tags' slots it
// owns: the tags' slots, not the masters' slot counts, are how the load
// spreads.
type TagScheme uint8

const (
	// PlainTags (key schema 3 and older): shard s's tag is "{<prefix>:<s>}",
	// its slot wherever CRC16 puts it. CRC16 is linear, so such slots bunch:
	// the defaults' 16 shards (prefix rs) fall 8/4/4 on three masters of
	// equal slot ranges, and 48 shards 19/15/14.
	PlainTags TagScheme = iota
	// SpreadTags (key schema 4, every deployment since): shard s of n has
	// the tag "{<prefix>:<s>:<salt>}", its salt the first base-62 string
	// (shortest first) that puts the tag at slot ⌊(2s+1)·16384/(2n)⌋, the
	// middle of the shard's 1/n of the slot space (spreadSlot). The slots
	// are evenly spaced, so m masters of equal slot ranges hold ⌊n/m⌋ or
	// ⌈n/m⌉ shards each for any shard count: up to m = 24 for the ranges
	// `redis-cli --cluster create` makes (43 for exact i·16384/m ranges);
	// beyond, a master may hold one more or one fewer (checked up to 128).
	SpreadTags
)

// PlainSchema is the last key schema without spread tags: a deployment
// that recorded it keeps PlainTags (its keys stay where they are) and is
// served as is; SchemaVersion's deployments have SpreadTags.
const PlainSchema = 3

// SchemeOf is the tag scheme of data of key schema v: PlainTags for
// PlainSchema, SpreadTags for SchemaVersion; false for a schema this
// release does not serve (older ones are migrated to PlainSchema first).
func SchemeOf(v int) (TagScheme, bool) {
	switch v {
	case PlainSchema:
		return PlainTags, true
	case SchemaVersion:
		return SpreadTags, true
	}
	return 0, false
}

func (sc TagScheme) String() string {
	if sc == SpreadTags {
		return "spread"
	}
	return "plain"
}

// Tags are a deployment's shards' hash tags and their slots, shared by
// every copy of its Keys and by its redisx.Base. They start PlainTags; the
// root store's Init sets the scheme the deployment recorded (Use) before
// anything else uses them.
type Tags struct {
	prefix string
	shards int
	cur    atomic.Pointer[tagTable]
}

type tagTable struct {
	scheme TagScheme
	tags   []string
	slots  []int
}

// NewTags returns the PlainTags of shards shards under prefix.
func NewTags(prefix string, shards int) *Tags {
	t := &Tags{prefix: prefix, shards: shards}
	t.cur.Store(makeTags(prefix, shards, PlainTags))
	return t
}

// Use sets the scheme; a no-op when it is the scheme in use.
func (t *Tags) Use(sc TagScheme) {
	if t.cur.Load().scheme != sc {
		t.cur.Store(makeTags(t.prefix, t.shards, sc))
	}
}

// Scheme is the scheme in use.
func (t *Tags) Scheme() TagScheme { return t.cur.Load().scheme }

// Prefix is the deployment's key prefix.
func (t *Tags) Prefix() string { return t.prefix }

// Tag is shard's hash tag, braces included.
func (t *Tags) Tag(shard int) string { return t.cur.Load().tags[shard] }

// Slot is the hash slot of shard's tag.
func (t *Tags) Slot(shard int) int { return t.cur.Load().slots[shard] }

// PlainTag is shard's tag under PlainTags: "{<prefix>:<shard>}".
func PlainTag(prefix string, shard int) string {
	return "{" + prefix + ":" + strconv.Itoa(shard) + "}"
}

func makeTags(prefix string, shards int, sc TagScheme) *tagTable {
	tt := &tagTable{scheme: sc, tags: make([]string, shards), slots: make([]int, shards)}
	for s := range shards {
		if sc == SpreadTags {
			tt.tags[s], tt.slots[s] = spreadTag(prefix, s, shards)
			continue
		}
		tt.tags[s] = PlainTag(prefix, s)
		tt.slots[s] = Slot(tt.tags[s])
	}
	return tt
}

// spreadTag finds shard s of n's SpreadTags tag and its slot: the first
// salt of 1 or 2 characters found by trying each in order (3 906 of
// them), else the first of 3 by solving for it. CRC16 is linear, so the
// CRC of "<prefix>:<s>:" and a salt is that of the head followed by as
// many zero bytes, xor the salt's own CRC (from 0): the salts of 3
// characters that put the tag at the slot are those whose own CRC is
// that xor one of the 4 CRCs of the slot (a slot is a CRC mod 16384),
// looked up in salt3 (the first salt of each CRC). The search alone took
// 1.5 ms for 16 shards (10 times that under the race detector, at every
// store a test opens); spreadTagSearch (tags_test.go) is it, for the tests.
func spreadTag(prefix string, s, n int) (string, int) {
	want := uint16(spreadSlot(s, n))
	head := prefix + ":" + strconv.Itoa(s) + ":"
	crc := crc16Update(0, head)
	if salt, ok := searchSalt(crc, want, 1, 2); ok {
		return "{" + head + salt + "}", int(want)
	}
	zeros := crc16Update(crc, "\x00\x00\x00")
	table := salt3()
	first := uint32(0)
	for hi := range uint16(4) {
		if i := table[zeros^(hi<<14|want)]; i != 0 && (first == 0 || i < first) {
			first = i
		}
	}
	if first != 0 {
		i := int(first - 1)
		salt := string([]byte{Base62[i/(62*62)], Base62[i/62%62], Base62[i%62]})
		return "{" + head + salt + "}", int(want)
	}
	if salt, ok := searchSalt(crc, want, 4, 6); ok { // never: salt3 covers every CRC
		return "{" + head + salt + "}", int(want)
	}
	panic("layout: no salt puts shard " + strconv.Itoa(s) + "'s tag at its slot")
}

// salt3 is, for each CRC16 (from 0), 1 + the index of the first base-62
// salt of 3 characters with that CRC (index: the salt's characters read
// as a base-62 number), 0 for none: built once, 256 KiB.
var salt3 = sync.OnceValue(func() *[65536]uint32 {
	var t [65536]uint32
	const b = len(Base62)
	for i := b*b*b - 1; i >= 0; i-- { // backwards: the first index stays
		t[crc16Update(0, string([]byte{Base62[i/(b*b)], Base62[i/b%b], Base62[i%b]}))] = uint32(i + 1)
	}
	return &t
})

// searchSalt tries every base-62 salt of minSize to maxSize characters in
// order (shortest first; of one size, as an odometer counts) on top of
// crc, a CRC16 so far, and returns the first whose CRC mod 16384 is want.
func searchSalt(crc, want uint16, minSize, maxSize int) (string, bool) {
	var salt [6]byte
	for size := minSize; size <= maxSize; size++ {
		idx := make([]int, size)
		for {
			for i, d := range idx {
				salt[i] = Base62[d]
			}
			c := crc
			for _, b := range salt[:size] {
				c = c<<8 ^ crc16Table[byte(c>>8)^b]
			}
			if c%16384 == want {
				return string(salt[:size]), true
			}
			i := size - 1
			for ; i >= 0; i-- {
				if idx[i]++; idx[i] < len(Base62) {
					break
				}
				idx[i] = 0
			}
			if i < 0 {
				break
			}
		}
	}
	return "", false
}

// spreadSlot is shard s of n's slot under SpreadTags: the middle of its
// 1/n of the slot space.
func spreadSlot(s, n int) int { return (2*s + 1) * 16384 / (2 * n) }

// Slot is the hash slot of a key: CRC16 of its hash tag (the first
// "{...}" with something inside) or of the whole key, mod 16384, as Redis
// Cluster computes it.
func Slot(key string) int {
	for i := 0; i < len(key); i++ {
		if key[i] != '{' {
			continue
		}
		for j := i + 1; j < len(key); j++ {
			if key[j] == '}' {
				if j > i+1 {
					key = key[i+1 : j]
				}
				return int(CRC16(key) % 16384)
			}
		}
		break
	}
	return int(CRC16(key) % 16384)
}

// crc16Table is CRC-16/XMODEM by the byte (CRC16).
var crc16Table = func() (t [256]uint16) {
	for i := range t {
		crc := uint16(i) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
		t[i] = crc
	}
	return t
}()

// crc16Update continues CRC16 from crc over s.
func crc16Update(crc uint16, s string) uint16 {
	for i := 0; i < len(s); i++ {
		crc = crc<<8 ^ crc16Table[byte(crc>>8)^s[i]]
	}
	return crc
}
