package holdings

import (
	_ "embed"

	"github.com/realsync/realsync/store/internal/redisx"
)

//go:embed lua/holdings_reserve.lua
var reserveLua string

//go:embed lua/holdings_release.lua
var releaseLua string

//go:embed lua/holdings_rebind.lua
var rebindLua string

// FunctionsLua defines holdings_reserve.lua and holdings_rebind.lua as the
// Lua functions holdings_reserve(KEYS, ARGV) and holdings_rebind(KEYS,
// ARGV), each answering as its script, for a script of the quick-join that
// runs one beside its lock in the user's slot: one call where there were
// two (PlaceholderTry, EndPlaceholder).
var FunctionsLua = "local function holdings_reserve(KEYS, ARGV)\n" + reserveLua + "\nend\n" +
	"local function holdings_rebind(KEYS, ARGV)\n" + rebindLua + "\nend\n"

var (
	holdingsReserve = redisx.Plain("holdings_reserve", reserveLua)
	holdingsRelease = redisx.Plain("holdings_release", releaseLua)
	holdingsRebind  = redisx.Plain("holdings_rebind", rebindLua)
)

// reserveCall is holdings_reserve.lua: the user of key is about to be in
// room as role ("o" owner, "m" member), within owned and joined (0 no
// limit), or is (or may be) in it already (record); seed (roomId, role
// pairs) rebuilds a cold key, or adds to a key built partially; partial:
// the seed lacks the shards that could not be read.
type reserveCall struct {
	key, room, role string
	owned, joined   int
	ttlMs           int64
	record          bool
	seed            []any
	partial         bool
}

func (reserveCall) Script() *redisx.Script { return holdingsReserve }
func (c reserveCall) KeysArgs() ([]string, []any) {
	args := []any{c.room, c.role, c.owned, c.joined, c.ttlMs, "", "", Reread.Microseconds()}
	if c.record {
		args[5] = "1"
	}
	if c.seed != nil {
		args[6] = map[bool]string{false: "seed", true: "part"}[c.partial]
		args = append(args, c.seed...)
	}
	return []string{c.key}, args
}

// releaseCall is holdings_release.lua: changes to one user's holdings.
type releaseCall struct {
	key     string
	changes []heldChange
}

// heldChange changes the entry of room if it still holds the reservation
// value was read from (its stamp; "*" any): to "" drops it, "left" drops
// it after a leave (holdings_release.lua: or notes the leave), "o" or "m"
// sets the role, "-<µs>" keeps an entry younger than that, "undo:<value>"
// puts that value back. Value "+" adds the entry, with role to, when the
// room has none.
type heldChange struct{ room, value, to string }

func (releaseCall) Script() *redisx.Script { return holdingsRelease }
func (c releaseCall) KeysArgs() ([]string, []any) {
	args := make([]any, 0, 3*len(c.changes))
	for _, ch := range c.changes {
		args = append(args, ch.room, ch.value, ch.to)
	}
	return []string{c.key}, args
}

// rebindCall is holdings_rebind.lua: the placeholder entry becomes room's,
// as role, or is dropped (room "").
type rebindCall struct{ key, placeholder, room, role string }

func (rebindCall) Script() *redisx.Script { return holdingsRebind }
func (c rebindCall) KeysArgs() ([]string, []any) {
	return []string{c.key}, []any{c.placeholder, c.room, c.role}
}
