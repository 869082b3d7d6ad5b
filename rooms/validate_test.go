package rooms

import (
	"fmt"
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
