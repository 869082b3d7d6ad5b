// Package storetest opens stores for tests: the one place a test's store
// is opened, its failure reported and its closing arranged.
package storetest

import (
	"context"
	"testing"

	"github.com/realsync/realsync/store"
)

// Open opens a store with cfg, failing tb when it cannot, and closes it
// when tb ends.
func Open(tb testing.TB, cfg store.Config) *store.Store {
	tb.Helper()
	st, err := store.Open(context.Background(), cfg)
	if err != nil {
		tb.Fatalf("open store (prefix %q): %v", cfg.Prefix, err)
	}
	tb.Cleanup(func() { st.Close() })
	return st
}
