package migrate

import (
	"context"
	"log/slog"
	"strings"

	"github.com/realsync/realsync/internal/rediskeys"

	"github.com/realsync/realsync/store/internal/redisx"
)

// Schema 2 → 3: a user's log meta and delivery cursors move from
// "{p:s}:ulog:<userId>:meta" and "…:cur" to "{p:s}:ulogm:<userId>" and
// "{p:s}:ulogc:<userId>" (store/userlog). User ids may hold ":", so the
// log of the user "<id>:cur" was the key of <id>'s cursors: one direct
// message to that id broke <id>'s personal stream (WRONGTYPE). Each is
// renamed (keeping its TTL); a hash is told from a log (a stream) by its
// type, so an id ending in ":meta" or ":cur" is never taken for another's
// meta or cursors. Idempotent: a key already moved is gone from the old
// name, and a new name that exists already (written by this release) wins
// (the old one is deleted: schema 3 would read it as a log).
func migrateV2(ctx context.Context, m *migrator, dry bool, log *slog.Logger) (int, error) {
	moved := 0
	for shard := range m.b.Shards {
		// each shard's own tag, exactly: user ids may hold "}", so a key
		// of another kind ("…:held:x}:ulog:y:meta") must not match
		prefix := m.keys.Tag(shard) + ":ulog:"
		keys, err := m.scanKeys(ctx, rediskeys.GlobEscape(prefix)+"*")
		if err != nil {
			return moved, err
		}
		for _, k := range keys {
			uid, ok := strings.CutPrefix(k, prefix)
			if !ok {
				continue
			}
			var to string
			switch {
			case strings.HasSuffix(uid, ":meta"):
				to = m.keys.Tag(shard) + ":ulogm:" + strings.TrimSuffix(uid, ":meta")
			case strings.HasSuffix(uid, ":cur"):
				to = m.keys.Tag(shard) + ":ulogc:" + strings.TrimSuffix(uid, ":cur")
			default:
				continue
			}
			typ, err := m.b.Client.Type(ctx, k).Result()
			if err != nil {
				return moved, redisx.Wrap(err)
			}
			if typ != "hash" { // the log of a user whose id ends so
				continue
			}
			moved++
			if dry {
				continue
			}
			done, err := m.b.Client.RenameNX(ctx, k, to).Result()
			if err != nil {
				return moved, redisx.Wrap(err)
			}
			if !done { // the new name exists already and wins: the old one would read as a log
				if err := m.b.Client.Del(ctx, k).Err(); err != nil {
					return moved, redisx.Wrap(err)
				}
			}
		}
	}
	if moved > 0 {
		log.Info("migrate: user log meta and cursors renamed", "keys", moved, "dryRun", dry)
	}
	return moved, nil
}
