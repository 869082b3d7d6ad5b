package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/realsync/realsync/rooms"
)

// Whatever the body, decoding answers nil, malformed (400) or a validation
// failure (422), and never panics. A body it accepts is valid UTF-8 JSON
// with no name repeated in any object and only exactly spelled field
// names, and what it decoded survives a round trip (encode, decode again:
// the same value). A body with a repeated name is always malformed.
func FuzzDecodeJSONObject(f *testing.F) {
	for _, s := range []string{`{}`, `{"name":"a","maxPlayers":4}`, `{"attributes":{"a":1}}`, `[`, `null`,
		`{"state":{"k":{"x":[1,2]}}}`, `{"name":1}`, `{"x":1}`, `{"maxPlayers":1e400}`, "{\"name\":\"\xff\"}",
		`{"NAME":"a"}`, `{"name":"a","name":"b"}`, `{"state":{"k":{"x":1,"x":2}}}`, `{"attributes":{"r":12345678901234567890}}`,
		`{"name":"a"} {}`, ` {"mode":"m"} `, `{"state":{"a":null}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		dup := hasDuplicateName(body)
		for _, dst := range []func() any{
			func() any { return new(rooms.CreateParams) },
			func() any { return new(rooms.State) },
			func() any { return new(rooms.MessageParams) },
		} {
			v := dst()
			err := decodeJSONObject(body, v)
			switch {
			case err == nil && dup:
				t.Fatalf("accepted a repeated name: %q", body)
			case dup && !errors.Is(err, errMalformed):
				t.Fatalf("a repeated name is %v, want malformed: %q", err, body)
			case err != nil && !errors.Is(err, errMalformed) && !errors.Is(err, rooms.ErrValidation):
				t.Fatalf("unexpected error class: %v", err)
			case err != nil:
				continue
			}
			again, err := json.Marshal(v)
			if err != nil {
				t.Fatalf("%T decoded from %q does not encode: %v", v, body, err)
			}
			w := dst()
			// encoding/json writes a field left nil as null, which a
			// request may not send (refuseNulls): the round trip decodes
			// with decodeJSONObject's options alone
			if err := jsonv2.Unmarshal(again, w, strictJSON); err != nil {
				t.Fatalf("%T re-encoded as %s is refused: %v", v, again, err)
			}
			if !reflect.DeepEqual(normal(t, v), normal(t, w)) {
				t.Fatalf("round trip of %q changed %T: %s", body, v, again)
			}
		}
	})
}

// normal renders v as compact JSON values, so raw members compare by
// content.
func normal(t *testing.T, v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(&out); err != nil {
		t.Fatal(err)
	}
	return out
}

// hasDuplicateName reports whether a syntactically valid body repeats a
// name within one object (an oracle independent of decodeJSONObject:
// jsontext with duplicates allowed, names tracked per object).
func hasDuplicateName(body []byte) bool {
	d := jsontext.NewDecoder(bytes.NewReader(body), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	var stack []map[string]bool
	for {
		kind := d.PeekKind()
		if kind == 0 {
			return false
		}
		// Inside an object, an even number of tokens read so far means a name comes.
		inObject := len(stack) > 0 && stack[len(stack)-1] != nil
		_, n := d.StackIndex(d.StackDepth())
		isName := inObject && n%2 == 0 && kind == '"'
		tok, err := d.ReadToken()
		if err != nil {
			return false
		}
		switch {
		case isName:
			name := tok.String()
			if stack[len(stack)-1][name] {
				return true
			}
			stack[len(stack)-1][name] = true
		case kind == '{':
			stack = append(stack, map[string]bool{})
		case kind == '[':
			stack = append(stack, nil)
		case kind == '}' || kind == ']':
			stack = stack[:len(stack)-1]
		}
	}
}
