package holdings

import (
	"embed"
	"strings"
	"testing"

	"github.com/realsync/realsync/store/internal/redisx"
	"github.com/realsync/realsync/store/internal/redisx/scripttest"
)

//go:embed lua/*.lua
var luaFiles embed.FS

// The descriptors lay out what the scripts read. (The holdings' behaviour
// against Redis is tested through the root store, which owns the rooms
// they read: store/holdings_test.go, store/holdings_faults_test.go,
// store/unheld_test.go.)
func TestScriptCallsMatchTheirLua(t *testing.T) {
	scripttest.CheckCalls(t, luaFiles, "lua", []redisx.Call{
		reserveCall{key: "h", room: "r1", role: "o", owned: 1, joined: 2, ttlMs: 1000, seed: []any{"r0", "m"}},
		releaseCall{"h", []heldChange{{"r1", "*", ""}, {"r2", "+", "m"}}},
		rebindCall{key: "h", placeholder: Placeholder("x"), room: "r1", role: "m"},
	}, scripttest.Prelude{})
}

// A user's holdings lie in the slot of the user's shard, and a
// placeholder can never be a room id.
func TestKeysAndPlaceholders(t *testing.T) {
	b := &redisx.Base{Prefix: "t", Shards: 8}
	h := New(Config{Base: b, Joined: 1})
	for _, uid := range []string{"u1", "alice", "{x}"} {
		if k := h.Key(uid); !strings.HasPrefix(k, b.Tag(b.UserShard(uid))) {
			t.Errorf("holdings of %s: %q outside the user's slot", uid, k)
		}
	}
	if !isPlaceholder(Placeholder("abc")) || isPlaceholder("02abcdefghijklmn") {
		t.Error("placeholders and room ids overlap")
	}
}
