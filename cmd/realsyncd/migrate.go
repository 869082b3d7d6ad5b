package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/realsync/realsync/store"
	"github.com/realsync/realsync/store/migrate"
)

// migrateSecret stands for REALSYNC_JWT_SECRET in migrate's settings,
// whatever that variable holds: any value passes production's check.
const migrateSecret = "migrate-verifies-no-token-0123456789abcdef"

// migrateMain runs `realsyncd migrate [-dry-run]`: it upgrades the data in
// Redis to a key schema this release serves (store.Migrate, package
// store/migrate), with the same variables and flags as the server. Every
// instance must be stopped first; it refuses while one holds a janitor
// lease. -dry-run only counts what would change, and may run beside
// instances. Returns the exit code: 0 done (or nothing to do), 1 failed
// (run it again to resume), 2 bad usage.
func migrateMain(getenv func(string) string, args []string, stdout, stderr io.Writer) int {
	var dry bool
	// it verifies no token: production's required JWT secret is not asked
	// of it (a migration job given the Redis settings alone was refused)
	serverOnly := func(k string) string {
		if k == "REALSYNC_JWT_SECRET" {
			return migrateSecret
		}
		return getenv(k)
	}
	cfg, err := parseConfig(serverOnly, args, func(fs *flag.FlagSet) {
		fs.BoolVar(&dry, "dry-run", false, "count what would change, write nothing")
	})
	if err != nil {
		fmt.Fprintln(stderr, "realsyncd migrate:", err)
		return 2
	}
	if cfg.RedisURL == "" && len(cfg.ClusterAddrs) == 0 {
		fmt.Fprintln(stderr, "realsyncd migrate: set REALSYNC_REDIS_URL or REALSYNC_REDIS_CLUSTER_ADDRS (the embedded store keeps nothing to migrate)")
		return 2
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: logLevels[cfg.LogLevel]}))
	st, err := store.New(storeConfig(cfg))
	if err != nil {
		fmt.Fprintln(stderr, "realsyncd migrate:", err)
		return 2
	}
	defer st.Close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	m, err := st.Migrate(ctx, migrate.Options{DryRun: dry, Log: log})
	if err == nil || len(m.Steps) > 0 { // a failure before any step read nothing: no "nothing to migrate"
		report(stdout, cfg.KeyPrefix, dry, m)
	}
	if err != nil {
		fmt.Fprintln(stderr, "realsyncd migrate:", err)
		return 1
	}
	return 0
}

func report(w io.Writer, prefix string, dry bool, m migrate.Report) {
	switch {
	case m.From == 0:
		fmt.Fprintf(w, "no RealSync data under prefix %q: nothing to migrate\n", prefix)
		return
	case len(m.Steps) == 0:
		fmt.Fprintf(w, "schema %d is current: nothing to migrate\n", m.From)
		return
	}
	verb := "converted"
	if dry {
		verb = "to convert (dry run, nothing written)"
	}
	for _, s := range m.Steps {
		fmt.Fprintf(w, "schema %d → %d: %d records %s (%s)\n", s.From, s.To, s.Changed, verb, s.What)
	}
	if !dry {
		fmt.Fprintf(w, "schema %d → %d done\n", m.From, m.To)
	}
}
