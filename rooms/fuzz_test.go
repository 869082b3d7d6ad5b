package rooms

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"net/url"
	"strconv"
	"testing"
)

// Whatever the parameter, an attribute filter is refused with a
// validation error naming that parameter, or accepted with finite bounds;
// an accepted filter, written back as a query, parses to the same filter
// (String, which cursors are bound to, is the same).
func FuzzParseAttrQuery(f *testing.F) {
	for _, s := range [][2]string{{"attr.rank.gte", "1400"}, {"attr.rank.gte", "NaN"}, {"attr.rank.lte", "Inf"},
		{"attr.rank.lt", "1e400"}, {"attr.rank.gt", "0x10"}, {"attr.map", "dust2"}, {"attr.rank", "-0"},
		{"attr.a-b", "1"}, {"attr.rank.eq", "1"}, {"attr.rank.gte", "1.5e3"}, {"mode", "x"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, name, value string) {
		fs, err := ParseAttrQuery(map[string][]string{name: {value}})
		if err != nil {
			var verr *ValidationError
			if !errors.As(err, &verr) || len(verr.Fields) != 1 || verr.Fields[0].Field != name {
				t.Fatalf("%s=%q refused with %v, want one field error naming it", name, value, err)
			}
			return
		}
		if len(fs) > 1 {
			t.Fatalf("one parameter made %d filters", len(fs))
		}
		for _, fl := range fs {
			for _, b := range []*float64{fl.Min, fl.Max} {
				if b != nil && (math.IsNaN(*b) || math.IsInf(*b, 0)) {
					t.Fatalf("%s=%q accepted with the bound %v", name, value, *b)
				}
			}
			again, err := ParseAttrQuery(url.Values(map[string][]string{name: {value}}))
			if err != nil || len(again) != 1 || again[0].String() != fl.String() {
				t.Fatalf("%s=%q parses differently the second time", name, value)
			}
			for _, b := range []*float64{fl.Min, fl.Max} {
				if b == nil {
					continue
				}
				if n, ok := FiniteNumber(strconv.FormatFloat(*b, 'g', -1, 64)); !ok || n != *b {
					t.Fatalf("bound %v does not round-trip", *b)
				}
			}
		}
	})
}

// Whatever the merge patch (a JSON object as the API decodes it), it is
// refused with a validation error, or split into keys to set and keys to
// delete: every key of the patch exactly once, null deletes, every value
// set is the compact form of what was sent and within its size limit.
func FuzzStatePatch(f *testing.F) {
	for _, s := range []string{`{"a":1}`, `{"a":null,"b":{"c":[1,2,{"d":null}]}}`, `{"a b":1}`, `{"k":"` + string(bytes.Repeat([]byte("x"), 9000)) + `"}`,
		`{"k":  { "x" : 1 } }`, `{"k":[ "` + string(bytes.Repeat([]byte("x"), 8188)) + `" ]}`, `{}`, `{"a":1e400}`, `{"a":"\u0000"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var patch State
		if json.Unmarshal(body, &patch) != nil {
			return // refused by the API's decoding, fuzzed there
		}
		p, err := statePatch(patch, "")
		if err != nil {
			if !errors.Is(err, ErrValidation) {
				t.Fatalf("refusal %v is not a validation error", err)
			}
			return
		}
		if len(p.Set)+len(p.Del) != len(patch) {
			t.Fatalf("patch of %d keys became %d sets and %d deletes", len(patch), len(p.Set), len(p.Del))
		}
		for _, k := range p.Del {
			if !isNull(patch[k]) {
				t.Fatalf("deleting %q, which was not null", k)
			}
		}
		for k, v := range p.Set {
			var want bytes.Buffer
			if err := json.Compact(&want, patch[k]); err != nil || !bytes.Equal(want.Bytes(), v) || len(v) > MaxStateValue {
				t.Fatalf("set %q = %s, sent %s", k, v, patch[k])
			}
		}
	})
}

// Whatever the text, a /v1/me/rooms cursor is refused, or it is exactly
// the cursor of the position it decodes to.
func FuzzMyRoomsCursor(f *testing.F) {
	f.Add(encodeMyCursor(RoomPosition{Created: 1700000000000000, ID: "0aABCDEFGHIJKLMN"}))
	f.Add("MTcwMDAwMDAwMDAwMDAwMC4wYUFCQw")
	f.Add("MDE3LjBh")   // "017.0a": a leading zero
	f.Add("LTEuMGE")    // "-1.0a"
	f.Add("MTcuMGEuYg") // "17.0a.b"
	f.Add("MTcuMGE=")   // padded
	f.Fuzz(func(t *testing.T, s string) {
		p, ok := decodeMyCursor(s)
		if !ok {
			return
		}
		if encodeMyCursor(p) != s || p.Created < 0 || !ValidRoomID(p.ID) {
			t.Fatalf("cursor %q decodes to %+v, which encodes as %q", s, p, encodeMyCursor(p))
		}
	})
}
