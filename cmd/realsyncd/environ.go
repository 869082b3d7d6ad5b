package main

import (
	"flag"
	"slices"
	"strings"
)

// environNotes names the REALSYNC_ variables of environ ("NAME=value")
// that no setting reads as given: unknown, a name no setting has (a
// misspelt one, REALSYNC_SHRADS, would be ignored silently), and empty,
// one set to "" whose default is not "" (the default applies, as when
// unset: a template that left REALSYNC_ENV empty runs in development; one
// whose default is unset, an admin token left empty, changes nothing and
// is not named). Both sorted.
func environNotes(environ []string) (unknown, empty []string) {
	known := map[string]bool{}
	defaults := map[string]string{} // variable → its flag's default
	// every setting's variable is read through getenv as its flag is
	// defined, whatever the values, and each flag is named after it
	parseConfig(func(k string) string { known[k] = true; return "" }, nil, func(fs *flag.FlagSet) { //nolint:errcheck // only the names read
		fs.VisitAll(func(f *flag.Flag) {
			defaults["REALSYNC_"+strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))] = f.DefValue
		})
	})
	for _, kv := range environ {
		name, value, _ := strings.Cut(kv, "=")
		switch {
		case !strings.HasPrefix(name, "REALSYNC_"):
		case !known[name]:
			unknown = append(unknown, name)
		case value == "" && defaults[name] != "":
			empty = append(empty, name)
		}
	}
	slices.Sort(unknown)
	slices.Sort(empty)
	return unknown, empty
}
