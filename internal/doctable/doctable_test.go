package doctable_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/realsync/realsync/internal/doctable"
)

const doc = `# Title

## First

| a | b |
|---|---|
| x | y |

## Second

Text.

| limit | default |
|---|---|
| one | ` + "`a \\| b`" + ` |
| two | 2 |

Text after the table.

| other | table |
|---|---|
| not | read |

### Sub

| sub | table |
|---|---|
| s | t |

## Third
`

func TestTable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "doc.md")
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, heading string
		want          [][]string
		err           string // a part of the error; "" for none
	}{
		{"FirstTable", "## First", [][]string{{"x", "y"}}, ""},
		{"EscapedPipeKept", "## Second", [][]string{{"one", "`a | b`"}, {"two", "2"}}, ""},
		{"SubSection", "### Sub", [][]string{{"s", "t"}}, ""},
		{"NoSection", "## Fourth", nil, `no section "## Fourth"`},
		{"HeadingWholeLine", "## Sec", nil, `no section "## Sec"`},
		{"NoTableBeforeNextHeading", "## Third", nil, `no table in section "## Third"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := doctable.Table(path, c.heading)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want one with %q", err, c.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, c.want) {
				t.Fatalf("got %q, %v; want %q", got, err, c.want)
			}
		})
	}
}

func TestFigures(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{doctable.Thousands(500), "500"},
		{doctable.Thousands(1000), "1 000"},
		{doctable.Thousands(100000), "100 000"},
		{doctable.Thousands(1234567), "1 234 567"},
		{doctable.Seconds(30e9), "30 s"},
		{doctable.Seconds(5e8), "0.5 s"},
		{doctable.Days(7 * 24 * 3600e9), "7 days"},
		{doctable.KiB(64 << 10), "64 KiB"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}
