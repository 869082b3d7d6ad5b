// Package doctable reads the tables of the project's markdown documents,
// for the tests that hold a document's figures to the code's.
package doctable

import (
	"fmt"
	"os"
	"strings"
)

// Table returns the rows of the first table in the section of the
// markdown file at path headed by heading (a whole line, such as
// "## Every limit"), which ends at the next heading of its level or
// higher. Each row is its cells, trimmed; an escaped `\|` stays in its
// cell as "|". The header row and the separator row are left out. It is an
// error when the file, the section or a table in it is missing, or when a
// row has fewer cells than the header.
func Table(path, heading string) ([][]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	text, ok := section(string(b), heading)
	if !ok {
		return nil, fmt.Errorf("%s: no section %q", path, heading)
	}
	var rows [][]string
	width := 0
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, "|") {
			if width > 0 {
				break // the first table ended
			}
			continue
		}
		cells := split(line)
		switch {
		case width == 0:
			width = len(cells) // the header
		case strings.Trim(line, "|- :") == "":
			// the separator
		case len(cells) < width:
			return nil, fmt.Errorf("%s, %s: a row of %d cells, the header has %d: %s", path, heading, len(cells), width, line)
		default:
			rows = append(rows, cells)
		}
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("%s: no table in section %q", path, heading)
	}
	return rows, nil
}

// section is the text below the line heading up to the next heading of
// its level or higher.
func section(text, heading string) (string, bool) {
	_, after, ok := strings.Cut("\n"+text, "\n"+heading+"\n")
	if !ok {
		return "", false
	}
	level := strings.Index(heading, " ") // the number of #s
	for i := 0; i < len(after); {
		j := strings.IndexByte(after[i:], '\n')
		if j < 0 {
			break
		}
		line := after[i : i+j]
		if n := len(line) - len(strings.TrimLeft(line, "#")); n > 0 && n <= level && strings.HasPrefix(line[n:], " ") {
			return after[:i], true
		}
		i += j + 1
	}
	return after, true
}

// split cuts a table row into its cells.
func split(line string) []string {
	line = strings.TrimSpace(line)
	line = strings.TrimSuffix(strings.TrimPrefix(line, "|"), "|")
	cells := strings.Split(strings.ReplaceAll(line, `\|`, "\x00"), "|")
	for i, c := range cells {
		cells[i] = strings.ReplaceAll(strings.TrimSpace(c), "\x00", "|")
	}
	return cells
}

// Row returns the row of rows whose first cell is prefix, else the one
// whose first cell starts with it (a row's first cell may be a long
// sentence: the prefix names it). It is an error when no row or several
// do.
func Row(rows [][]string, prefix string) ([]string, error) {
	var found []string
	for _, r := range rows {
		if r[0] == prefix {
			return r, nil
		}
		if !strings.HasPrefix(r[0], prefix) {
			continue
		}
		if found != nil {
			return nil, fmt.Errorf("two rows start with %q: %q and %q", prefix, found[0], r[0])
		}
		found = r
	}
	if found == nil {
		return nil, fmt.Errorf("no row starts with %q", prefix)
	}
	return found, nil
}
