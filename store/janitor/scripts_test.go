package janitor

import (
	"embed"
	"testing"
	"time"

	"github.com/realsync/realsync/store/internal/redisx"
	"github.com/realsync/realsync/store/internal/redisx/scripttest"
)

//go:embed lua/*.lua
var luaFiles embed.FS

// The descriptors lay out what the scripts read.
func TestScriptCallsMatchTheirLua(t *testing.T) {
	scripttest.CheckCalls(t, luaFiles, "lua", []redisx.Call{
		leaseTakeCall{lease: "j", schedule: "p", instance: "i", ttl: time.Second},
		leaseReleaseCall{lease: "j", ids: []string{"i"}},
	}, scripttest.Prelude{})
}
