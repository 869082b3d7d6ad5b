package rooms

import "strings"

// FoldSpace returns s with its white space folded, as every name others
// see is (a room's, a player's display name): each run of white space of
// any kind (unicode.IsSpace: the ASCII space, tab and line breaks,
// U+0085, U+00A0, U+1680, U+2000..U+200A, U+2028, U+2029, U+202F,
// U+205F, U+3000) becomes one space, none at the ends, and U+FEFF is
// dropped wherever it is (a zero-width no-break space, which ECMAScript's
// \s counts as white space while unicode.IsSpace does not: "\uFEFF
// \uFEFF Jo" is "Jo"). Nothing else changes: what a name may not hold
// (NameControl) is its caller's to refuse or drop before it folds.
func FoldSpace(s string) string {
	s = strings.ReplaceAll(s, "\uFEFF", "")
	return strings.Join(strings.Fields(s), " ")
}

// foldName is the name a room is given for name as sent: its white space
// folded (FoldSpace) before its length and visibility are checked, so
// "  Epic   Battle " is "Epic Battle", its length that of the folded
// name, and a name of only white space and U+FEFF is "", refused as an
// empty name is ("must be 1..64 characters"). A name holding a
// NameControl character is left as sent for its check to refuse: a tab
// or line break in a room's name is 422, as in a guest's, not folded
// into a space.
func foldName(name string) string {
	if strings.ContainsFunc(name, NameControl) {
		return name
	}
	return FoldSpace(name)
}
