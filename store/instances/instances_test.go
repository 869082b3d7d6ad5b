package instances

import (
	"embed"
	"strings"
	"testing"

	"github.com/realsync/realsync/internal/fleet"
	"github.com/realsync/realsync/store/internal/redisx"
	"github.com/realsync/realsync/store/internal/redisx/scripttest"
)

//go:embed lua/*.lua
var luaFiles embed.FS

// The descriptors lay out what the scripts read. (The registry's behaviour
// against Redis is tested with the root store, which wires the janitor
// leases' release: store/instances_test.go.)
func TestScriptCallsMatchTheirLua(t *testing.T) {
	scripttest.CheckCalls(t, luaFiles, "lua", []redisx.Call{
		heartbeatCall{live: "l", hash: "h", in: fleet.Instance{ID: "i"}, ttlMs: 1000},
		reapCall{live: "l", batch: 10},
	}, scripttest.Prelude{})
}

// The registry's keys share one tag of their own, apart from every shard's.
func TestKeysShareOneTag(t *testing.T) {
	b := &redisx.Base{Prefix: "rs", Shards: 16}
	r := New(b, 0, nil)
	const want = "{rs:instances}"
	for _, key := range []string{r.live(), r.instance("a1b2c3d4"), r.instance("x.y"), r.instance("{0}")} {
		if !strings.HasPrefix(key, want) { // Redis hashes the first {...} only
			t.Errorf("%q does not start with the tag %q", key, want)
		}
	}
	for shard := range b.Shards {
		if b.Tag(shard) == want {
			t.Errorf("shard %d shares the registry's tag", shard)
		}
	}
	if !strings.HasPrefix(r.live(), strings.TrimSuffix(r.Pattern(), "*")) {
		t.Errorf("pattern %q does not match %q", r.Pattern(), r.live())
	}
}
