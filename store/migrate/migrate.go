// Package migrate upgrades the data of a deployment to a key schema this
// release serves (layout.PlainSchema; SchemaVersion differs from it only
// by its shards' tags, which new deployments get, and a deployment of
// PlainSchema keeps): the steps from one schema to the next,
// the check that no instance is running, the dry run, and the marker
// "<from>to<to>" the meta hash holds while a step runs. It is built on the
// root store's redisx.Base (client, prefix, shard count) and builds the few
// keys it reads with layout.Keys; the root store's Migrate calls Run, and
// Init explains a schema it refuses with Hint. It never imports the root
// store.
//
// A key-schema change ships with a migration step from the schema before
// it. Run runs the steps from the schema recorded in Redis up to
// PlainSchema, one after the other, each over every shard, and records
// each step's new schema in the meta hash once it is done everywhere.
// While a step runs, the meta hash's schema reads "<from>to<to>", so no
// instance of either release starts on half-converted data.
//
// Every step must be idempotent and resumable: it may find a record
// untouched, already converted (an interrupted run), or both in one shard,
// and leaves all of it converted. Running Run again after any failure
// finishes the job.
package migrate

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

	"github.com/realsync/realsync/store/internal/layout"
	"github.com/realsync/realsync/store/internal/redisx"
)

// migrator is what the steps work with: the deployment's client, prefix
// and shard count, and its keys.
type migrator struct {
	b    *redisx.Base
	keys layout.Keys
}

// step upgrades the data from schema from to from+1.
type step struct {
	from int
	what string
	// run converts (or, when dry, only counts) what needs converting and
	// returns how many records it changed.
	run func(ctx context.Context, m *migrator, dry bool, log *slog.Logger) (int, error)
}

// steps are the steps, in order; steps[i].from == steps[0].from+i.
var steps = []step{
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

// Report is what Run found and did.
type Report struct {
	// From is the schema found (0: no RealSync data under the prefix, so
	// nothing to do); To the schema left (From in a dry run).
	From, To int
	Steps    []StepReport
}

// Options tune Run.
type Options struct {
	// DryRun counts what would change and writes nothing; it may run while
	// instances serve.
	DryRun bool
	// LeaseWatch is how long Run watches the shards' janitor leases
	// for a running instance before it writes; default 2.5s (instances
	// take a lease at least every second).
	LeaseWatch time.Duration
	// Log receives a line per step and per shard converted; default
	// slog.Default().
	Log *slog.Logger
}

// ErrInstancesRunning says Run found an instance serving the data: a
// migration is offline, every instance must be stopped first.
var ErrInstancesRunning = errors.New("instances are running")

// Run upgrades the data under b's prefix to a schema this release
// serves: data of a schema before layout.PlainSchema to PlainSchema (see
// steps; its tags stay plain), and leaves PlainSchema's and
// SchemaVersion's (spread tags: only new deployments have them) as they
// are. b is the root store's Base (store.Store.Base), of a store from
// New, never Init (Init refuses old data). Errors: layout.ErrLayout (which
// is store.ErrLayout) when the shard count differs from the data's or the
// data is newer than this binary; ErrInstancesRunning (nothing written);
// rooms.ErrUnavailable when Redis cannot be reached. After a failure the
// Report says how far it got; running it again resumes.
func Run(ctx context.Context, b *redisx.Base, opt Options) (Report, error) {
	if opt.Log == nil {
		opt.Log = slog.Default()
	}
	if opt.LeaseWatch <= 0 {
		opt.LeaseWatch = 2500 * time.Millisecond
	}
	// the steps convert data of schemas before layout.PlainSchema, whose
	// tags are plain
	m := &migrator{b: b, keys: layout.New(layout.NewTags(b.Prefix, b.Shards), false, false)}
	meta, err := b.Client.HMGet(ctx, m.keys.Meta(), "shards", "schema").Result()
	if err != nil {
		return Report{}, redisx.Wrap(err)
	}
	if meta[0] == nil && meta[1] == nil {
		return Report{}, nil
	}
	if fmt.Sprint(meta[0]) != strconv.Itoa(b.Shards) {
		return Report{}, fmt.Errorf("%w: redis holds data for %v shards; this command is configured for %d (set REALSYNC_SHARDS as the instances have it)",
			layout.ErrLayout, meta[0], b.Shards)
	}
	from, ok := parseSchema(fmt.Sprint(meta[1]))
	if !ok || from > layout.SchemaVersion {
		return Report{}, fmt.Errorf("%w: redis holds data of key schema %v, newer than this binary's %d", layout.ErrLayout, meta[1], layout.SchemaVersion)
	}
	r := Report{From: from, To: from}
	if _, served := layout.SchemeOf(from); served || opt.DryRun {
		return m.runSteps(ctx, r, opt)
	}
	if err := m.checkNoInstances(ctx, opt.LeaseWatch); err != nil {
		return r, err
	}
	return m.runSteps(ctx, r, opt)
}

func (m *migrator) runSteps(ctx context.Context, r Report, opt Options) (Report, error) {
	for _, st := range steps {
		if st.from < r.To {
			continue
		}
		to := st.from + 1
		opt.Log.Info("migrate: step", "from", st.from, "to", to, "what", st.what, "dryRun", opt.DryRun)
		if !opt.DryRun {
			if err := m.b.Client.HSet(ctx, m.keys.Meta(), "schema", fmt.Sprintf("%dto%d", st.from, to)).Err(); err != nil {
				return r, redisx.Wrap(err)
			}
		}
		n, err := st.run(ctx, m, opt.DryRun, opt.Log)
		r.Steps = append(r.Steps, StepReport{From: st.from, To: to, What: st.what, Changed: n})
		if err != nil {
			return r, fmt.Errorf("migrate %d→%d (run it again to resume): %w", st.from, to, err)
		}
		if opt.DryRun {
			continue
		}
		if err := m.b.Client.HSet(ctx, m.keys.Meta(), "schema", to).Err(); err != nil {
			return r, redisx.Wrap(err)
		}
		r.To = to
	}
	if _, served := layout.SchemeOf(r.To); !opt.DryRun && !served {
		return r, fmt.Errorf("store: no migration step from schema %d to %d", r.To, layout.PlainSchema)
	}
	return r, nil
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

// Hint says what to do about data of schema v (as the meta hash holds it)
// that this binary does not serve, for the root store's refusal to start
// on it: "; <advice>", or "" for a schema it cannot read.
func Hint(v string) string {
	n, ok := parseSchema(v)
	switch {
	case ok && strings.Contains(v, "to"):
		return "; a migration is under way or was interrupted: run `realsyncd migrate` (again) to finish it"
	case ok && n < layout.PlainSchema:
		return "; stop every instance and run `realsyncd migrate` with this release to upgrade the data (README: Upgrades)"
	case ok && n > layout.SchemaVersion:
		return "; the data was written by a newer release: run that release"
	}
	return ""
}

// checkNoInstances watches every shard's janitor lease for d: a running
// instance renews one at least every second.
func (m *migrator) checkNoInstances(ctx context.Context, d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		cmds := make([]*redis.StringCmd, m.b.Shards)
		_, err := m.b.Client.Pipelined(ctx, func(p redis.Pipeliner) error {
			for shard := range m.b.Shards {
				cmds[shard] = p.Get(ctx, m.keys.Janitor(shard))
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
func (m *migrator) scanKeys(ctx context.Context, pattern string) ([]string, error) {
	out, err := rediskeys.Scan(ctx, m.b.Client, pattern)
	slices.Sort(out)
	return out, redisx.Wrap(err)
}
