// Package scripttest holds the descriptors (redisx.Call) of a store
// package to the Lua they run, before any Redis, and gives its tests
// against Redis a redisx.Base (Base).
package scripttest

import (
	"io/fs"
	"maps"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/realsync/realsync/store/internal/redisx"
)

// every use of KEYS or ARGV in a script, and the literal indexes among
// them ("ARGV[9]"); any other use ("ARGV[2 * i]", "#ARGV", "ipairs(ARGV)")
// computes its index.
var (
	anyUse       = regexp.MustCompile(`\b(KEYS|ARGV)\b(\[\d+\])?`)
	literalIndex = regexp.MustCompile(`^(KEYS|ARGV)\[(\d+)\]$`)
)

// Prelude is Lua run in front of some scripts (a library's mutations),
// which binds KEYS and ARGV of its own.
type Prelude struct {
	// Src is the prelude's code.
	Src string
	// Runs says whether sc runs behind the prelude.
	Runs func(sc *redisx.Script) bool
	// Keys is the number of KEYS every script behind it gets at least;
	// the prelude may name more, for the scripts that need them.
	Keys int
}

// CheckCalls holds calls, one descriptor of each script, to the Lua files
// of dir in files (every "<name>.lua" but "prelude.lua"): each script has
// exactly one descriptor, and the KEYS and ARGV a descriptor lays out
// reach every index the script (behind the prelude, when it runs behind
// one) reads by number — exactly, for a script that reads no index it
// computes. A descriptor that drops or adds an argument fails here.
func CheckCalls(t *testing.T, files fs.FS, dir string, calls []redisx.Call, prelude Prelude) {
	t.Helper()
	entries, err := fs.Glob(files, path.Join(dir, "*.lua"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for _, f := range entries {
		if name := strings.TrimSuffix(path.Base(f), ".lua"); name != "prelude" {
			want[name] = true
		}
	}
	got := map[string]bool{}
	for _, c := range calls {
		sc := c.Script()
		if got[sc.Name] {
			t.Errorf("%s: two descriptors", sc.Name)
		}
		got[sc.Name] = true
		t.Run(sc.Name, func(t *testing.T) {
			src, err := fs.ReadFile(files, path.Join(dir, sc.Name+".lua"))
			if err != nil {
				t.Fatal(err)
			}
			code := stripComments(string(src))
			behind := prelude.Runs != nil && prelude.Runs(sc)
			if behind {
				code += stripComments(prelude.Src)
			}
			keys, args := c.KeysArgs()
			for _, kind := range []struct {
				name string
				n    int
			}{{"KEYS", len(keys)}, {"ARGV", len(args)}} {
				most, computed := 0, false
				for _, u := range anyUse.FindAllString(code, -1) {
					if !strings.HasPrefix(u, kind.name) {
						continue
					}
					m := literalIndex.FindStringSubmatch(u)
					if m == nil {
						computed = true
					} else if i, _ := strconv.Atoi(m[2]); i > most {
						most = i
					}
				}
				if kind.name == "KEYS" && behind {
					// the prelude names more keys than every script gets
					computed, most = true, min(most, prelude.Keys)
				}
				switch {
				case kind.n < most:
					t.Errorf("%s: %d laid out, the script reads %s[%d]", kind.name, kind.n, kind.name, most)
				case !computed && kind.n != most:
					t.Errorf("%s: %d laid out, the script reads %d", kind.name, kind.n, most)
				}
			}
		})
	}
	if !maps.Equal(want, got) {
		t.Errorf("scripts without a descriptor or descriptors without a script: %s has %v, descriptors %v",
			dir, slices.Sorted(maps.Keys(want)), slices.Sorted(maps.Keys(got)))
	}
}

// stripComments drops Lua's line comments ("--" to the end of the line).
func stripComments(src string) string {
	var b strings.Builder
	for line := range strings.Lines(src) {
		if i := strings.Index(line, "--"); i >= 0 {
			line = line[:i] + "\n"
		}
		b.WriteString(line)
	}
	return b.String()
}
