package api

import (
	"errors"
	"testing"

	"github.com/realsync/realsync/rooms"
)

// Whatever the body, decoding answers nil, malformed, or a validation
// failure, and never panics.
func FuzzDecodeJSONObject(f *testing.F) {
	for _, s := range []string{`{}`, `{"name":"a","maxPlayers":4}`, `{"attributes":{"a":1}}`, `[`, `null`,
		`{"state":{"k":{"x":[1,2]}}}`, `{"name":1}`, `{"x":1}`, `{"maxPlayers":1e400}`, "{\"name\":\"\xff\"}"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var p rooms.CreateParams
		err := decodeJSONObject(body, &p)
		if err != nil && !errors.Is(err, errMalformed) && !errors.Is(err, rooms.ErrValidation) {
			t.Fatalf("unexpected error class: %v", err)
		}
		var st rooms.State
		err = decodeJSONObject(body, &st)
		if err != nil && !errors.Is(err, errMalformed) && !errors.Is(err, rooms.ErrValidation) {
			t.Fatalf("unexpected error class: %v", err)
		}
	})
}
