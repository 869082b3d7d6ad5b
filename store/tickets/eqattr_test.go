package tickets_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/matchmaking"
)

// A mode's equal attribute matches by value, not JSON spelling: tickets
// created through the service with platform 1 and 1.0 (or 1e0) are
// matched by the pass, as 1 and 1 are; a string never equals a number.
func TestEqualAttributesMatchByValue(t *testing.T) {
	rs := mustRules(t, "modes:\n  plat:\n    teams: 2\n    teamSize: 1\n    attributes:\n      - {name: platform, equal: true}\n")
	cases := []struct {
		name string
		a, b any // the two tickets' platform
		// match: the two tickets are matched
		match bool
	}{
		{"OneAndOne", json.Number("1"), json.Number("1"), true},
		{"OneAndOnePointZero", json.Number("1"), json.Number("1.0"), true},
		{"OneAndExponent", json.Number("1e0"), json.Number("1"), true},
		{"ZeroAndNegativeZero", json.Number("0"), json.Number("-0.0"), true},
		{"SameString", "pc", "pc", true},
		{"SameBoolean", true, true, true},
		{"OneAndTwo", json.Number("1"), json.Number("2"), false},
		{"StringAndNumber", "1", json.Number("1"), false},
		{"StringSpellings", "1", "1.0", false},
	}
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				ctx := context.Background()
				e := open(t, b, rs)
				for i, v := range []any{c.a, c.b} {
					_, err := e.svc.Create(ctx, player(fmt.Sprint("p", i)), matchmaking.TicketParams{Mode: "plat",
						Regions: []string{"eu"}, Rating: rating(1500), Attributes: map[string]any{"platform": v}})
					if err != nil {
						t.Fatal(err)
					}
				}
				pass, err := e.tickets.Pass(ctx, "plat", rs.Of("plat"), matchmaking.PassParams{Walk: 100, Sweep: 100, Grace: time.Minute})
				if err != nil {
					t.Fatal(err)
				}
				if got := len(pass.Matches) == 1; got != c.match {
					t.Fatalf("platform %v and %v: %d matches, want a match: %v", c.a, c.b, len(pass.Matches), c.match)
				}
			})
		}
	})
}
