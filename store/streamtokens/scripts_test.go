package streamtokens

import (
	"embed"
	"testing"

	"github.com/realsync/realsync/store/internal/redisx"
	"github.com/realsync/realsync/store/internal/redisx/scripttest"
)

//go:embed lua/*.lua
var luaFiles embed.FS

// The descriptor lays out what stream_token_use.lua reads.
func TestScriptCallsMatchTheirLua(t *testing.T) {
	scripttest.CheckCalls(t, luaFiles, "lua", []redisx.Call{
		call{key: "k", op: "use", nonce: "n", ms: 1000},
	}, scripttest.Prelude{})
}
