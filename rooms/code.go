package rooms

import "strings"

// CodeAlphabet is Crockford's base32: no I, L, O or U, so codes read aloud
// and typed by hand survive.
const CodeAlphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

// CodeLength is the number of code characters of an invite code (60 random
// bits), written in groups of CodeGroup joined by dashes: K7Q2-MX9P-4HRT.
//
// Why 12. Guessing assumes the documented limit on invite-code guesses
// (CODE_GUESSES_LIMITED: 30 a minute per client IP, 10 per user) and an
// attacker with 1 000 IPs and as many guest users: 1 000 × 30 / 60 = 500
// guesses/s. With R = 1 000 000 private rooms alive at once, each guess hits
// some room with probability R / 32^n, so the expected time to the first hit
// on any room is 32^n / (R × 500/s):
//
//	n = 6  (the former length, 30 bits):  32^6  ≈ 1.07e9  → 2.1 s
//	n = 8  (40 bits):                      32^8  ≈ 1.10e12 → 37 min
//	n = 10 (50 bits):                      32^10 ≈ 1.13e15 → 26 days
//	n = 12 (60 bits):                      32^12 ≈ 1.15e18 → 73 years
//
// A room lives until it idles (REALSYNC_ROOM_IDLE_TIMEOUT) or, when set,
// REALSYNC_ROOM_MAX_LIFETIME; an active room may live indefinitely, so the
// assumption is a deployment's whole private population, renewed however
// often: at 12 characters the chance that the attacker joins any room at
// all within a day is 86 400 × 500 × 1e6 / 32^12 ≈ 4e-5, within a year
// about 1.4%, i.e. the expected time to the first hit (73 years) is far
// longer than any room lives. 10 characters would fall to one hit per 26
// days; 12 costs the player two more characters to type.
const CodeLength = 12

// CodeGroup is the number of characters between dashes in a code's
// canonical form.
const CodeGroup = 4

// LegacyCodeLength is the length of the codes issued before CodeLength
// grew: rooms created then keep their code, and it still resolves.
const LegacyCodeLength = 6

// NormalizeCode upper-cases code, maps the look-alikes I and L to 1 and O to
// 0, drops spaces and dashes, and reports whether the result is a
// well-formed invite code (CodeLength characters, or LegacyCodeLength for a
// room created before). It returns the canonical form, the one stored:
// groups of CodeGroup joined by dashes (K7Q2-MX9P-4HRT); a legacy code has
// no dashes (K7Q2MX).
func NormalizeCode(code string) (string, bool) {
	r := strings.NewReplacer("I", "1", "L", "1", "O", "0", "-", "", " ", "")
	c := r.Replace(strings.ToUpper(code))
	if len(c) != CodeLength && len(c) != LegacyCodeLength {
		return "", false
	}
	for i := 0; i < len(c); i++ {
		if strings.IndexByte(CodeAlphabet, c[i]) < 0 {
			return "", false
		}
	}
	if len(c) == LegacyCodeLength {
		return c, true
	}
	return FormatCode(c), true
}

// FormatCode writes the CodeLength characters c in groups of CodeGroup
// joined by dashes.
func FormatCode(c string) string {
	var b strings.Builder
	for i := 0; i < len(c); i += CodeGroup {
		if i > 0 {
			b.WriteByte('-')
		}
		b.WriteString(c[i:min(i+CodeGroup, len(c))])
	}
	return b.String()
}
