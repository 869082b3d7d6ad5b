package store

import (
	"context"

	"github.com/realsync/realsync/store/migrate"
)

// Migrate upgrades the data under the store's prefix to PlainSchema when
// it is older (SchemaVersion's data is only ever a new deployment's):
// migrate.Run on the store's Base (store/migrate holds the steps, the
// running-instances check and the dry run). Call it on a store from New,
// never Init (Init refuses old data). Errors: ErrLayout when the shard
// count differs from the data's or the data is newer than this binary;
// migrate.ErrInstancesRunning (nothing written); rooms.ErrUnavailable when
// Redis cannot be reached.
func (s *Store) Migrate(ctx context.Context, opt migrate.Options) (migrate.Report, error) {
	return migrate.Run(ctx, s.base, opt)
}
