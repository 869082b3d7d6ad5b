package store

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"

	"github.com/redis/go-redis/v9"
)

// The mutation scripts as one Redis Functions library (issue 15 item 1):
// the prelude's helpers are defined once, when the library is loaded,
// instead of on every call of every script (about 10 µs of Redis time per
// call, docs/BENCHMARKS.md). Each mutation is a function of the library
// that binds its keys and arguments (begin) and runs the script's body:
// the same Lua, the same KEYS and ARGV, the same replies, as EVALSHA of
// prelude + "begin()" + body, which is what runs where Redis has no
// Functions (the embedded store, miniredis; Redis before 7) or when
// Config.ScriptsOnly says so.
//
// The library's and its functions' names carry the hash of its code
// ("realsync_<hash>", "<script>_<hash>"), so instances of two versions
// share a Redis during a rolling upgrade, each calling its own. Init loads
// it on every master (FUNCTION LOAD REPLACE); a node that answers a call
// with "Function not found" (a node added later, a FUNCTION FLUSH, a
// restart without persistence) gets it loaded and the call runs again, as
// Script.Run does with EVALSHA on NOSCRIPT. Replicas get it by
// replication, so a promoted replica has it.

// mutation is a mutation script of the library, with the prelude
// prepended for EVALSHA.
func mutation(name, src string) *luaScript {
	return &luaScript{Script: redis.NewScript(preludeLua + "\nbegin()\n" + src), name: name, body: src}
}

// libraryName and libraryCode are the library of every mutation script.
var libraryName, libraryCode = library(roomCreate, roomJoin, playerRemove, roomUpdate, roomDelete, statePatch,
	streamOpen, streamClose, presenceSweep, messageSend, roomLifecycle, roomRepair, seatsReserve)

func library(ms ...*luaScript) (string, string) {
	sort.Slice(ms, func(i, j int) bool { return ms[i].name < ms[j].name })
	var b strings.Builder
	b.WriteString("local KEYS, ARGV\n")
	b.WriteString(preludeLua)
	for _, m := range ms {
		fmt.Fprintf(&b, "\nredis.register_function('%s_@', function(keys, args)\nKEYS, ARGV = keys, args\nbegin()\n%s\nend)\n", m.name, m.body)
	}
	sum := sha1.Sum([]byte(b.String()))
	hash := hex.EncodeToString(sum[:6])
	for _, m := range ms {
		m.fname = m.name + "_" + hash
		scriptNames[m.fname] = m.name
	}
	name := "realsync_" + hash
	return name, "#!lua name=" + name + "\n" + strings.ReplaceAll(b.String(), "_@', function(keys, args)", "_"+hash+"', function(keys, args)")
}

// loadLibrary loads the library on every master; false when Redis has no
// Functions (unknown command) or the user may not load them (NOPERM), so
// the store runs the scripts with EVALSHA.
func (s *Store) loadLibrary(ctx context.Context) (bool, error) {
	load := func(ctx context.Context, c *redis.Client) error {
		return c.FunctionLoadReplace(ctx, libraryCode).Err()
	}
	var err error
	switch c := s.client.(type) {
	case *redis.ClusterClient:
		err = c.ForEachMaster(ctx, load)
	case *redis.Client:
		err = load(ctx, c)
	default:
		return false, nil
	}
	// no Functions (miniredis, Redis < 7), or an ACL that forbids loading
	// them: the scripts run with EVALSHA, as before
	if err != nil && (strings.Contains(strings.ToLower(err.Error()), "unknown command") || redis.HasErrorPrefix(err, "NOPERM")) {
		return false, nil
	}
	return err == nil, err
}

// loadLibraryFor loads the library on the master of key.
func (s *Store) loadLibraryFor(ctx context.Context, key string) error {
	switch c := s.client.(type) {
	case *redis.ClusterClient:
		node, err := c.MasterForKey(ctx, key)
		if err != nil {
			return err
		}
		return node.FunctionLoadReplace(ctx, libraryCode).Err()
	default:
		return s.client.FunctionLoadReplace(ctx, libraryCode).Err()
	}
}

// functionMissing: the node does not have the library (loaded elsewhere,
// flushed, or a node added since Init).
func functionMissing(err error) bool {
	return err != nil && strings.Contains(err.Error(), "Function not found")
}

// missingCode: a queued mutation failed because the node lacks its code
// (NOSCRIPT for EVALSHA, "Function not found" for FCALL).
func missingCode(err error) bool {
	return redis.HasErrorPrefix(err, "NOSCRIPT") || functionMissing(err)
}
