package api

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/realsync/realsync/rooms"
)

// maxDisplayName is the most characters (code points) of a display name.
const maxDisplayName = 32

// displayNameRule is what a display name must be, in the words of the
// 422 of a guest's name.
const displayNameRule = "must be 1..32 characters, not only white space, without control characters, " +
	"bidirectional formatting characters (U+061C, U+200E, U+200F, U+202A..U+202E, U+2066..U+2069) " +
	"or line and paragraph separators (U+2028, U+2029)"

// nameControl reports whether r may not appear in a display name: a
// control character (Cc: NUL, ESC, ...), a bidirectional formatting one
// (Bidi_Control: the right-to-left override U+202E and its kin), which
// would reorder what other players see around the name, or a line or
// paragraph separator (U+2028, U+2029), which would start a line of its
// own ("Alice\u2028[system] banned").
func nameControl(r rune) bool {
	return unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) || r == '\u2028' || r == '\u2029'
}

// validGuestName reports whether name keeps the display-name rule: 1..32
// characters, not only white space, no nameControl character.
func validGuestName(name string) bool {
	n := utf8.RuneCountInString(name)
	return n >= 1 && n <= maxDisplayName && !rooms.Blank(name) && strings.IndexFunc(name, nameControl) < 0
}

// tokenName is the display name of a token's name claim, and of a guest's
// name validGuestName took: the claim without its nameControl characters
// and U+FEFF (a zero-width no-break space, which rooms.Blank counts as
// white space while strings.Fields does not: "\uFEFF \uFEFF Jo" is "Jo"),
// each run of white space one space and none at the ends, cut to 32
// characters by cutName; "" for none or only white space, the cut's
// included. They are dropped, not refused as a guest's name's are: the
// user cannot change what their issuer signed, and a refused token would
// lock them out (right-to-left marks are common in Arabic and Hebrew
// names; a reviewer's find), while other players still never see them.
func tokenName(claim string) string {
	claim = strings.Map(func(r rune) rune {
		switch {
		case unicode.IsSpace(r):
			return ' ' // "John\tSmith", "John\u2028Smith" stay two words
		case nameControl(r), r == '\uFEFF':
			return -1
		}
		return r
	}, claim)
	claim = strings.Join(strings.Fields(claim), " ") // runs of white space one space, none at the ends
	if utf8.RuneCountInString(claim) > maxDisplayName {
		claim = cutName(claim)
	}
	if rooms.Blank(claim) {
		return ""
	}
	return claim
}

const (
	zwnj = '\u200C' // zero-width non-joiner
	zwj  = '\u200D' // zero-width joiner
)

// cutName cuts name, of more than maxDisplayName characters, to at most
// that many, between two characters as a reader sees them (clusterBreak),
// then drops the spaces and joiners (U+200C, U+200D) it ends with, which
// would trail into or join with what a client shows next. A name whose
// first character as a reader sees it is longer than the cut (a base
// under 32 combining marks) leaves nothing.
func cutName(name string) string {
	rs := []rune(name)
	n := maxDisplayName
	for n > 0 && !clusterBreak(rs, n) {
		n--
	}
	return strings.TrimRightFunc(string(rs[:n]), func(r rune) bool { return r == ' ' || r == zwj || r == zwnj })
}

// clusterBreak reports whether rs[:i] and rs[i:] (0 < i < len(rs)) part
// between two characters as a reader sees them, in a plain reading of
// Unicode's grapheme clusters (UAX #29): not before a combining mark (the
// accent of "e\u0301", a variation selector, a keycap's U+20E3), another
// grapheme extender (a tag character) or an emoji modifier (a skin tone),
// which would lose the base they change; not around a joiner in a joined
// sequence ("👨\u200d👩"); not inside a flag (two regional indicators,
// paired from the first of a run). A non-joiner (U+200C) only keeps two
// letters apart, so the cut may fall before one. Unicode's rarer rules
// are left out (Hangul written in conjoining jamo, prepended marks): a
// cut there may part a syllable.
func clusterBreak(rs []rune, i int) bool {
	prev, next := rs[i-1], rs[i]
	switch {
	case next == zwj || next != zwnj && unicode.In(next, unicode.M, unicode.Other_Grapheme_Extend) || next >= 0x1F3FB && next <= 0x1F3FF:
		return false
	case prev == zwj && next != ' ':
		return false
	case regional(prev) && regional(next):
		first := i - 1
		for first > 0 && regional(rs[first-1]) {
			first--
		}
		return (i-first)%2 == 0
	}
	return true
}

// regional reports whether r is a regional indicator (U+1F1E6..U+1F1FF),
// a flag's half.
func regional(r rune) bool { return r >= 0x1F1E6 && r <= 0x1F1FF }
