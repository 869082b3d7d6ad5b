package sse

import (
	"bytes"
	"strings"
	"testing"
)

// Whatever an event's data holds, its frame is exactly one event whose
// fields are the id, the type and the data lines: nothing in the data can
// start another field or another event.
func FuzzAppendFrame(f *testing.F) {
	f.Add("7-abc", "state", []byte(`{"a":1}`))
	f.Add("1", "message", []byte("x\n\nid: 99\nevent: room_closed\ndata: {}"))
	f.Add("2\r\nretry: 1", "a\rb", []byte("\r\n\r"))
	f.Fuzz(func(t *testing.T, id, typ string, data []byte) {
		fr := appendFrame(nil, id, typ, data)
		body, ok := bytes.CutSuffix(fr, []byte("\n\n"))
		if !ok {
			t.Fatalf("frame does not end with a blank line: %q", fr)
		}
		lines := strings.Split(string(body), "\n")
		if id != "" {
			if lines[0] != "id: "+oneLine(id) {
				t.Fatalf("frame head %q", lines[0])
			}
			lines = lines[1:]
		}
		if len(lines) < 1 || lines[0] != "event: "+oneLine(typ) {
			t.Fatalf("frame head %q", lines[:min(1, len(lines))])
		}
		var got [][]byte
		for _, l := range lines[1:] {
			if !strings.HasPrefix(l, "data: ") || strings.ContainsRune(l, '\r') {
				t.Fatalf("line %q is not a data line", l)
			}
			got = append(got, []byte(l[6:]))
		}
		if want := bytes.FieldsFunc(data, isNewline); !bytes.Equal(bytes.Join(got, nil), bytes.Join(want, nil)) {
			t.Fatalf("data %q framed as %q", data, got)
		}
	})
}

func TestParseCursor(t *testing.T) {
	cases := []struct {
		id   string
		want Cursor
	}{
		{"", Cursor{}},
		{"12", Cursor{Set: true, Version: 12}}, // parsed, but not Verifiable: a snapshot
		{"12-aB3dEf", Cursor{Set: true, Version: 12, Tag: "aB3dEf"}},
		{"0", Cursor{Set: true}},
		{"-3", Cursor{}},                            // not ours: start over
		{"x-abc", Cursor{}},                         // not ours
		{"12-" + strings.Repeat("t", 17), Cursor{}}, // tag too long to be ours
		{"012-aB3dEf", Cursor{}},                    // not canonical
		{"+12-aB3dEf", Cursor{}},                    // not canonical
		{"12-", Cursor{}},                           // empty tag
		{"12-a_b", Cursor{}},                        // not a tag of ours
		{"12-a-b", Cursor{}},                        // not a tag of ours
		{"99999999999999999999", Cursor{}},          // past int64
	}
	for _, c := range cases {
		if got := ParseCursor(c.id); got != c.want {
			t.Errorf("ParseCursor(%q) = %+v, want %+v", c.id, got, c.want)
		}
	}
}

// Whatever the id, ParseCursor gives none, or a cursor that renders back
// to exactly that id (one spelling per position), and only tagged ids
// are verifiable.
func FuzzParseCursor(f *testing.F) {
	for _, s := range []string{"", "0", "12", "12-aB3dEf", "012-aB3dEf", "-3", "12-", "12-a-b", "9223372036854775807-z",
		"9223372036854775808", "1e3", " 12", "12-" + strings.Repeat("t", 16)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		c := ParseCursor(id)
		if !c.Set {
			if c != (Cursor{}) {
				t.Fatalf("ParseCursor(%q) = %+v: unset but not empty", id, c)
			}
			return
		}
		if got := c.String(); got != id {
			t.Fatalf("ParseCursor(%q) renders back as %q", id, got)
		}
		if c.Version < 0 {
			t.Fatalf("ParseCursor(%q): negative version", id)
		}
		if c.Verifiable() != strings.Contains(id, "-") {
			t.Fatalf("ParseCursor(%q): verifiable %v", id, c.Verifiable())
		}
	})
}
