package api_test

import (
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// A token's name claim reaches other players (from.name) without its
// control characters (NUL, ESC) and bidirectional formatting ones (a
// right-to-left override, marks, isolates), cut to 32 characters: the
// token is not refused for them (its user could not fix it), while a
// guest's name with one is 422. White space is folded in both: a guest's
// answer, refresh and messages carry the one folded name.
func TestTokenNameRule(t *testing.T) {
	e := newEnv(t, redistestEmbedded, true)
	bob, bobID := e.guest("bob")
	token := func(name string) string {
		tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"sub": "u_zed", "name": name,
			"exp": time.Now().Add(time.Hour).Unix()}).SignedString([]byte("test-secret"))
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	names := map[string]string{"a\x1b[31mred": "a[31mred", "John\tSmith": "John Smith", "\tJohn\r\nSmith\u2028": "John Smith", "  Jo   Ann ": "Jo Ann", "nul\x00": "nul", "evil\u202etxt.exe": "eviltxt.exe",
		"\u200fعلي": "علي", "isolate\u2066x\u2069": "isolatex", "zed ✓": "zed ✓"}
	var order []string
	for _, name := range []string{"a\x1b[31mred", "John\tSmith", "\tJohn\r\nSmith\u2028", "  Jo   Ann ", "nul\x00", "evil\u202etxt.exe", "\u200fعلي", "isolate\u2066x\u2069", "zed ✓"} {
		want(t, e.do("POST", "/v1/users/"+bobID+"/messages", token(name), map[string]any{"type": "chat", "data": name}), 202, "")
		order = append(order, names[name])
		if name != "zed ✓" && name != "  Jo   Ann " {
			want(t, e.do("POST", "/v1/auth/guest", "", map[string]any{"name": name}), 422, "VALIDATION_FAILED")
			continue
		}
		// a guest may take it: the answer, a refresh and other players
		// show the one name, its white space folded
		g := e.do("POST", "/v1/auth/guest", "", map[string]any{"name": name})
		want(t, g, 201, "")
		r := e.do("POST", "/v1/auth/refresh", g.body["token"].(string), nil)
		want(t, r, 201, "")
		if g.body["name"] != names[name] || r.body["name"] != names[name] {
			t.Errorf("guest %q named %q, refreshed %q, want %q", name, g.body["name"], r.body["name"], names[name])
		}
		want(t, e.do("POST", "/v1/users/"+bobID+"/messages", g.body["token"].(string), map[string]any{"type": "chat", "data": name}), 202, "")
		order = append(order, names[name])
	}
	// a line or paragraph separator starts a line of its own: not in a
	// guest's name, and the error says so
	for _, name := range []string{"Alice\u2028[system] banned", "Alice\u2029[system] banned"} {
		r := e.do("POST", "/v1/auth/guest", "", map[string]any{"name": name})
		want(t, r, 422, "VALIDATION_FAILED")
		if errs, _ := r.body["errors"].([]any); len(errs) != 1 || !strings.Contains(errs[0].(map[string]any)["message"].(string), "U+2028, U+2029") {
			t.Errorf("%q: errors %v, want one naming the separators", name, r.body["errors"])
		}
	}
	// a name must show something: wholly invisible (zero-width spaces and
	// joiners, format characters, lone combining marks, the Hangul and
	// braille fillers) it is no guest's name, and no name of a token's;
	// invisible runes beside a visible one stay
	for _, name := range []string{"\u200b", "\u200b\u200c\u200d\u2060", "\u3164", "\u3164\u3164 \u3164", "\u115f\u1160", "\uffa0",
		"\u2800\u2800", "\u034f", "\u0301\u0301", "\ufe0f", "\U000E0041", "\u00ad"} {
		r := e.do("POST", "/v1/auth/guest", "", map[string]any{"name": name})
		want(t, r, 422, "VALIDATION_FAILED")
		if errs, _ := r.body["errors"].([]any); len(errs) != 1 || !strings.Contains(errs[0].(map[string]any)["message"].(string), "visible") {
			t.Errorf("%q: errors %v, want one saying a character must be visible", name, r.body["errors"])
		}
		want(t, e.do("POST", "/v1/users/"+bobID+"/messages", token(name), map[string]any{"type": "chat", "data": 4}), 202, "")
		order = append(order, "")
	}
	// visible: beside invisible runes, a private-use character (a game's
	// font may draw it), punctuation, an emoji of Unicode 16 that Go's
	// tables (Unicode 15) do not know yet
	for _, name := range []string{"\u3164Jo", "Jo\u200bAnn", "\ue000", "·", "\U0001FAE9"} {
		g := e.do("POST", "/v1/auth/guest", "", map[string]any{"name": name})
		want(t, g, 201, "")
		if g.body["name"] != name {
			t.Errorf("guest %q named %q", name, g.body["name"])
		}
		want(t, e.do("POST", "/v1/users/"+bobID+"/messages", token(name), map[string]any{"type": "chat", "data": 5}), 202, "")
		order = append(order, name)
	}
	long := strings.Repeat("é", 40)
	want(t, e.do("POST", "/v1/users/"+bobID+"/messages", token(long), map[string]any{"type": "chat", "data": 2}), 202, "")
	order = append(order, long[:64])
	// the cut falls between characters as a reader sees them (Unicode's
	// grapheme clusters) and leaves no space or joiner at the end; U+FEFF,
	// white space to Blank, is dropped
	a := strings.Repeat("a", 29)
	joined := func(s string) string { return strings.Join(strings.Split(s, ""), "\u200d") }
	for _, c := range [][2]string{
		{a + "aa b", a + "aa"},                                                     // not "aaa...a "
		{strings.Repeat("\uFEFF", 32) + " Bob", "Bob"},                             // not 32 U+FEFF, a blank name
		{"\uFEFF   \uFEFF   Jo", "Jo"},                                             // not "\uFEFF \uFEFF Jo"
		{"a" + strings.Repeat("e\u0301", 20), "a" + strings.Repeat("e\u0301", 15)}, // not a bare e
		{a + "aa🇺🇸", a + "aa"},                                                     // not half a flag
		{a + "🇺🇸🇫🇷", a + "🇺🇸"},                                                     // flags pair from the first
		{a + "a👨\u200d👩", a + "a"},                                                 // not 👨 and a joiner
		{a + "aa1\ufe0f\u20e3", a + "aa"},                                          // not a 1 without its keycap
		{a + "aa👍\U0001F3FD", a + "aa"},                                            // not a thumb without its skin tone
		{a + "aی\u200cخ", a + "aی"},                                                // not a trailing non-joiner
		{a[:27] + "उपाध्याय", a[:27] + "उपा"},                                      // not a halant without its conjunct ("उपाध्")
		{a[:28] + "টুঙ্গা", a[:28] + "টু"},                                         // not "টুঙ্", the Bengali conjunct cut
		{a[:28] + "ทองคำ", a[:28] + "ทอง"},                                         // not ค without its SARA AM
		{a + "aaຄຳ", a + "aa"},                                                     // nor Lao's
		{a + "a\u1112\u1161\u11ab", a + "a"},                                       // not 하 of a 한 in conjoining jamo
		{a + "aa\u0d4eക", a + "aa"},                                                // not a dot reph without its consonant
		{joined("Bartholomew-Featherstonehaugh"), joined("Bartholomew-Feat")},      // joined throughout: cut, not no name
		{a[:25] + "اصفهانی\u200cزاده", a[:25] + "اصفهانی"},                         // cut before a non-joiner: not "اصفهان"
		{"x" + strings.Repeat("\u0301", 40), ""},                                   // one character over the cut: no name
	} {
		want(t, e.do("POST", "/v1/users/"+bobID+"/messages", token(c[0]), map[string]any{"type": "chat", "data": 3}), 202, "")
		order = append(order, c[1])
	}
	_, evs := opening(t, e.me(bob, "pc"))
	if len(evs) != len(order) {
		t.Fatalf("%d messages reached bob, want %d", len(evs), len(order))
	}
	for i, want := range order {
		if from := evs[i].data["from"].(map[string]any); from["name"] != want && (want != "" || from["name"] != nil) {
			t.Errorf("from %v, want name %q", from, want)
		}
	}
}
