package main

import (
	"slices"
	"strings"
)

// environNotes names the REALSYNC_ variables of environ ("NAME=value")
// that no setting reads as given: unknown, a name no setting has (a
// misspelt one, REALSYNC_SHRADS, would be ignored silently), and empty,
// one set to "" (its default applies, as when unset: a template that left
// REALSYNC_ENV empty runs in development). Both sorted.
func environNotes(environ []string) (unknown, empty []string) {
	known := map[string]bool{}
	// every setting's variable is read through getenv as its flag is
	// defined, whatever the values
	parseConfig(func(k string) string { known[k] = true; return "" }, nil, nil) //nolint:errcheck // only the names read
	for _, kv := range environ {
		name, value, _ := strings.Cut(kv, "=")
		switch {
		case !strings.HasPrefix(name, "REALSYNC_"):
		case !known[name]:
			unknown = append(unknown, name)
		case value == "":
			empty = append(empty, name)
		}
	}
	slices.Sort(unknown)
	slices.Sort(empty)
	return unknown, empty
}
