package roomlua

import (
	_ "embed"

	"github.com/realsync/realsync/store/internal/layout"
	"github.com/realsync/realsync/store/internal/redisx"
)

//go:embed lua/prelude.lua
var preludeSrc string

// preludeLua is the prelude with the seat limit written in (layout.FillLua).
var preludeLua = layout.FillLua("prelude.lua", preludeSrc)

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

//go:embed lua/seats_reserve.lua
var seatsReserveLua string

// Each script is run only through its descriptor (calls.go) by the
// store's redisx.Runner: a mutation as FCALL of its function in the
// library where Redis has Functions (library.go), anything else, and a
// mutation elsewhere, as EVALSHA (EVAL when the node does not know it:
// after a restart or SCRIPT FLUSH).
var (
	roomCreate    = mutation("room_create", roomCreateLua)
	roomJoin      = mutation("room_join", roomJoinLua)
	playerRemove  = cleanup("player_remove", playerRemoveLua)
	roomUpdate    = mutation("room_update", roomUpdateLua)
	roomDelete    = cleanup("room_delete", roomDeleteLua)
	statePatch    = mutation("state_patch", statePatchLua)
	streamOpen    = mutation("stream_open", streamOpenLua)
	streamClose   = cleanup("stream_close", streamCloseLua)
	presenceSweep = cleanup("presence_sweep", presenceSweepLua)
	messageSend   = mutation("message_send", messageSendLua)
	roomLifecycle = cleanup("room_lifecycle", roomLifecycleLua)
	roomRepair    = mutation("room_repair", roomRepairLua)
	seatsReserve  = mutation("seats_reserve", seatsReserveLua)
	messageList   = readOnly("message_list", messageListLua)
	// PresenceRenew renews room streams' presence leases (the store's
	// redisx.RenewCall)
	PresenceRenew = plain("presence_renew", presenceRenewLua)
)

//go:embed lua/quick_join.lua
var quickJoinLua string

// quickJoin picks before begin() binds the keys and arguments, then joins
// as room_join does, or creates as room_create does (see
// lua/quick_join.lua), each body in a function of its own: a function of
// the library (library.go), as the mutations it joins or creates as.
var quickJoin = redisx.MutationAfter(scriptPrelude, "quick_join", quickJoinLua,
	"local function qj_join()\n"+roomJoinLua+"\nend\nlocal function qj_make()\n"+roomCreateLua+"\nend\n"+
		"if not qj_create then return qj_join() end\n"+
		"local r = qj_make()\nif r[1] == 'OK' then r[3], r[4] = room_id, 'created' end\nreturn r\n")
