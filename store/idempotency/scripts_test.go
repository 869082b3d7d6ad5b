package idempotency

import (
	"embed"
	"testing"

	contract "github.com/realsync/realsync/internal/idempotency"
	"github.com/realsync/realsync/store/internal/redisx"
	"github.com/realsync/realsync/store/internal/redisx/scripttest"
)

//go:embed lua/*.lua
var luaFiles embed.FS

// The descriptor lays out what idempotency.lua reads.
func TestScriptCallsMatchTheirLua(t *testing.T) {
	scripttest.CheckCalls(t, luaFiles, "lua", []redisx.Call{
		call{key: "k", op: "record", token: "t", ms: 1000, answer: contract.Answer{Status: 201, Body: []byte("{}")}},
	}, scripttest.Prelude{})
}
