package roomlua

import (
	"slices"

	"github.com/realsync/realsync/store/internal/layout"
)

// Env is what every room script's scope is built from: the deployment's
// keys, its publish command and the log arguments every mutation starts
// with (lua/prelude.lua's ARGV[5] and ARGV[6]).
type Env struct {
	Keys layout.Keys
	// PubCmd publishes an event: SPUBLISH on a Cluster, PUBLISH otherwise.
	PubCmd string
	// LogArgs are ARGV[5] and ARGV[6]: "<log MAXLEN> <log bytes>[ <outbox
	// MAXLEN>]" and "<closed log TTL (s)>[ <connect grace (ms)>]".
	LogArgs [2]string
	// Outbox: webhooks are on (LogArgs[0] names the outbox's MAXLEN), and
	// each scope's last key is the shard's webhook outbox.
	Outbox bool
}

// Scope is what every mutation script gets first (lua/prelude.lua): the
// room's KEYS[1..12] — and KEYS[13..36], its indexes, the shard stats,
// the lifecycle schedule, its bans and the unheld list, for a script that
// may move the room between indexes — and ARGV[1..6] (Env.Common).
type Scope struct {
	Keys []string
	Argv []any
}

// Common is the ARGV every mutation script starts with, for room id of
// shard (lua/prelude.lua).
func (e Env) Common(shard int, id string) []any {
	return []any{id, e.Keys.Channel(shard, id), e.PubCmd, layout.EventTag(), e.LogArgs[0], e.LogArgs[1]}
}

// Scope is room id's scope for a script that moves it between no index.
func (e Env) Scope(shard int, id string) Scope {
	return Scope{Keys: e.withOutbox(shard, e.Keys.RoomKeys(shard, id)), Argv: e.Common(shard, id)}
}

// Indexed is the scope of room id of mode and region with its indexes.
func (e Env) Indexed(shard int, id, mode, region string) Scope {
	return Scope{Keys: e.withOutbox(shard, e.Keys.RoomKeysWithIndexes(shard, id, mode, region)), Argv: e.Common(shard, id)}
}

// withOutbox appends the shard's webhook outbox to a scope's keys when
// webhooks are on (ARGV[5] then says so, see lua/prelude.lua).
func (e Env) withOutbox(shard int, keys []string) []string {
	if e.Outbox {
		keys = append(keys, e.Keys.WebhookOutbox(shard))
	}
	return keys
}

// with lays the scope out with the script's own ARGV after ARGV[6].
func (r Scope) with(args ...any) ([]string, []any) {
	return r.Keys, slices.Concat(r.Argv, args)
}
