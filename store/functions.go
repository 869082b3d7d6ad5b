package store

import "github.com/realsync/realsync/store/internal/redisx"

// The room mutations run as one Redis Functions library (redisx.Library):
// the prelude (lua/prelude.lua) defined once, each mutation a function of
// it; EVALSHA of prelude + body where Redis has no Functions (the embedded
// store; Redis before 7) or Config.ScriptsOnly says so.

// mutation is a room mutation script of the library, with the prelude
// prepended for EVALSHA.
func mutation(name, src string) *redisx.Script { return redisx.Mutation(preludeLua, name, src) }

// plain is a script run as it is written (no prelude, not in the library).
func plain(name, src string) *redisx.Script { return redisx.Plain(name, src) }

// readOnly is a plain script that writes nothing: sent again after a
// lost reply, as any read (redisx.ReadOnly).
func readOnly(name, src string) *redisx.Script { return redisx.ReadOnly(name, src) }

// library is the library of every mutation script.
var library = redisx.NewLibrary(preludeLua, roomCreate, roomJoin, playerRemove, roomUpdate, roomDelete, statePatch,
	streamOpen, streamClose, presenceSweep, messageSend, roomLifecycle, roomRepair, seatsReserve, quickJoin)
