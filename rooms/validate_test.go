package rooms

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// The seat and recipient ranges come from MaxPlayersLimit and
// MaxRecipients alone: the edges pass, one past them fails with the
// message that states the range.
func TestRangesFromTheirConstants(t *testing.T) {
	v := newValidator()
	n := func(i int) *int { return &i }
	to := func(k int) []int {
		out := make([]int, k)
		for i := range out {
			out[i] = i + 1
		}
		return out
	}
	seats := fmt.Sprintf("must be 1..%d", MaxPlayersLimit)
	for _, tc := range []struct {
		name  string
		value any
		field string // "" when valid
		msg   string
	}{
		{"update 1 seat", UpdateParams{MaxPlayers: n(1)}, "", ""},
		{"update the most seats", UpdateParams{MaxPlayers: n(MaxPlayersLimit)}, "", ""},
		{"update 0 seats", UpdateParams{MaxPlayers: n(0)}, "maxPlayers", seats},
		{"update one seat too many", UpdateParams{MaxPlayers: n(MaxPlayersLimit + 1)}, "maxPlayers", seats},
		{"create one seat too many", CreateParams{Name: "a", MaxPlayers: n(MaxPlayersLimit + 1)}, "maxPlayers", seats},
		{"the most recipients", MessageParams{Type: "chat", Data: []byte(`1`), To: to(MaxRecipients)}, "", ""},
		{"one recipient too many", MessageParams{Type: "chat", Data: []byte(`1`), To: to(MaxRecipients + 1)}, "to", fmt.Sprintf("must name 1..%d players", MaxRecipients)},
		{"no recipient", MessageParams{Type: "chat", Data: []byte(`1`), To: []int{}}, "to", fmt.Sprintf("must name 1..%d players", MaxRecipients)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got *FieldError
			for _, fe := range structErrors(v, tc.value) {
				if fe.Field == tc.field {
					got = &fe
				}
			}
			switch {
			case tc.field == "" && len(structErrors(v, tc.value)) > 0:
				t.Fatalf("errors %v, want none", structErrors(v, tc.value))
			case tc.field != "" && got == nil:
				t.Fatalf("no error on %s (errors %v)", tc.field, structErrors(v, tc.value))
			case got != nil && got.Message != tc.msg:
				t.Fatalf("%s: %q, want %q", tc.field, got.Message, tc.msg)
			}
		})
	}
}

// A number past a double's range is refused in a state value and a
// message's data, whatever its spelling or place; every number a double
// holds passes, an underflow too (read as 0), and digits inside strings
// are not numbers. The server took 1e400, which the Go and C# SDKs fail
// to read, at every reconnect (a tester's find).
func TestFiniteNumbers(t *testing.T) {
	s := New(Config{})
	for _, tc := range []struct {
		json string
		ok   bool
	}{
		{`1`, true},
		{`-0.5e-3`, true},
		{`1.7976931348623157e308`, true},
		{`-1.7976931348623157e308`, true},
		{`1e-400`, true},
		{`123456789012345678901234567890`, true},
		{`{"a":[1,2,{"b":"1e400"}],"c":"\"1e400"}`, true},
		{`"\\" `, true},
		{`1e400`, false},
		{`-1e400`, false},
		{`1.8e308`, false},
		{`1E+309`, false},
		{strings.Repeat("9", 400), false},
		{`{"hp":1e400}`, false},
		{`[true, null, {"x": ["a\"b", -1e999]}]`, false},
		{`{"s":"\\","n":1e400}`, false},
	} {
		if got := FiniteNumbers([]byte(tc.json)); got != tc.ok {
			t.Errorf("FiniteNumbers(%.60s) = %v, want %v", tc.json, got, tc.ok)
		}
		state := validateState("", State{"k": json.RawMessage(tc.json)}, true).err()
		_, msg := s.checkMessage(MessageParams{Type: "chat", Data: json.RawMessage(tc.json)})
		for what, err := range map[string]error{"state value": state, "message data": msg} {
			var ve *ValidationError
			if refused := errors.As(err, &ve) && strings.Contains(err.Error(), "finite double"); refused == tc.ok {
				t.Errorf("%s %.60s: %v", what, tc.json, err)
			}
		}
	}
}

// A state value's MaxStateValue counts it compacted, as it is stored and
// as the state's totals count it, in a patch and in a create alike: the
// white space it is sent with neither refuses a value that fits nor
// passes one that does not.
func TestStateValueLimitCountsCompacted(t *testing.T) {
	// value is a one-string array of n bytes compacted, pad around its string
	value := func(n int, pad string) json.RawMessage {
		return json.RawMessage("[" + pad + `"` + strings.Repeat("x", n-4) + `"` + pad + "]")
	}
	s := NewService(&nameStore{})
	for _, tc := range []struct {
		name string
		v    json.RawMessage
		ok   bool
	}{
		{"CompactAtTheLimit", value(MaxStateValue, ""), true},
		{"SpacedAtTheLimit", value(MaxStateValue, " "), true},
		{"PrettyAtTheLimit", value(MaxStateValue, "\n    "), true},
		{"PrettyFarPastAsSent", value(MaxStateValue, strings.Repeat(" \t\r\n", 1000)), true},
		{"CompactPastTheLimit", value(MaxStateValue+1, ""), false},
		{"SpacedPastTheLimit", value(MaxStateValue+1, " "), false},
		{"PrettyPastTheLimit", value(MaxStateValue+1, "\n    "), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := statePatch(State{"v": tc.v}, "")
			if (err == nil) != tc.ok {
				t.Fatalf("patch of %d bytes sent: %v", len(tc.v), err)
			}
			if err == nil && len(p.Set["v"]) != len(value(MaxStateValue, "")) {
				t.Fatalf("patch sets %d bytes, want the value compacted", len(p.Set["v"]))
			}
			_, err = s.Create(context.Background(), User{ID: "u1"}, CreateParams{Name: "a", Mode: "m", Region: "r", State: State{"v": tc.v}})
			if (err == nil) != tc.ok {
				t.Fatalf("create with %d bytes sent: %v", len(tc.v), err)
			}
			if err != nil && !strings.Contains(err.Error(), fmt.Sprintf("at most %d bytes of JSON once compacted", MaxStateValue)) {
				t.Fatalf("refusal %v does not state the limit", err)
			}
		})
	}
}
