package quickjoin

import (
	"embed"
	"testing"
	"time"

	"github.com/realsync/realsync/store/internal/redisx"
	"github.com/realsync/realsync/store/internal/redisx/scripttest"
)

//go:embed lua/*.lua
var luaFiles embed.FS

// The descriptors lay out what the scripts read (with the holdings'
// arguments, which the scripts pass on: holdings.FunctionsLua). The
// quick-join's behaviour against Redis is tested through the root store:
// store/quickjoin_test.go, store/holdings_test.go, store/sentonce_test.go.
func TestScriptCallsMatchTheirLua(t *testing.T) {
	scripttest.CheckCalls(t, luaFiles, "lua", []redisx.Call{
		lockCall{key: "l", token: "t", ttl: time.Second, held: "h", reserve: []any{"qj:x", "o", 5, 0, 1000, "", ""}},
		endCall{key: "l", token: "t", held: "h", rebind: []any{"qj:x", "r1", "m"}},
	}, scripttest.Prelude{})
}
