package rooms

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxUserIDLen bounds a user id: 128 bytes.
const MaxUserIDLen = 128

// UserIDRule is the user-id grammar as a field error states it.
var UserIDRule = fmt.Sprintf("must be a user id: 1..%d bytes of UTF-8 without commas, spaces, or control or format characters", MaxUserIDLen)

// ValidUserID reports whether id is a user id: 1..MaxUserIDLen bytes of
// valid UTF-8 holding no comma and no rune of Unicode's control (Cc),
// format (Cf: zero-width spaces, bidirectional marks, U+FEFF), space (Zs:
// U+0020, U+00A0, U+3000...), line or paragraph separator (Zl, Zp)
// categories: no two ids that print alike, nor an id that moves the text
// around it. The zero-width non-joiner and joiner (U+200C, U+200D) are
// the format characters it keeps: Persian and Indic spelling and emoji
// sequences need them (UAX #31 allows them in identifiers). It is the grammar of every user id the API takes: a
// token's subject (so that messages, invitations and following can name
// the user), a direct message's or an invitation's recipient, presence and
// following lists, reservations' userIds and tickets' partyUserIds; an id
// outside it could never be a token's subject.
func ValidUserID(id string) bool {
	return id != "" && len(id) <= MaxUserIDLen && utf8.ValidString(id) && !strings.ContainsFunc(id, notInUserID)
}

const zwnj, zwj = '\u200C', '\u200D'

// notInUserID is a rune no user id holds.
func notInUserID(r rune) bool {
	return r == ',' || r != zwnj && r != zwj && unicode.In(r, unicode.Cc, unicode.Cf, unicode.Zs, unicode.Zl, unicode.Zp)
}
