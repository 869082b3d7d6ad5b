package repair

import (
	"embed"
	"testing"

	"github.com/realsync/realsync/store/internal/redisx"
	"github.com/realsync/realsync/store/internal/redisx/scripttest"
)

//go:embed lua/*.lua
var luaFiles embed.FS

// The descriptors lay out what the scripts read. (The walk's behaviour
// against Redis is tested with the root store, which owns the rooms it
// repairs: store/lifecycle_test.go and store/unheld_test.go, the repair
// tests.)
func TestScriptCallsMatchTheirLua(t *testing.T) {
	scripttest.CheckCalls(t, luaFiles, "lua", []redisx.Call{
		userRepairCall{index: "i", schedule: "s", entries: []userEntry{{"u1", "r1", "r"}}},
		codeRepairCall{codes: "c", field: "cd", schedule: "s", entries: []codeEntry{{"CODE", "r1", "r"}}},
		indexRepairCall{index: Index{Key: "k", Kind: "waiting"}, schedule: "s", entries: []string{"r1"}, roomHashes: []string{"r"}},
	}, scripttest.Prelude{})
}
