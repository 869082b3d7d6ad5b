package rooms

import "testing"

// Shows: a name others see must draw something; what draws nothing by
// itself (white space, format characters, marks without a base, fillers,
// blank symbols) does not count, and what Go's Unicode tables do not
// know yet does.
func TestShows(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    string
		want bool
	}{
		{"letter", "a", true},
		{"Hangul syllable", "한", true},
		{"Hangul conjoining jamo", "\u1112\u1161", true},
		{"spacing mark alone", "\u0903", true},
		{"keycap", "1\ufe0f\u20e3", true},
		{"flag", "🇺🇸", true},
		{"private use", "\ue000", true},
		{"punctuation", "·", true},
		{"emoji of Unicode 16", "\U0001FAE9", true},
		{"CJK ideograph of Unicode 15.1", "\U0002EBF0", true},
		{"filler beside a letter", "\u3164a", true},
		{"empty", "", false},
		{"white space", " \t\u3000\u00a0", false},
		{"zero-width space", "\u200b", false},
		{"byte order mark", "\ufeff", false},
		{"soft hyphen", "\u00ad", false},
		{"joiners and word joiner", "\u200c\u200d\u2060", false},
		{"invisible operators", "\u2061\u2064", false},
		{"Mongolian vowel separator", "\u180e", false},
		{"tag characters", "\U000E0041\U000E007F", false},
		{"combining marks alone", "\u0301\u0301", false},
		{"enclosing keycap alone", "\u20e3", false},
		{"variation selector alone", "\ufe0f", false},
		{"combining grapheme joiner", "\u034f", false},
		{"Hangul fillers", "\u115f\u1160\u3164\uffa0", false},
		{"braille blank", "\u2800\u2800", false},
		{"musical null notehead", "\U0001D159", false},
		{"object replacement", "\ufffc", false},
	} {
		if got := Shows(tc.s); got != tc.want {
			t.Errorf("%s: Shows(%+q) = %v, want %v", tc.name, tc.s, got, tc.want)
		}
	}
}
