package userlog

import (
	"embed"
	"testing"

	"github.com/realsync/realsync/store/internal/redisx"
	"github.com/realsync/realsync/store/internal/redisx/scripttest"
)

//go:embed lua/*.lua
var luaFiles embed.FS

// The descriptors lay out what the scripts read.
func TestScriptCallsMatchTheirLua(t *testing.T) {
	k := Keys{Log: "l", Meta: "m", Cursors: "c", Channel: "ch"}
	scripttest.CheckCalls(t, luaFiles, "lua", []redisx.Call{
		// a player's send: the recipient's following too (KEYS[7])
		SendCall{K: k, PubCmd: "PUBLISH", MaxLen: 1, TTL: 1, Tag: "t", Event: []byte("{}"), Once: Once{From: "u", Following: "f"}},
		AckCall{K: k, Platform: "pc", Tag: "t", Seq: 1, Margin: 1, TTL: 1},
	}, scripttest.Prelude{})
}
