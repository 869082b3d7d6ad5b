package layout

import (
	"strings"
	"testing"

	"github.com/realsync/realsync/rooms"
)

// Every key a script gets must carry the same hash tag, so it lands in one
// slot (Redis 7.0 only rejects a cross-slot key when the slot is on another
// node, so small clusters would hide the bug).
func TestScriptKeysShareOneTag(t *testing.T) {
	k := Keys{prefix: "rs", held: true}
	for _, shard := range []int{0, 7, 1295} {
		id := NewRoomID(shard)
		for name, ks := range map[string][]string{
			"mutation":     k.RoomKeys(shard, id),
			"with indexes": k.RoomKeysWithIndexes(shard, id, "battle", "us-west"),
			"read":         k.ReadKeys(shard, id),
		} {
			want := k.Tag(shard)
			for _, key := range ks {
				if tagOf(key) != want {
					t.Errorf("%s keys of shard %d: %q has tag %q, want %q", name, shard, key, tagOf(key), want)
				}
			}
		}
	}
}

func tagOf(key string) string {
	i := strings.IndexByte(key, '{')
	j := strings.IndexByte(key, '}')
	if i < 0 || j < i {
		return ""
	}
	return key[i : j+1]
}

func TestRoomIDsAndCodesCarryTheirShard(t *testing.T) {
	for _, shards := range []int{1, 16, 1296} {
		for shard := 0; shard < shards; shard += 1 + shards/7 {
			id := NewRoomID(shard)
			if got, ok := RoomShard(id, shards); !ok || got != shard {
				t.Errorf("RoomShard(%q, %d) = %d, %v; want %d", id, shards, got, ok, shard)
			}
			code := NewCode(shard, shards)
			if got := CodeShard(code, shards); got != shard {
				t.Errorf("CodeShard(%q, %d) = %d; want %d", code, shards, got, shard)
			}
			if norm, ok := rooms.NormalizeCode(code); !ok || norm != code {
				t.Errorf("NewCode = %q, not canonical (%q, %v)", code, norm, ok)
			}
		}
	}
	for _, bad := range []string{"", "zz", "ZZabcdefghijklmn", "0a!", "0aabcdefghijklmnop"} {
		if _, ok := RoomShard(bad, 16); ok {
			t.Errorf("RoomShard(%q) accepted", bad)
		}
	}
}

// TestStatusIndexNames: the index names the scripts and the migrations
// know, written in one allocation.
func TestStatusIndexNames(t *testing.T) {
	k := Keys{prefix: "rs"}
	long := strings.Repeat("m", 200) // past the stack buffer
	tests := []struct {
		shard        int
		st           rooms.Status
		mode, region string
		want         string
	}{
		{0, rooms.Waiting, "", "", "{rs:0}:idx:waiting"},
		{15, "joinable", "battle", "", "{rs:15}:idx:joinable:mode:battle"},
		{3, "fill", "", "eu", "{rs:3}:idx:fill:region:eu"},
		{127, rooms.Playing, "battle", "us-west", "{rs:127}:idx:playing:mode:battle:region:us-west"},
		{1, rooms.Finished, long, "eu", "{rs:1}:idx:finished:mode:" + long + ":region:eu"},
	}
	for _, tt := range tests {
		if got := k.StatusIndex(tt.shard, tt.st, tt.mode, tt.region); got != tt.want {
			t.Errorf("statusIndex(%d, %s, %q, %q) = %q, want %q", tt.shard, tt.st, tt.mode, tt.region, got, tt.want)
		}
		if got := k.StatusIndex(tt.shard, tt.st, tt.mode, tt.region); !strings.HasPrefix(got, k.Tag(tt.shard)+":idx:") {
			t.Errorf("%q is not in the shard's slot", got)
		}
	}
}
