package rooms

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// MaxUserIDLen bounds a user id: 128 bytes.
const MaxUserIDLen = 128

// UserIDRule is the user-id grammar as a field error states it.
var UserIDRule = fmt.Sprintf("must be a user id: 1..%d bytes of UTF-8 without spaces, commas or control characters", MaxUserIDLen)

// ValidUserID reports whether id is a user id: 1..MaxUserIDLen bytes of
// valid UTF-8 holding no space, comma or ASCII control character (no rune
// up to U+0020, nor U+007F). It is the grammar of every user id the API
// takes: a token's subject (so that messages, invitations and following
// can name the user), a direct message's or an invitation's recipient,
// presence and following lists, reservations' userIds and tickets'
// partyUserIds; an id outside it could never be a token's subject.
func ValidUserID(id string) bool {
	return id != "" && len(id) <= MaxUserIDLen && utf8.ValidString(id) &&
		!strings.ContainsFunc(id, func(r rune) bool { return r <= ' ' || r == 0x7f || r == ',' })
}
