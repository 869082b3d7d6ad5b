package store

import (
	"embed"
	"testing"
	"time"

	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/sse"

	"github.com/realsync/realsync/store/internal/layout"
	"github.com/realsync/realsync/store/internal/redisx"
	"github.com/realsync/realsync/store/internal/redisx/scripttest"
)

//go:embed lua/*.lua
var luaFiles embed.FS

// TestScriptCallsMatchTheirLua holds every descriptor to the Lua it runs:
// each script of store/lua has exactly one, and the KEYS and ARGV a
// descriptor lays out reach every index the script (with the prelude, for
// a mutation) reads by number — exactly, for a script that reads no index
// it computes. A descriptor that drops or adds an argument fails here,
// before any Redis.
func TestScriptCallsMatchTheirLua(t *testing.T) {
	s := &Store{keys: layout.New("t", true, false), shards: 4, pubcmd: "PUBLISH", argv: [3]string{"100 1000", "60"}}
	id := layout.NewRoomID(1)
	scope, indexed := s.scope(1, id), s.indexedScope(1, id, "pool", "eu")
	nr := s.newRoom(rooms.User{ID: "u1", Name: "Ann"}, rooms.NewRoom{Name: "r", Mode: "pool", Region: "eu",
		Visibility: rooms.Public, MaxPlayers: 4, State: rooms.State{"a": []byte("1")}}, []byte("{}"), 3, "", false)
	calls := []redisx.Call{
		createCall{indexed, nr},
		joinCall{indexed, "u1", `"Ann"`, ""},
		removeCall{indexed, "u1", "", "left", false},
		updateCall{indexed, "u1", roomChanges{name: "x", nameJSON: `"x"`}, "CODE"},
		deleteCall{indexed, "u1"},
		patchCall{scope, "u1", -1, rooms.State{"k": []byte("1")}, []string{"d"}},
		streamOpenCall{scope, "u1", "s1", 1000, "after", sse.Cursor{Set: true, Version: 3, Tag: "abc"}, 10},
		streamCloseCall{scope, 1, "s1", 1000, 0},
		sweepCall{indexed, 1000},
		reserveSeatsCall{indexed, "u1", 15000, 4, "b", []string{"u2", "u3"}},
		messageSendCall{scope, "u1", `"chat"`, []byte(`{}`), []int{2}, "k1 u1", "d1"},
		lifecycleCall{indexed, Lifecycle{IdleTimeout: time.Minute}},
		roomRepairCall{indexed},
		messageListCall{room: "r", users: "u", messages: "m", caller: "u1", end: "+", count: 10},
		redisx.RenewCall{Sc: presenceRenew, Keys: []string{"p"}, Members: []string{"s:1:a"}, TTLMs: 1000},
		quickJoinCall{keys: s.keys, shard: 1, mode: "pool", region: "eu", pubcmd: "PUBLISH", logArgs: s.argv,
			user: "u1", nameJSON: `"Ann"`, candidates: []string{id}, createID: id, create: nr},
	}
	scripttest.CheckCalls(t, luaFiles, "lua", calls, scripttest.Prelude{Src: preludeLua, Keys: 12,
		Runs: func(sc *redisx.Script) bool { return sc.Body != "" }})
}
