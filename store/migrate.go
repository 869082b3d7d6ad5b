package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/internal/rediskeys"

	"github.com/realsync/realsync/store/internal/redisx"
)

// A key-schema change ships with a migration step from the schema before
// it. Migrate runs the steps from the schema recorded in Redis up to
// SchemaVersion, one after the other, each over every shard, and records
// each step's new schema in the meta hash once it is done everywhere.
// While a step runs, the meta hash's schema reads "<from>to<to>", so no
// instance of either release starts on half-converted data.
//
// Every step must be idempotent and resumable: it may find a record
// untouched, already converted (an interrupted run), or both in one shard,
// and leaves all of it converted. Running Migrate again after any failure
// finishes the job.

// migrationStep upgrades the data from schema from to from+1.
type migrationStep struct {
	from int
	what string
	// run converts (or, when dry, only counts) what needs converting and
	// returns how many records it changed.
	run func(ctx context.Context, s *Store, dry bool, log *slog.Logger) (int, error)
}

// migrations are the steps, in order; steps[i].from == steps[0].from+i.
var migrations = []migrationStep{
	{from: 1, what: "player records keep joinedAt as ms after the room's creation; the user index becomes a hash",
		run: migrateV1},
	{from: 2, what: "a user's log meta and delivery cursors are keyed {p:s}:ulogm:<userId> and {p:s}:ulogc:<userId>",
		run: migrateV2},
}

// StepReport is what one step did (or would do, in a dry run).
type StepReport struct {
	From, To int
	What     string
	// Changed counts the records converted: player records and user index
	// entries for 1→2.
	Changed int
}

// Migration is what Migrate found and did.
type Migration struct {
	// From is the schema found (0: no RealSync data under the prefix, so
	// nothing to do); To the schema left (From in a dry run).
	From, To int
	Steps    []StepReport
}

// MigrateOptions tune Migrate.
type MigrateOptions struct {
	// DryRun counts what would change and writes nothing; it may run while
	// instances serve.
	DryRun bool
	// LeaseWatch is how long Migrate watches the shards' janitor leases
	// for a running instance before it writes; default 2.5s (instances
	// take a lease at least every second).
	LeaseWatch time.Duration
	Log        *slog.Logger
}

// ErrInstancesRunning says Migrate found an instance serving the data: a
// migration is offline, every instance must be stopped first.
var ErrInstancesRunning = errors.New("instances are running")

// Migrate upgrades the data under the store's prefix to SchemaVersion (see
// migrations). Call it on a store from New, never Init (Init refuses old
// data). Errors: ErrLayout when the shard count differs from the data's or
// the data is newer than this binary; ErrInstancesRunning (nothing
// written); rooms.ErrUnavailable when Redis cannot be reached.
func (s *Store) Migrate(ctx context.Context, opt MigrateOptions) (Migration, error) {
	if opt.Log == nil {
		opt.Log = slog.Default()
	}
	if opt.LeaseWatch <= 0 {
		opt.LeaseWatch = 2500 * time.Millisecond
	}
	meta, err := s.client.HMGet(ctx, s.keys.Meta(), "shards", "schema").Result()
	if err != nil {
		return Migration{}, redisx.Wrap(err)
	}
	if meta[0] == nil && meta[1] == nil {
		return Migration{}, nil
	}
	if fmt.Sprint(meta[0]) != strconv.Itoa(s.shards) {
		return Migration{}, fmt.Errorf("%w: redis holds data for %v shards; this command is configured for %d (set REALSYNC_SHARDS as the instances have it)",
			ErrLayout, meta[0], s.shards)
	}
	from, ok := parseSchema(fmt.Sprint(meta[1]))
	if !ok || from > SchemaVersion {
		return Migration{}, fmt.Errorf("%w: redis holds data of key schema %v, newer than this binary's %d", ErrLayout, meta[1], SchemaVersion)
	}
	m := Migration{From: from, To: from}
	if from == SchemaVersion || opt.DryRun {
		return s.migrateSteps(ctx, m, opt)
	}
	if err := s.checkNoInstances(ctx, opt.LeaseWatch); err != nil {
		return m, err
	}
	return s.migrateSteps(ctx, m, opt)
}

func (s *Store) migrateSteps(ctx context.Context, m Migration, opt MigrateOptions) (Migration, error) {
	for _, st := range migrations {
		if st.from < m.To {
			continue
		}
		to := st.from + 1
		opt.Log.Info("migrate: step", "from", st.from, "to", to, "what", st.what, "dryRun", opt.DryRun)
		if !opt.DryRun {
			if err := s.client.HSet(ctx, s.keys.Meta(), "schema", fmt.Sprintf("%dto%d", st.from, to)).Err(); err != nil {
				return m, redisx.Wrap(err)
			}
		}
		n, err := st.run(ctx, s, opt.DryRun, opt.Log)
		m.Steps = append(m.Steps, StepReport{From: st.from, To: to, What: st.what, Changed: n})
		if err != nil {
			return m, fmt.Errorf("migrate %d→%d (run it again to resume): %w", st.from, to, err)
		}
		if opt.DryRun {
			continue
		}
		if err := s.client.HSet(ctx, s.keys.Meta(), "schema", to).Err(); err != nil {
			return m, redisx.Wrap(err)
		}
		m.To = to
	}
	if !opt.DryRun && m.To != SchemaVersion {
		return m, fmt.Errorf("store: no migration step from schema %d to %d", m.To, SchemaVersion)
	}
	return m, nil
}

var schemaRe = regexp.MustCompile(`^(\d+)(?:to(\d+))?$`)

// parseSchema reads the meta hash's schema: "<n>", or "<n>to<n+1>" while
// (or after an interrupted) step from n runs, which resumes from n.
func parseSchema(v string) (int, bool) {
	m := schemaRe.FindStringSubmatch(v)
	if m == nil {
		return 0, false
	}
	n, _ := strconv.Atoi(m[1])
	return n, true
}

// schemaHint says what to do about data of schema v (as the meta hash
// holds it) that this binary does not serve.
func schemaHint(v string) string {
	n, ok := parseSchema(v)
	switch {
	case ok && strings.Contains(v, "to"):
		return "; a migration is under way or was interrupted: run `realsyncd migrate` (again) to finish it"
	case ok && n < SchemaVersion:
		return "; stop every instance and run `realsyncd migrate` with this release to upgrade the data (README: Upgrades)"
	case ok && n > SchemaVersion:
		return "; the data was written by a newer release: run that release"
	}
	return ""
}

// checkNoInstances watches every shard's janitor lease for d: a running
// instance renews one at least every second.
func (s *Store) checkNoInstances(ctx context.Context, d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		cmds := make([]*redis.StringCmd, s.shards)
		_, err := s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
			for shard := range s.shards {
				cmds[shard] = p.Get(ctx, s.keys.Janitor(shard))
			}
			return nil
		})
		if err != nil && !errors.Is(err, redis.Nil) {
			return redisx.Wrap(err)
		}
		for shard, c := range cmds {
			if c.Err() == nil {
				return fmt.Errorf("%w: instance %q holds the janitor lease of shard %d; stop every instance before migrating",
					ErrInstancesRunning, c.Val(), shard)
			}
		}
		if time.Now().After(deadline) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// scanKeys returns every key matching pattern, sorted, on every master of
// a Cluster.
func (s *Store) scanKeys(ctx context.Context, pattern string) ([]string, error) {
	out, err := rediskeys.Scan(ctx, s.client, pattern)
	slices.Sort(out)
	return out, redisx.Wrap(err)
}
