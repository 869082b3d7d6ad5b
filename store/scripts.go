package store

import (
	_ "embed"

	"github.com/redis/go-redis/v9"
)

//go:embed lua/prelude.lua
var preludeLua string

//go:embed lua/room_create.lua
var roomCreateLua string

//go:embed lua/room_join.lua
var roomJoinLua string

//go:embed lua/player_remove.lua
var playerRemoveLua string

//go:embed lua/room_update.lua
var roomUpdateLua string

//go:embed lua/room_delete.lua
var roomDeleteLua string

//go:embed lua/state_patch.lua
var statePatchLua string

//go:embed lua/stream_open.lua
var streamOpenLua string

//go:embed lua/stream_close.lua
var streamCloseLua string

//go:embed lua/presence_sweep.lua
var presenceSweepLua string

//go:embed lua/message_send.lua
var messageSendLua string

//go:embed lua/presence_renew.lua
var presenceRenewLua string

//go:embed lua/message_list.lua
var messageListLua string

//go:embed lua/room_lifecycle.lua
var roomLifecycleLua string

//go:embed lua/room_repair.lua
var roomRepairLua string

//go:embed lua/index_repair.lua
var indexRepairLua string

//go:embed lua/user_repair.lua
var userRepairLua string

//go:embed lua/code_repair.lua
var codeRepairLua string

//go:embed lua/holdings_reserve.lua
var holdingsReserveLua string

//go:embed lua/holdings_release.lua
var holdingsReleaseLua string

//go:embed lua/userstreams_open.lua
var userStreamsOpenLua string

//go:embed lua/userstreams_renew.lua
var userStreamsRenewLua string

// Each script is run only through Script.Run (EVALSHA, then EVAL when the
// server does not know it: after a restart or SCRIPT FLUSH), and each
// mutation through Store.runMutation or queueMutation (functions.go: FCALL
// of the library's function where Redis has Functions, else as a script).
var (
	roomCreate    = mutation("room_create", roomCreateLua)
	roomJoin      = mutation("room_join", roomJoinLua)
	playerRemove  = mutation("player_remove", playerRemoveLua)
	roomUpdate    = mutation("room_update", roomUpdateLua)
	roomDelete    = mutation("room_delete", roomDeleteLua)
	statePatch    = mutation("state_patch", statePatchLua)
	streamOpen    = mutation("stream_open", streamOpenLua)
	streamClose   = mutation("stream_close", streamCloseLua)
	presenceSweep = mutation("presence_sweep", presenceSweepLua)
	messageSend   = mutation("message_send", messageSendLua)
	roomLifecycle = mutation("room_lifecycle", roomLifecycleLua)
	roomRepair    = mutation("room_repair", roomRepairLua)
	indexRepair   = redis.NewScript(indexRepairLua)
	userRepair    = redis.NewScript(userRepairLua)
	codeRepair    = redis.NewScript(codeRepairLua)
	messageList   = redis.NewScript(messageListLua)
	presenceRenew = redis.NewScript(presenceRenewLua)
	// per user, in the user's own slot (holdings.go)
	holdingsReserve  = redis.NewScript(holdingsReserveLua)
	holdingsRelease  = redis.NewScript(holdingsReleaseLua)
	userStreamsOpen  = redis.NewScript(userStreamsOpenLua)
	userStreamsRenew = redis.NewScript(userStreamsRenewLua)
)

// The instance registry's scripts (instances.go).

//go:embed lua/instance_heartbeat.lua
var instanceHeartbeatLua string

//go:embed lua/instance_reap.lua
var instanceReapLua string

//go:embed lua/janitor_release.lua
var janitorReleaseLua string

var (
	instanceHeartbeat = redis.NewScript(instanceHeartbeatLua)
	instanceReap      = redis.NewScript(instanceReapLua)
	janitorRelease    = redis.NewScript(janitorReleaseLua)
)
