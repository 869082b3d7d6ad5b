package layout

import (
	"crypto/rand"
	"encoding/binary"
	"hash/fnv"
	"strconv"
	"strings"

	"github.com/realsync/realsync/rooms"
)

const (
	Base62      = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	IDRandLen   = 14 // ≈ 83 random bits
	IDShardLen  = 2  // base-36 shard number, so at most 1296 shards
	MaxShards   = 36 * 36
	codeBits    = 5 * rooms.CodeLength
	eventTagLen = 6
)

// HomeShard is stripe 0 of a (mode, region) pair (stripes.go): with K = 1
// the shard of every room of the pair, so listings and matchmaking for a
// pair read one slot.
func HomeShard(mode, region string, shards int) int {
	h := fnv.New32a()
	h.Write([]byte(mode))
	h.Write([]byte{0})
	h.Write([]byte(region))
	return int(h.Sum32() % uint32(shards))
}

// NewRoomID returns "<shard base-36, 2 chars><14 random base-62 chars>".
func NewRoomID(shard int) string {
	s := strconv.FormatInt(int64(shard), 36)
	if len(s) < IDShardLen {
		s = "0" + s
	}
	return s + RandomString(IDRandLen, Base62)
}

// RoomShard decodes the shard of a room id; false for ids this deployment
// never issued.
func RoomShard(id string, shards int) (int, bool) {
	if len(id) != IDShardLen+IDRandLen {
		return 0, false
	}
	n, err := strconv.ParseInt(id[:IDShardLen], 36, 32)
	if err != nil || n < 0 || int(n) >= shards || strings.ToLower(id[:IDShardLen]) != id[:IDShardLen] {
		return 0, false
	}
	return int(n), true
}

// NewCode returns a random invite code in its canonical form (see
// rooms.NormalizeCode) whose value modulo shards is shard, so the code alone
// tells which shard's code table holds it.
func NewCode(shard, shards int) string {
	v := randomUint64() % (1 << codeBits)
	v = v - v%uint64(shards) + uint64(shard)
	if v >= 1<<codeBits {
		v -= uint64(shards)
	}
	b := make([]byte, rooms.CodeLength)
	for i := len(b) - 1; i >= 0; i-- {
		b[i] = rooms.CodeAlphabet[v%32]
		v /= 32
	}
	return rooms.FormatCode(string(b))
}

// CodeShard is the shard of a normalized invite code of either length
// (dashes skipped).
func CodeShard(code string, shards int) int {
	var v uint64
	for i := 0; i < len(code); i++ {
		if code[i] != '-' {
			v = v*32 + uint64(strings.IndexByte(rooms.CodeAlphabet, code[i]))
		}
	}
	return int(v % uint64(shards))
}

func randomUint64() uint64 {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return binary.LittleEndian.Uint64(b[:])
}

func RandomString(n int, alphabet string) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}

// EventTag is the short random tag of a script call's events: after a
// failover that lost events, the same version carries a different tag.
func EventTag() string { return RandomString(eventTagLen, Base62) }
