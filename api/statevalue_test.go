package api_test

import (
	"strings"
	"testing"
)

// A state value's 8 KiB count the bytes it is stored as, compacted, as
// the state's 64 KiB total does: however much white space it is sent
// with, a value of 8192 bytes compacted is taken (in a patch and in a
// create) and one of 8193 refused, the state unchanged. A value of 8194
// bytes as sent and 8192 compacted was refused (a tester's find).
func TestStateValueLimitCountsCompacted(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		alice, _ := e.guest("alice")
		// value is a one-string array of n bytes compacted, sent with pad
		// white space around its string
		value := func(n int, pad string) (sent, stored string) {
			x := strings.Repeat("x", n-4)
			return "[" + pad + `"` + x + `"` + pad + "]", `["` + x + `"]`
		}
		sent, stored := value(8192, "\n    ")
		created := e.do("POST", "/v1/rooms", alice, `{"name":"S","mode":"m","region":"eu","state":{"v":`+sent+`}}`)
		want(t, created, 201, "")
		id := created.body["room"].(map[string]any)["id"].(string)
		state := func() string {
			t.Helper()
			r := e.do("GET", "/v1/rooms/"+id+"/state", alice, nil)
			want(t, r, 200, "")
			return r.raw
		}
		if got := state(); !strings.HasSuffix(strings.TrimSpace(got), `"stateVersion":0,"state":{"v":`+stored+`}}`) {
			t.Fatalf("created state %.80s..., want the value compacted", got)
		}
		for _, pad := range []string{" ", "\n  ", "\t\r\n \t"} {
			sent, stored := value(8192, pad)
			r := e.do("PATCH", "/v1/rooms/"+id+"/state", alice, `{"v": `+sent+`, "w": 1}`)
			want(t, r, 200, "")
			if got := state(); !strings.Contains(got, `"v":`+stored) {
				t.Fatalf("patched state %.80s..., want the value compacted", got)
			}
		}
		before := state()
		for _, pad := range []string{"", " ", "\n    "} {
			sent, _ := value(8193, pad)
			for _, body := range []string{`{"v": ` + sent + `}`, `{"w": null, "u": ` + sent + `}`} {
				r := e.do("PATCH", "/v1/rooms/"+id+"/state", alice, body)
				want(t, r, 422, "VALIDATION_FAILED")
				if !strings.Contains(r.raw, "8192 bytes") {
					t.Fatalf("8193 bytes compacted: %s", r.raw)
				}
			}
			sent = `{"name":"S","mode":"m","region":"eu","state":{"v":` + sent + `}}`
			want(t, e.do("POST", "/v1/rooms", alice, sent), 422, "VALIDATION_FAILED")
		}
		if after := state(); after != before {
			t.Fatalf("refused patches changed the state:\n%.120s\n%.120s", before, after)
		}
	})
}
