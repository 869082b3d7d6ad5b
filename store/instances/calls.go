package instances

import (
	_ "embed"

	"github.com/realsync/realsync/internal/fleet"
	"github.com/realsync/realsync/store/internal/redisx"
)

//go:embed lua/instance_heartbeat.lua
var heartbeatLua string

//go:embed lua/instance_reap.lua
var reapLua string

var (
	heartbeatScript = redisx.Plain("instance_heartbeat", heartbeatLua)
	reapScript      = redisx.Plain("instance_reap", reapLua)
)

// heartbeatCall is instance_heartbeat.lua: in registers or renews its
// registration (hash) in live for ttlMs.
type heartbeatCall struct {
	live, hash string
	in         fleet.Instance
	ttlMs      int64
}

func (heartbeatCall) Script() *redisx.Script { return heartbeatScript }
func (c heartbeatCall) KeysArgs() ([]string, []any) {
	return []string{c.live, c.hash}, []any{c.in.ID, c.ttlMs, c.in.Addr, c.in.Version, c.in.StartedAt.UnixMilli(), c.in.Streams, c.in.Settings}
}

// reapCall is instance_reap.lua: at most batch lapsed ids leave live.
type reapCall struct {
	live  string
	batch int
}

func (reapCall) Script() *redisx.Script { return reapScript }
func (c reapCall) KeysArgs() ([]string, []any) {
	return []string{c.live}, []any{c.batch}
}
