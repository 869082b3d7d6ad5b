package tickets

import "github.com/realsync/realsync/store/internal/redisx"

// ExportedCalls is one descriptor of each script, for the Lua check.
func ExportedCalls() []redisx.Call {
	return []redisx.Call{
		userCall{key: "k", op: "claim", id: "t", replace: "", ms: 1000},
		createCall{tickets: "a", schedule: "b", queue: "c", id: "t", record: "{}", group: "{}", rating: 1, ms: 1, maxQueue: 1},
		cancelCall{tickets: "a", schedule: "b", queue: "c", id: "t", grace: 1},
		passCall{tickets: "a", schedule: "b", queue: "c", pending: "d", backfill: "e"},
		requeueCall{tickets: "a", schedule: "b", queue: "c", pending: "d", backfill: "e", match: "m", room: "r", grace: 1, ids: []string{"t"}},
		assignCall{tickets: "a", pending: "b", match: "m", room: "r", ids: []string{"t"}},
		leaseCall{key: "k", op: "take", holder: "h", ms: 1},
	}
}

// BackfillKey is mode's backfill rooms' key.
func (s *Store) BackfillKey(mode string) string { return s.backfill(mode) }
