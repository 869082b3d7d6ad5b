package roomlua

import (
	"embed"
	"testing"

	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/sse"

	"github.com/realsync/realsync/store/internal/layout"
	"github.com/realsync/realsync/store/internal/redisx"
	"github.com/realsync/realsync/store/internal/redisx/scripttest"
)

//go:embed lua/*.lua
var luaFiles embed.FS

// TestScriptCallsMatchTheirLua holds every descriptor to the Lua it runs:
// each script of lua/ has exactly one, and the KEYS and ARGV a descriptor
// lays out reach every index the script (with the prelude, for a
// mutation) reads by number — exactly, for a script that reads no index
// it computes. A descriptor that drops or adds an argument fails here,
// before any Redis.
func TestScriptCallsMatchTheirLua(t *testing.T) {
	env := Env{Keys: layout.New(layout.NewTags("t", 16), true, false), PubCmd: "PUBLISH", LogArgs: [2]string{"100 1000", "60"}}
	id := layout.NewRoomID(1)
	scope, indexed := env.Scope(1, id), env.Indexed(1, id, "pool", "eu")
	nr := NewRoom{P: rooms.NewRoom{Name: "r", Mode: "pool", Region: "eu", Visibility: rooms.Public, MaxPlayers: 4,
		State: rooms.State{"a": []byte("1")}}, Owner: rooms.User{ID: "u1", Name: "Ann"}, Attrs: []byte("{}"), StateSize: 3, FirstCheck: "inf"}
	calls := []redisx.Call{
		CreateCall{indexed, nr},
		JoinCall{indexed, "u1", `"Ann"`, "", true},
		RemoveCall{indexed, "u1", "", "left", false},
		UpdateCall{indexed, "u1", RoomChanges{Name: "x", NameJSON: `"x"`}, "CODE"},
		DeleteCall{indexed, "u1"},
		PatchCall{scope, "u1", -1, rooms.State{"k": []byte("1")}, []string{"d"}},
		StreamOpenCall{scope, "u1", "s1", 1000, "after", sse.Cursor{Set: true, Version: 3, Tag: "abc"}, 10},
		StreamCloseCall{scope, 1, "s1", 1000, 0},
		SweepCall{indexed, 1000},
		ReserveSeatsCall{indexed, "u1", 15000, 4, "b", []string{"u2", "u3"}},
		MessageSendCall{scope, "u1", `"chat"`, []byte(`{}`), []int{2}, "k1 u1", "d1", "0123456789abcdef0123456789abcdef"},
		LifecycleCall{indexed, [4]int64{60000, 0, 0, 60000}},
		RoomRepairCall{indexed},
		MessageListCall{Room: "r", Users: "u", Messages: "m", Caller: "u1", End: "+", Count: 10},
		redisx.RenewCall{Sc: PresenceRenew, Keys: []string{"p"}, Members: []string{"s:1:a"}, TTLMs: 1000},
		QuickJoinCall{Env: env, Shard: 1, Mode: "pool", Region: "eu",
			User: "u1", NameJSON: `"Ann"`, Candidates: []string{id}, CreateID: id, Create: nr},
	}
	scripttest.CheckCalls(t, luaFiles, "lua", calls, scripttest.Prelude{Src: preludeLua, Keys: 12,
		Runs: func(sc *redisx.Script) bool { return sc.Body != "" }})
}
