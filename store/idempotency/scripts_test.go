package idempotency

import (
	"embed"
	"strings"
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
		call{key: "k", op: "record", token: "t", ms: 1000, answer: contract.Answer{Status: 201, Body: []byte("{}")},
			budget: 4096, kept: "q", spent: "q:n", extra: "{}"},
		receiptCheckCall{Receipt{Log: "l", Head: "h", Field: "seq", Pos: 3, Tag: "g", HistoryField: "tag", History: "t"}},
	}, scripttest.Prelude{})
}

// A user's answers are kept within the Store's budget, in keys of the
// slot of the user's records; an API key's (a game server's) are not
// bounded, nor anyone's with a budget of 0.
func TestLedger(t *testing.T) {
	b := &redisx.Base{Prefix: "p", Shards: 4}
	for _, c := range []struct {
		scope  string
		budget int
		want   int
	}{{"u1", 4096, 4096}, {"key:server", 4096, 0}, {"u1", 0, 0}} {
		var got call
		New(b).WithBudget(c.budget).ledger(&got, c.scope)
		if got.budget != c.want {
			t.Errorf("%s with a budget of %d: %d, want %d", c.scope, c.budget, got.budget, c.want)
		}
		tag := b.Tag(b.UserShard(c.scope))
		if c.want > 0 && (!strings.HasPrefix(got.kept, tag+":idemq:") || got.spent != got.kept+":n") {
			t.Errorf("%s: budget keys %q and %q, want in %s", c.scope, got.kept, got.spent, tag)
		}
	}
}
