package store

import "maps"

// ScriptNames maps the SHA1 of every script the store runs (what EVALSHA
// names it by, what SLOWLOG shows) to its name, the base name of its file
// in store/lua: for tools that attribute Redis' own per-call figures to
// scripts (cmd/rsload -redis). A copy of what the metrics use.
func ScriptNames() map[string]string { return maps.Clone(scriptNames) }
