package rooms

import "strings"

// CodeAlphabet is Crockford's base32: no I, L, O or U, so codes read aloud
// and typed by hand survive.
const CodeAlphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

// CodeLength is the number of characters of an invite code.
const CodeLength = 6

// NormalizeCode upper-cases code, maps the look-alikes I and L to 1 and O to
// 0, drops spaces and dashes, and reports whether the result is a
// well-formed invite code.
func NormalizeCode(code string) (string, bool) {
	r := strings.NewReplacer("I", "1", "L", "1", "O", "0", "-", "", " ", "")
	c := r.Replace(strings.ToUpper(code))
	if len(c) != CodeLength {
		return "", false
	}
	for i := 0; i < len(c); i++ {
		if strings.IndexByte(CodeAlphabet, c[i]) < 0 {
			return "", false
		}
	}
	return c, true
}
