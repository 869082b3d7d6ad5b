package webhooks

import (
	"embed"
	"testing"

	"github.com/realsync/realsync/store/internal/redisx"
	"github.com/realsync/realsync/store/internal/redisx/scripttest"
)

//go:embed lua/*.lua
var luaFiles embed.FS

// Each descriptor lays out what its Lua reads, one per lua/ file.
func TestScriptCallsMatchTheirLua(t *testing.T) {
	scripttest.CheckCalls(t, luaFiles, "lua", []redisx.Call{
		fanoutCall{outbox: "o", deliveries: "d", backlog: "b", dead: "x", entry: "1-0", message: "msg_0_1-0",
			maxBacklog: 10, deadCap: deadCap{10, 1000}, nowMs: 1, refusedErr: "e", endpoints: []string{"a"}, others: []string{"b"}},
		failCall{deliveries: "d", retries: "r", dead: "x", backlog: "b", recount: "c", entry: "1-0", dueMs: 1, maxAttempts: 3, deadCap: deadCap{10, 1000}, nowMs: 1, lastErr: "e"},
		settleCall{deliveries: "d", backlog: "b", retries: "r", recount: "c", entry: "1-0"},
		consumersCall{stream: "d", mode: "sweep", self: "i1", idleMs: 1000},
		dueCall{retries: "r", deliveries: "d", recount: "c", nowMs: 1, limit: 10},
		replayCall{dead: "x", deliveries: "d", backlog: "b", entry: "1-0", maxBacklog: 10, maxDeliveries: 10, inForce: []string{"a"}},
		recountCall{deliveries: "d", retries: "r", backlog: "b", recount: "c", checks: "n", step: 10, stepBytes: 1000, ttlMs: 1000, pauseMs: 1000,
			walkEvery: 10, checksTTLMs: 1000},
	}, scripttest.Prelude{})
}
