package realsync

import (
	"encoding/json"
	"testing"
)

func TestUnescapeHTML(t *testing.T) {
	cases := []struct{ in, want string }{
		{`{"a":"b"}`, `{"a":"b"}`},
		{`"\u003cb\u003e\u0026"`, `"<b>&"`},
		{`"\u003C\u003E"`, `"<>"`},
		{`"\\u003c"`, `"\\u003c"`},               // a backslash, then the text u003c
		{`"\\\u003c"`, `"\\<"`},                  // a backslash, then <
		{`"\u2028\u0000\""`, `"\u2028\u0000\""`}, // other escapes stay
		{`"\u00"`, `"\u00"`},
		{`{"k\u0026":["\u003e",1]}`, `{"k&":[">",1]}`},
	}
	for _, c := range cases {
		if got := string(unescapeHTML([]byte(c.in))); got != c.want {
			t.Errorf("unescapeHTML(%s) = %s, want %s", c.in, got, c.want)
		}
	}
	// what encoding/json writes means the same after
	for _, s := range []string{"<script>&amp;</script>", `\u003c`, `\<`, "\\\\<", "a\u2028b<\x00>", "é<ü>&"} {
		b, _ := json.Marshal(map[string]string{s: s})
		var back map[string]string
		if err := json.Unmarshal(unescapeHTML(b), &back); err != nil || back[s] != s {
			t.Errorf("%q: %s read back as %v (%v)", s, unescapeHTML(b), back, err)
		}
	}
}
