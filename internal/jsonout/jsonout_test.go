package jsonout

import (
	"encoding/json"
	"strings"
	"testing"
)

// What users send comes out as they sent it, <, > and & included, and
// what encoding/json must escape still is.
func TestMarshal(t *testing.T) {
	for _, c := range []struct {
		name string
		v    any
		want string
	}{
		{"html characters as they are", map[string]string{"k": "<a href='x'>&</a>"}, `{"k":"<a href='x'>&</a>"}`},
		{"raw JSON compacted, not escaped", map[string]json.RawMessage{"s": json.RawMessage(`{ "x" : "<>&" }`)}, `{"s":{"x":"<>&"}}`},
		{"quotes, controls and line separators escaped", "\"\\\n\u2028", `"\"\\\n\u2028"`},
		{"invalid UTF-8 replaced", "a\xffb", `"a\ufffdb"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := Marshal(c.v)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != c.want {
				t.Errorf("Marshal(%#v) = %s, want %s", c.v, got, c.want)
			}
			var b strings.Builder
			if err := NewEncoder(&b).Encode(c.v); err != nil || b.String() != c.want+"\n" {
				t.Errorf("Encode: %q, %v; want %q", b.String(), err, c.want+"\n")
			}
		})
	}
}
