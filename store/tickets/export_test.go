package tickets

import (
	"context"
	"encoding/json"
	"time"

	"github.com/realsync/realsync/store/internal/redisx"
)

// ExportedCalls is one descriptor of each script, for the Lua check.
func ExportedCalls() []redisx.Call {
	return []redisx.Call{
		userCall{key: "k", op: "claim", id: "t", replace: "", ms: 1000},
		createCall{tickets: "a", schedule: "b", queue: "c", modes: "d", id: "t", record: "{}", group: "{}", mode: "m", rating: 1, ms: 1, grace: 1, maxQueue: 1},
		cancelCall{tickets: "a", schedule: "b", queue: "c", id: "t", grace: 1},
		passCall{tickets: "a", schedule: "b", queue: "c", pending: "d", backfill: "e"},
		requeueCall{tickets: "a", schedule: "b", queue: "c", pending: "d", backfill: "e", match: "m", room: "r", grace: 1, barred: 1, ids: []string{"t"}},
		assignCall{tickets: "a", pending: "b", match: "m", room: "r", ids: []string{"t"}},
		commitCall{pending: "b", match: "m", room: "r", ids: []string{"t"}},
		leaseCall{key: "k", op: "take", holder: "h", ms: 1},
		forgetCall{key: "k", mode: "m"},
		syncedCall{key: "k", room: "r", ttl: time.Second, check: true},
	}
}

// ModesKey is the key listing mode among its shard's modes with tickets.
func (s *Store) ModesKey(mode string) string { return s.modes(s.modeShard(mode)) }

// ShardModesKey is the key listing shard's modes with tickets (shard
// 0's: the one list of every mode, before the lists were per shard).
func (s *Store) ShardModesKey(shard int) string { return s.modes(shard) }

// ListAllDue has Modes read every shard's list next (listAllEvery past).
func (s *Store) ListAllDue() {
	s.mu.Lock()
	s.listedAll = time.Time{}
	s.mu.Unlock()
}

// ListAllDone has Modes take every shard's list as read just now: its
// next reads are of the shards found with a mode (listAllIdle not past).
func (s *Store) ListAllDone() {
	s.mu.Lock()
	s.listedAll = time.Now()
	s.mu.Unlock()
}

// ModeShard is the shard of mode's keys.
func (s *Store) ModeShard(mode string) int { return s.modeShard(mode) }

// BackfillKey is mode's backfill rooms' key.
func (s *Store) BackfillKey(mode string) string { return s.backfill(mode) }

// SetCreated rewrites ticket id's creation time (ms) in its state, as if
// it had waited since then.
func (s *Store) SetCreated(ctx context.Context, mode, id string, ms int64) error {
	return s.setState(ctx, mode, id, "cr", ms)
}

// setState rewrites field of ticket id's state to ms.
func (s *Store) setState(ctx context.Context, mode, id, field string, ms int64) error {
	key := s.modeTickets(mode)
	raw, err := s.b.Client.HGet(ctx, key, id+":s").Result()
	if err != nil {
		return err
	}
	var st map[string]any
	if err := json.Unmarshal([]byte(raw), &st); err != nil {
		return err
	}
	st[field] = ms
	out, _ := json.Marshal(st)
	return s.b.Client.HSet(ctx, key, id+":s", out).Err()
}

// Barred is the rooms ticket id of mode is barred from (its state's "nb").
func (s *Store) Barred(ctx context.Context, mode, id string) ([]string, error) {
	raw, err := s.b.Client.HGet(ctx, s.modeTickets(mode), id+":s").Result()
	if err != nil {
		return nil, err
	}
	var st struct {
		Nb []string `json:"nb"`
	}
	if err := json.Unmarshal([]byte(raw), &st); err != nil {
		return nil, err
	}
	return st.Nb, nil
}

// PendingKey is mode's pending matches' key (in the mode's slot).
func (s *Store) PendingKey(mode string) string { return s.pending(mode) }

// ForgetClaim deletes uid's active-ticket claim, as a failover that lost
// the claim's write would: uid may then queue another ticket.
func (s *Store) ForgetClaim(ctx context.Context, uid string) error {
	return s.b.Client.Del(ctx, s.userKey(uid)).Err()
}

// ForgetActive deletes uid's active-ticket field among mode's shard's
// tickets, as for a ticket queued by a release before the field
// (ticket_create): with ForgetClaim, uid may then queue another ticket of
// the mode beside it.
func (s *Store) ForgetActive(ctx context.Context, mode, uid string) error {
	return s.b.Client.HDel(ctx, s.modeTickets(mode), "u:"+uid).Err()
}

// SetExpires rewrites ticket id's expiry (ms) in its state, as if its TTL
// ended then (its place in the schedule is left: no pass has seen it).
func (s *Store) SetExpires(ctx context.Context, mode, id string, ms int64) error {
	return s.setState(ctx, mode, id, "ex", ms)
}
