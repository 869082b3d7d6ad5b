package repair

import "github.com/realsync/realsync/store/internal/redisx"

// userRepairCall is user_repair.lua: the shard user index's entries
// checked against their rooms.
type userRepairCall struct {
	index, schedule string
	entries         []userEntry
}

// userEntry is one room id of a user index entry and the room's hash.
type userEntry struct{ user, room, roomHash string }

func (userRepairCall) Script() *redisx.Script { return userRepair }
func (c userRepairCall) KeysArgs() ([]string, []any) {
	keys := []string{c.index, c.schedule}
	args := make([]any, 0, 2*len(c.entries))
	for _, e := range c.entries {
		keys = append(keys, e.roomHash, e.roomHash+":users")
		args = append(args, e.user, e.room)
	}
	return keys, args
}

// codeRepairCall is code_repair.lua: the shard's invite codes (field
// "cd") or create keys ("ck") checked against their rooms.
type codeRepairCall struct {
	codes, field, schedule string
	entries                []codeEntry
}

// codeEntry is an invite code (a create key), its room's id and hash.
type codeEntry struct{ code, room, roomHash string }

func (codeRepairCall) Script() *redisx.Script { return codeRepair }
func (c codeRepairCall) KeysArgs() ([]string, []any) {
	keys := []string{c.codes, c.schedule}
	args := make([]any, 0, 1+2*len(c.entries))
	args = append(args, c.field)
	for _, e := range c.entries {
		keys = append(keys, e.roomHash)
		args = append(args, e.code, e.room)
	}
	return keys, args
}

// indexRepairCall is index_repair.lua: entries of index checked against
// their rooms (roomHashes[i] is the hash of entries[i]'s room).
type indexRepairCall struct {
	index      Index
	schedule   string
	entries    []string
	roomHashes []string
}

func (indexRepairCall) Script() *redisx.Script { return indexRepair }
func (c indexRepairCall) KeysArgs() ([]string, []any) {
	keys := append([]string{c.index.Key, c.schedule}, c.roomHashes...)
	args := []any{c.index.Kind, c.index.Mode, c.index.Region}
	for _, e := range c.entries {
		args = append(args, e)
	}
	return keys, args
}
