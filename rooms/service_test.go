package rooms

import (
	"errors"
	"testing"
)

func TestNormalizeCode(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"K7Q2-MX9P-4HRT", "K7Q2-MX9P-4HRT", true},
		{"k7q2mx9p4hrt", "K7Q2-MX9P-4HRT", true},     // dashes added, upper case
		{" K7Q-2MX9P4-HRT ", "K7Q2-MX9P-4HRT", true}, // dashes and spaces anywhere
		{"OIL2-34AB-CDEF", "0112-34AB-CDEF", true},   // look-alikes
		{"K7Q2MX", "K7Q2MX", true},                   // a legacy code, as stored
		{"k7q2mx", "K7Q2MX", true},
		{"K7Q-2MX", "K7Q2MX", true},
		{"OIL234", "011234", true}, // look-alikes
		{"K7Q2M", "", false},
		{"K7Q2MXX", "", false},
		{"K7Q2-MX9P-4HR", "", false},   // 11
		{"K7Q2-MX9P-4HRTX", "", false}, // 13
		{"K7Q2MU", "", false},          // U is not in the alphabet
		{"K7Q2-MX9P-4HRU", "", false},
		{"", "", false},
	}
	for _, tc := range tests {
		got, ok := NormalizeCode(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("NormalizeCode(%q) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestParseIfMatch(t *testing.T) {
	tests := []struct {
		header string
		want   int64
	}{
		{"", NoIfMatch},
		{"*", NoIfMatch},
		{`"7"`, 7},
		{` "0" `, 0},
		{`W/"7"`, NeverMatches},   // weak tags never match a strong comparison
		{`"-1"`, NeverMatches},    // no negative versions
		{`"07"`, NeverMatches},    // not the ETag's octets
		{`"seven"`, NeverMatches}, // a tag, not a stateVersion
		{`""`, NeverMatches},
		{`W/"7", "8"`, 8},     // a list: its strong stateVersion
		{`"a",, "8" ,"8"`, 8}, // empty elements; the same version twice
		{`W/"1", "x"`, NeverMatches},
	}
	for _, tc := range tests {
		if got, err := ParseIfMatch(tc.header); got != tc.want || err != nil {
			t.Errorf("ParseIfMatch(%q) = %d, %v; want %d", tc.header, got, err, tc.want)
		}
	}
	malformed := []string{
		`7`,        // not quoted: the mistake a guide without quotes leads to
		`abc`,      // garbage
		`"7`,       // unterminated
		`'7'`,      // single quotes
		`w/"7"`,    // W/ is case-sensitive
		`"7" "8"`,  // no comma
		`"a"b"`,    // a quote inside
		`"7", *`,   // * stands alone
		`,`,        // no tag at all
		`"7", "8"`, // two stateVersions: one patch checks one
		"\"a b\"",  // a space inside
	}
	for _, h := range malformed {
		_, err := ParseIfMatch(h)
		var verr *ValidationError
		if !errors.As(err, &verr) || len(verr.Fields) != 1 || verr.Fields[0].Field != "If-Match" {
			t.Errorf("ParseIfMatch(%q): %v, want a ValidationError naming If-Match", h, err)
		}
	}
}
