package main

import (
	"flag"
	"os"
	"strings"
	"testing"
)

// computedDefaults are the settings whose default is decided at start, not
// a value of their flag: their documented default starts with this text.
var computedDefaults = map[string]string{
	"REALSYNC_JWT_SECRET":     "random per start",
	"REALSYNC_GUEST_AUTH":     "`true`; `false` in production",
	"REALSYNC_PARTY_CONSENT":  "`none`; `party` in production",
	"REALSYNC_ADVERTISE_ADDR": "from the listener",
	"REALSYNC_RATE_LIMITS":    "the defaults in",
	// 10s, but a third of REALSYNC_SHUTDOWN_TIMEOUT when that is less
	"REALSYNC_SSE_SHUTDOWN_SPREAD": "`10s`, or a third of `REALSYNC_SHUTDOWN_TIMEOUT`",
}

// The settings tables of README.md ("Configuration") and docs/OPERATIONS.md
// ("Settings") name every variable realsyncd reads, each with its real
// default (the flag's default: "unset" for an empty one), and nothing the
// code no longer reads; every variable has its flag of the same name in
// kebab case, as both say.
func TestSettingsTablesMatchTheCode(t *testing.T) {
	read := map[string]bool{}
	getenv := func(k string) string { read[k] = true; return "" }
	defaults := map[string]string{} // variable → its flag's default
	if _, err := parseConfig(getenv, nil, func(fs *flag.FlagSet) {
		fs.VisitAll(func(f *flag.Flag) {
			defaults["REALSYNC_"+strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))] = f.DefValue
		})
	}); err != nil {
		t.Fatalf("the defaults do not parse: %v", err)
	}
	for k := range read {
		if _, ok := defaults[k]; !ok {
			t.Errorf("%s is read but has no flag -%s", k, strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(k, "REALSYNC_")), "_", "-"))
		}
	}
	for _, doc := range []struct{ path, section string }{
		{"../../README.md", "\n## Configuration\n"},
		{"../../docs/OPERATIONS.md", "\n## Settings\n"},
	} {
		rows := settingsTable(t, doc.path, doc.section)
		for k := range read {
			if _, ok := rows[k]; !ok {
				t.Errorf("%s: %s is read by realsyncd but not in the table", doc.path, k)
			}
		}
		for k, def := range rows {
			code, ok := defaults[k]
			switch {
			case !ok || !read[k]:
				t.Errorf("%s: %s is in the table but realsyncd does not read it", doc.path, k)
			case computedDefaults[k] != "":
				if !strings.HasPrefix(def, computedDefaults[k]) {
					t.Errorf("%s: %s's default is %q; want it to start %q", doc.path, k, def, computedDefaults[k])
				}
			case code == "":
				if !strings.HasPrefix(def, "unset") {
					t.Errorf("%s: %s's default is %q; it is unset", doc.path, k, def)
				}
			case !strings.HasPrefix(def, "`"+code+"`"):
				t.Errorf("%s: %s's default is %q; the code's is `%s`", doc.path, k, def, code)
			}
		}
	}
}

// settingsTable reads the table of the markdown file's section: each row's
// variables (a row may name several, "`A`, `B`") with its default cell.
func settingsTable(t *testing.T, path, section string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	i := strings.Index(text, section)
	if i < 0 {
		t.Fatalf("%s: no section %q", path, strings.TrimSpace(section))
	}
	text = text[i+len(section):]
	if j := strings.Index(text, "\n## "); j >= 0 {
		text = text[:j]
	}
	rows := map[string]string{}
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, "| `REALSYNC_") {
			continue
		}
		cells := strings.Split(strings.ReplaceAll(line, `\|`, "\x00"), " | ")
		if len(cells) < 3 {
			t.Fatalf("%s: a row of fewer than 3 cells: %s", path, line)
		}
		for _, name := range strings.Split(strings.TrimPrefix(cells[0], "| "), ", ") {
			name = strings.Trim(name, "`")
			if _, dup := rows[name]; dup {
				t.Errorf("%s: %s has two rows", path, name)
			}
			rows[name] = strings.TrimSpace(cells[1])
		}
	}
	if len(rows) == 0 {
		t.Fatalf("%s: no settings in section %q", path, strings.TrimSpace(section))
	}
	return rows
}
