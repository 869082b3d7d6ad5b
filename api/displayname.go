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
const displayNameRule = "must be 1..32 characters, not only white space, without control characters"

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
// characters; "" for none or only white space, the cut's included. They
// are dropped, not refused as a guest's name's are: the user cannot
// change what their issuer signed, and a refused token would lock them
// out (right-to-left marks are common in Arabic and Hebrew names; a
// reviewer's find), while other players still never see them.
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
		claim = strings.TrimSpace(string([]rune(claim)[:maxDisplayName]))
	}
	if rooms.Blank(claim) {
		return ""
	}
	return claim
}
