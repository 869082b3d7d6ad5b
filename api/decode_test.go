package api

import (
	"errors"
	"strings"
	"testing"

	"github.com/realsync/realsync/rooms"
)

// A body nested deeper than MaxBodyDepth is malformed (400), whatever
// carries the depth (a state value, message data, an attribute); brackets
// inside strings, escaped quotes among them, count for nothing; one at the
// limit decodes.
func TestBodyDepth(t *testing.T) {
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	for _, c := range []struct {
		name string
		body string
		dst  any
		ok   bool
	}{
		{"state value at the limit", `{"k":` + deep(MaxBodyDepth-1) + `}`, new(rooms.State), true},
		{"state value past it", `{"k":` + deep(MaxBodyDepth) + `}`, new(rooms.State), false},
		{"message data past it", `{"type":"t","data":` + deep(MaxBodyDepth) + `}`, new(rooms.MessageParams), false},
		{"objects past it", `{"k":` + strings.Repeat(`{"a":`, MaxBodyDepth) + "1" + strings.Repeat("}", MaxBodyDepth) + `}`, new(rooms.State), false},
		{"brackets in strings", `{"k":"` + strings.Repeat("[{", 100) + `\"[[[` + `"}`, new(rooms.State), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := decodeJSONObject([]byte(c.body), c.dst)
			if c.ok && err != nil {
				t.Fatalf("refused: %v", err)
			}
			if !c.ok && (!errors.Is(err, errMalformed) || !strings.Contains(err.Error(), "deep")) {
				t.Fatalf("got %v, want malformed, too deep", err)
			}
		})
	}
}

// A body that is no JSON object is malformed (400), and the message says
// what it is: a byte-order mark before an object is named as such.
func TestBodyNotAnObject(t *testing.T) {
	for _, c := range []struct{ name, body, want string }{
		{"byte-order mark", "\uFEFF{\"k\":1}", "byte-order mark"},
		{"byte-order mark after space", " \uFEFF{\"k\":1}", "byte-order mark"},
		{"array", `[1]`, "must be a JSON object"},
		{"empty", ``, "must be a JSON object"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := decodeJSONObject([]byte(c.body), new(rooms.State))
			if !errors.Is(err, errMalformed) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want malformed, %q", err, c.want)
			}
		})
	}
}
