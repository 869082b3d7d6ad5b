package store

import "github.com/realsync/realsync/store/internal/redisx"

// ScriptNames maps the SHA1 of every script the store runs (what EVALSHA
// names it by, what SLOWLOG shows) and every function of the library to
// its name, the base name of its file (room_join, of
// store/internal/roomlua/lua; the other store packages' scripts are in
// their own lua/): for tools that attribute Redis' own per-call figures to
// scripts (cmd/rsload -redis).
func ScriptNames() map[string]string { return redisx.ScriptNames() }
