package store

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/realsync/realsync/store/internal/layout"
	"github.com/realsync/realsync/store/internal/redisx"
)

// Stripes says over how many shards ("stripes") the rooms of one (mode,
// region) are spread (layout.Stripes; REALSYNC_MODE_STRIPES).
type Stripes = layout.Stripes

// ParseStripes reads REALSYNC_MODE_STRIPES (layout.ParseStripes).
func ParseStripes(v string) (Stripes, error) { return layout.ParseStripes(v) }

// stripeMetaField starts the meta hash's fields that record a stripe
// configuration ever used by an instance: "stripes:<Stripes.String()>".
// The union of the recorded configurations is what every read covers.
const stripeMetaField = "stripes:"

// RefreshStripes reads every stripe configuration recorded in the meta
// hash, and records the store's own there when it is missing, so reads
// cover rooms placed by any instance's configuration, past or present.
// Init calls it, and the janitor on every tick: an instance learns another
// instance's new configuration within one janitor interval. It writes only
// a missing record: a full Redis (maxmemory, noeviction) refuses every
// HSETNX, even of a field that exists.
func (s *Store) RefreshStripes(ctx context.Context) error {
	cur := s.stripes.Current()
	key := s.keys.Meta()
	fields, err := s.client.HKeys(ctx, key).Result()
	if err != nil {
		return redisx.Wrap(err)
	}
	if !slices.Contains(fields, stripeMetaField+cur.String()) {
		if err := s.client.HSetNX(ctx, key, stripeMetaField+cur.String(), "1").Err(); err != nil {
			return redisx.Wrap(err)
		}
	}
	var others []Stripes
	for _, f := range fields {
		v, ok := strings.CutPrefix(f, stripeMetaField)
		if !ok || v == cur.String() {
			continue
		}
		c, err := ParseStripes(v)
		if err != nil {
			return fmt.Errorf("store: meta field %q: %w", f, err)
		}
		others = append(others, c)
	}
	s.stripes.SetUsed(others)
	return nil
}

// StripeConfigs returns the stripe configurations recorded in the meta
// hash as this store last read them (the current one first).
func (s *Store) StripeConfigs() []string {
	var out []string
	for _, c := range s.stripes.Used() {
		out = append(out, c.String())
	}
	return out
}
