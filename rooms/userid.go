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
// categories, nor a rune of the other invisible ones
// (Other_Default_Ignorable_Code_Point: the combining grapheme joiner
// U+034F, the Hangul fillers U+115F, U+1160, U+3164, U+FFA0...): no id
// that moves the text around it, nor the plainest invisible padding
// (lookalikes remain: a selector or joiner that changes nothing on
// screen, confusable letters). The zero-width non-joiner and joiner
// (U+200C, U+200D) are the format characters it keeps, where UAX #31's
// scripts need them (Persian and Indic spelling, emoji sequences): each
// between two runes beyond ASCII, neither a joiner; so "ad\u200dmin",
// "admin\u200c" and "\u200dkey:gs-1" (which prints as an API key's id)
// are no user ids. It is the grammar of every user id the API takes: a
// token's subject (so that messages, invitations and following can name
// the user), a direct message's or an invitation's recipient, presence and
// following lists, reservations' userIds and tickets' partyUserIds; an id
// outside it could never be a token's subject.
func ValidUserID(id string) bool {
	return id != "" && len(id) <= MaxUserIDLen && utf8.ValidString(id) && !strings.ContainsFunc(id, notInUserID) && joinersJoin(id)
}

// joinersJoin reports whether every joiner of id (U+200C, U+200D) stands
// between two runes beyond ASCII, neither of them a joiner, and every
// variation selector right after a visible rune beyond ASCII (an emoji's
// base, a CJK ideograph): elsewhere each is an invisible rune that makes
// ids print alike ("ad\ufe0f\u200d\ufe0fmin", "\ufe0fkey:gs-1").
func joinersJoin(id string) bool {
	if !strings.ContainsFunc(id, func(r rune) bool { return isJoiner(r) || isSelector(r) }) {
		return true
	}
	rs := []rune(id)
	for i, r := range rs {
		switch {
		case isJoiner(r) && (i == 0 || i == len(rs)-1 || !joinable(rs[i-1]) || !joinable(rs[i+1])):
			return false
		case isSelector(r) && (i == 0 || !joinable(rs[i-1]) || isSelector(rs[i-1])):
			return false
		}
	}
	return true
}

func isJoiner(r rune) bool { return r == zwnj || r == zwj }

func isSelector(r rune) bool { return unicode.Is(unicode.Variation_Selector, r) }

// joinable is a rune a joiner may stand beside.
func joinable(r rune) bool { return r >= utf8.RuneSelf && !isJoiner(r) }

const zwnj, zwj = '\u200C', '\u200D'

// notInUserID is a rune no user id holds.
func notInUserID(r rune) bool {
	return r == ',' || r != zwnj && r != zwj && unicode.In(r, unicode.Cc, unicode.Cf, unicode.Zs, unicode.Zl, unicode.Zp) ||
		unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r) // invisible: U+034F, U+115F, U+3164, U+FFA0...
}
