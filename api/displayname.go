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
// control character (Cc: NUL, ESC, ...), or a bidirectional formatting
// one (Bidi_Control: the right-to-left override U+202E and its kin),
// which would reorder what other players see around the name.
func nameControl(r rune) bool {
	return unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r)
}

// validGuestName reports whether name keeps the display-name rule: 1..32
// characters, not only white space, no nameControl character.
func validGuestName(name string) bool {
	n := utf8.RuneCountInString(name)
	return n >= 1 && n <= maxDisplayName && !rooms.Blank(name) && strings.IndexFunc(name, nameControl) < 0
}

// tokenName is the display name of a token's name claim: the claim cut to
// 32 characters ("" for none or only white space); ok is false when it
// holds a nameControl character, which refuses the token (as a guest's
// name with one is refused), rather than show other players a name the
// user's issuer did not check.
func tokenName(claim string) (name string, ok bool) {
	if strings.IndexFunc(claim, nameControl) >= 0 {
		return "", false
	}
	if rooms.Blank(claim) {
		return "", true
	}
	if utf8.RuneCountInString(claim) > maxDisplayName {
		claim = string([]rune(claim)[:maxDisplayName])
	}
	return claim, true
}
