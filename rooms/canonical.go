package rooms

// MaxCanonicalDigits bounds a canonical decimal (ids, versions, limits in
// paths and query strings): 10 digits, beyond any playerId or version a
// room reaches.
const MaxCanonicalDigits = 10

// ParseCanonical reads s when it is a decimal in canonical form: digits
// only (no sign, space or "+"), no leading zero unless it is "0", at most
// MaxCanonicalDigits digits. Anything else is false, so that one number has
// one spelling ("02" is not player 2).
func ParseCanonical(s string) (int64, bool) {
	if s == "" || len(s) > MaxCanonicalDigits || (s[0] == '0' && len(s) > 1) {
		return 0, false
	}
	var n int64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}
