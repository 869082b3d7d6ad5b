package store

import (
	"context"
	"log/slog"
	"strings"

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
// name, and a new name that exists already (written by this release) wins.
func migrateV2(ctx context.Context, s *Store, dry bool, log *slog.Logger) (int, error) {
	keys, err := s.scanKeys(ctx, "{"+globEscape(s.keys.prefix)+":*}:ulog:*")
	if err != nil {
		return 0, err
	}
	moved := 0
	for _, k := range keys {
		var suffix, infix string
		switch {
		case strings.HasSuffix(k, ":meta"):
			suffix, infix = ":meta", "}:ulogm:"
		case strings.HasSuffix(k, ":cur"):
			suffix, infix = ":cur", "}:ulogc:"
		default:
			continue
		}
		typ, err := s.client.Type(ctx, k).Result()
		if err != nil {
			return moved, redisx.Wrap(err)
		}
		if typ != "hash" { // the log of a user whose id ends so
			continue
		}
		tag, uid, ok := strings.Cut(strings.TrimSuffix(k, suffix), "}:ulog:")
		if !ok {
			continue
		}
		if !dry {
			if err := s.client.RenameNX(ctx, k, tag+infix+uid).Err(); err != nil {
				return moved, redisx.Wrap(err)
			}
		}
		moved++
	}
	if moved > 0 {
		log.Info("migrate: user log meta and cursors renamed", "keys", moved, "dryRun", dry)
	}
	return moved, nil
}
