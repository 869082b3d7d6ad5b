package api

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/clipperhouse/uax29/v2/graphemes"

	"github.com/realsync/realsync/rooms"
)

// maxDisplayName is the most characters (code points) of a display name.
const maxDisplayName = 32

// displayNameRule is what a display name must be, in the words of the
// 422 of a guest's name.
const displayNameRule = "must be 1..32 characters without " + rooms.NameControlRule + ", and " + rooms.ShowsRule

// validGuestName reports whether name keeps the display-name rule: 1..32
// characters, one of them visible, no rooms.NameControl character.
func validGuestName(name string) bool {
	n := utf8.RuneCountInString(name)
	return n >= 1 && n <= maxDisplayName && rooms.Shows(name) && strings.IndexFunc(name, rooms.NameControl) < 0
}

// tokenName is the display name of a token's name claim, and of a guest's
// name validGuestName took: the claim without its rooms.NameControl
// characters, its white space folded by rooms.FoldSpace (each run one
// space, none at the ends, U+FEFF dropped: the one rule of every name
// others see, room names' too), cut to 32 characters by cutName; "" for
// none, or none visible (rooms.Shows: only white space, format
// characters, marks or fillers), the cut's included. The control
// characters that are white space ("John\tSmith", "John\u2028Smith")
// fold into a space, so stay two words; the others are dropped, not
// refused as a guest's name's are: the user cannot change what their
// issuer signed, and a refused token would lock them out (right-to-left
// marks are common in Arabic and Hebrew names; a reviewer's find), while
// other players still never see them.
func tokenName(claim string) string {
	claim = strings.Map(func(r rune) rune {
		if rooms.NameControl(r) && !unicode.IsSpace(r) {
			return -1
		}
		return r
	}, claim)
	claim = rooms.FoldSpace(claim)
	if utf8.RuneCountInString(claim) > maxDisplayName {
		claim = cutName(claim)
	}
	if !rooms.Shows(claim) {
		return ""
	}
	return claim
}

// joiners are the zero-width non-joiner U+200C and joiner U+200D.
const joiners = "\u200C\u200D"

// cutName cuts name, of more than maxDisplayName characters, to its
// first grapheme clusters (characters as a reader sees them, by Unicode
// 17's UAX #29: an accented letter, an Indic conjunct, a Thai or Lao
// vowel with its SARA AM, a Hangul syllable in conjoining jamo, a flag, a
// keycap, a joined emoji) that keep it at most that many characters, then
// drops the spaces and joiners it ends with, which would trail into or
// join with what a client shows next. The joiners the last cluster ends
// with need no room, as they are dropped: a name cut before a
// non-joiner, "…اصفهانی" of "…اصفهانی\u200cزاده", keeps its last
// letter rather than losing it with the non-joiner ("…اصفهان"); shown
// at the end, the letter takes the same final form either way. A name
// whose first cluster is longer than the cut (a base under 32 combining
// marks) leaves nothing.
func cutName(name string) string {
	end, n := 0, 0
	for g := graphemes.FromString(name); g.Next(); {
		c := g.Value()
		if k := utf8.RuneCountInString(c); n+k <= maxDisplayName {
			end, n = g.End(), n+k
			continue
		}
		if shown := strings.TrimRight(c, joiners); n+utf8.RuneCountInString(shown) <= maxDisplayName {
			end = g.Start() + len(shown)
		}
		break
	}
	return strings.TrimRight(name[:end], " "+joiners)
}
