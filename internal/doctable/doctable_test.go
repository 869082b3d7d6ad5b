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

func TestRow(t *testing.T) {
	rows := [][]string{{"stream token", "60 s"}, {"stream token lifetime", "60 s"}, {"bans per room", "1 000"}}
	for _, c := range []struct {
		name, prefix string
		want         string // the row's first cell; "" for an error
	}{
		{"Exact", "bans per room", "bans per room"},
		{"Prefix", "bans", "bans per room"},
		{"ExactWins", "stream token", "stream token"},
		{"Ambiguous", "stream", ""},
		{"Longer", "stream token l", "stream token lifetime"},
		{"None", "invite codes", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, err := doctable.Row(rows, c.prefix)
			if c.want == "" {
				if err == nil {
					t.Fatalf("got %q, want an error", r)
				}
				return
			}
			if err != nil || r[0] != c.want {
				t.Fatalf("got %q, %v; want the row %q", r, err, c.want)
			}
		})
	}
}

func TestStates(t *testing.T) {
	for _, c := range []struct {
		text, figure string
		want         bool
	}{
		{"5", "5", true},
		{"15", "5", false},
		{"5 000", "5", false},
		{"at most 5 000 sent", "5 000", true},
		{"1..1000", "1..100", false},
		{"ids 1..100 a page", "1..100", true},
		{"1 000 events", "1 000", true},
		{"1 000 000 events", "1 000", false},
		{"21 000 events", "1 000", false},
		{"within 3 s, within 3 s", "within 3 s", true},
		{"15 or 5", "5", true}, // a later whole occurrence
		{"64 KiB", "6", false},
		{"0.5 s", "5 s", false},        // a decimal's fraction
		{"2.5 s", "2", false},          // a decimal's whole part
		{"within 5. Then", "5", true},  // a full stop
		{"1..100 a page", "100", true}, // a range's bound
	} {
		if got := doctable.States(c.text, c.figure); got != c.want {
			t.Errorf("States(%q, %q) = %v, want %v", c.text, c.figure, got, c.want)
		}
	}
}
