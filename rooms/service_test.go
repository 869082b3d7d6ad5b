package rooms

import "testing"

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
		{`7`, NeverMatches},       // not a quoted entity tag
		{`W/"7"`, NeverMatches},   // weak tags never match a strong comparison
		{`"-1"`, NeverMatches},    // no negative versions
		{`"seven"`, NeverMatches}, // garbage
	}
	for _, tc := range tests {
		if got := parseIfMatch(tc.header); got != tc.want {
			t.Errorf("parseIfMatch(%q) = %d, want %d", tc.header, got, tc.want)
		}
	}
}
