package matchmaking

import (
	"strings"
	"testing"
	"time"
)

func TestParseRules(t *testing.T) {
	cases := []struct {
		name string
		file string
		// err: a substring of the error ("" parses); notErr: not in it
		err, notErr string
		// check runs on the parsed set when it parses
		check func(t *testing.T, rs RuleSet)
	}{
		{name: "EmptyFileAllDefaults", file: "", check: func(t *testing.T, rs RuleSet) {
			r := rs.Of("any")
			if r.Size() != 2 || r.Needed() != 2 || r.Window.Start != 100 || r.Window.Max != 1000 ||
				time.Duration(r.TicketTTL) != 5*time.Minute || time.Duration(r.Window.Every) != 5*time.Second || r.Hold() != 15*time.Second {
				t.Fatalf("default rules %+v", r)
			}
		}},
		{name: "TeamsYAML", file: `
modes:
  ranked:
    teams: 2
    teamSize: 3
    window: {start: 50, step: 50, every: 10s, max: 400}
    regionFallback: 15s
    attributes:
      - {name: platform, equal: true}
      - {name: level, min: 1, max: 100}
    ticketTTL: 2m
`, check: func(t *testing.T, rs RuleSet) {
			r := rs.Of("ranked")
			if r.Size() != 6 || r.Needed() != 6 || r.Window.Step != 50 ||
				time.Duration(r.RegionFallback) != 15*time.Second || len(r.Attributes) != 2 || *r.DefaultRating != 1000 {
				t.Fatalf("rules %+v", r)
			}
		}},
		{name: "MinMaxJSON", file: `{"modes": {"ffa": {"minPlayers": 3, "maxPlayers": 8, "ticketTTL": "30s", "backfill": true}}}`,
			check: func(t *testing.T, rs RuleSet) {
				r := rs.Of("ffa")
				if r.Size() != 8 || r.Needed() != 3 || r.Teams != 1 || r.Window != Default().Window || !r.Backfill {
					t.Fatalf("rules %+v", r)
				}
			}},
		{name: "BackfillWithTeams", file: "modes:\n  a:\n    teams: 2\n    teamSize: 2\n    backfill: true\n", err: "modes.a.backfill: only for one-team modes"},
		{name: "UnknownField", file: "modes:\n  a:\n    teamz: 2\n", err: "teamz"},
		{name: "BadModeName", file: "modes:\n  'Bad Mode':\n    teamSize: 2\n    teams: 2\n", err: "modes.Bad Mode"},
		{name: "BothSizes", file: "modes:\n  a:\n    teamSize: 2\n    maxPlayers: 4\n", err: "modes.a.teamSize: give teamSize or"},
		{name: "TeamsWithoutSize", file: "modes:\n  a:\n    teams: 2\n", err: "modes.a.teamSize: required"},
		{name: "TooMany", file: "modes:\n  a:\n    teams: 9\n    teamSize: 8\n", err: "at most 64"},
		{name: "MaxBelowMin", file: "modes:\n  a:\n    minPlayers: 4\n    maxPlayers: 3\n", err: "modes.a.maxPlayers"},
		// a window the file gives is kept, zero included: an exact
		// rating (a tester's find: {start: 0, max: 0} took the default's)
		{name: "ExactWindow", file: "modes:\n  a:\n    window: {start: 0, max: 0}\n", check: func(t *testing.T, rs RuleSet) {
			r := rs.Of("a")
			if r.Window.Start != 0 || r.Window.Max != 0 || r.Window.Step != 0 || r.WindowAt(time.Hour) != 0 {
				t.Fatalf("window %+v", r.Window)
			}
			again, err := rs.Normalize() // as NewService does
			if err != nil || again.Of("a").WindowAt(time.Hour) != 0 {
				t.Fatalf("normalized again: %+v, %v", again.Of("a").Window, err)
			}
		}},
		{name: "EmptyWindow", file: "modes:\n  a:\n    window: {}\n", check: func(t *testing.T, rs RuleSet) {
			if w := rs.Of("a").Window; w != Default().Window {
				t.Fatalf("window %+v, want the default's", w)
			}
		}},
		// a window's keys are checked as the file's others (a reviewer's
		// find: a typo made an exact window)
		{name: "WindowUnknownField", file: "modes:\n  a:\n    window: {satrt: 200}\n", err: "line 3: field satrt not found in a window"},
		{name: "NullWindow", file: "modes:\n  a:\n    window:\n    minPlayers: 2\n", check: func(t *testing.T, rs RuleSet) {
			if w := rs.Of("a").Window; w != Default().Window {
				t.Fatalf("window %+v, want the default's", w)
			}
		}},
		{name: "WindowNotAMapping", file: "modes:\n  a:\n    window: 100\n", err: "line 3: a window is a mapping"},
		{name: "WindowStepWithoutMax", file: "modes:\n  a:\n    window: {start: 50, step: 50, every: 1s}\n", err: "modes.a.window.max: required with window.step"},
		{name: "DurationNotOne", file: "modes:\n  a:\n    minPlayers: 2\n    ticketTTL: 10\n", err: `line 4: want a duration like "10s", got "10"`},
		{name: "DurationNotAString", file: "modes:\n  a:\n    regionFallback: [1]\n", err: `line 3: want a duration`},
		{name: "SecondDocument", file: "modes:\n  a:\n    minPlayers: 2\n---\nmodes:\n  b:\n    minPlayers: 3\n", err: "one YAML document only"},
		{name: "WindowMaxBelowStart", file: "modes:\n  a:\n    window: {start: 100, step: 10, every: 1s, max: 50}\n", err: "modes.a.window.max"},
		// values YAML allows that no rule can hold (a tester's finds: a
		// NaN started the server and made every ticket create a 500)
		{name: "WindowMaxNaN", file: "modes:\n  a:\n    window: {start: 100, step: 100, every: 5s, max: .nan}\n", err: "modes.a.window.max"},
		{name: "DefaultRatingNaN", file: "modes:\n  a:\n    defaultRating: .nan\n", err: "modes.a.defaultRating: must be a number within"},
		{name: "DefaultRatingInf", file: "modes:\n  a:\n    defaultRating: -.inf\n", err: "modes.a.defaultRating"},
		{name: "DefaultRatingTooHigh", file: "modes:\n  a:\n    defaultRating: 2e9\n", err: "modes.a.defaultRating"},
		{name: "AttributeMinNaN", file: "modes:\n  a:\n    attributes: [{name: level, min: .nan}]\n", err: "modes.a.attributes[0].min: must be a finite number"},
		{name: "AttributeMaxInf", file: "modes:\n  a:\n    attributes: [{name: level, max: .inf}]\n", err: "modes.a.attributes[0].max: must be a finite number"},
		{name: "TeamsOverflow", file: "modes:\n  a:\n    teams: 4611686018427387904\n    teamSize: 4\n", err: "modes.a.teams: must be 1..", notErr: "at least 2 players"},
		{name: "WindowEveryMissing", file: "modes:\n  a:\n    window: {start: 100, step: 10, max: 500}\n", err: "modes.a.window.every"},
		{name: "BadDuration", file: "modes:\n  a:\n    ticketTTL: forever\n", err: "forever"},
		{name: "TTLTooLong", file: "modes:\n  a:\n    ticketTTL: 2h\n", err: "modes.a.ticketTTL"},
		{name: "SeatHold", file: "modes:\n  a: {seatHold: 5m}\n  b: {seatHold: 1s}\n  c: {seatHold: 0s}\n", check: func(t *testing.T, rs RuleSet) {
			if a, b, c := rs.Of("a").Hold(), rs.Of("b").Hold(), rs.Of("c").Hold(); a != 5*time.Minute || b != time.Second || c != DefaultSeatHold {
				t.Fatalf("seat holds %s, %s, %s; want 5m, 1s and the default's 15s", a, b, c)
			}
		}},
		{name: "SeatHoldTooLong", file: "modes:\n  a: {seatHold: 301s}\n", err: "modes.a.seatHold: must be 1s..5m0s"},
		{name: "SeatHoldTooShort", file: "modes:\n  a: {seatHold: 999ms}\n", err: "modes.a.seatHold: must be 1s..5m0s"},
		{name: "SeatHoldNegative", file: "modes:\n  a: {seatHold: -1s}\n", err: "modes.a.seatHold"},
		{name: "AttributeBothKinds", file: "modes:\n  a:\n    attributes: [{name: x, equal: true, min: 1}]\n", err: "modes.a.attributes[0]: give"},
		{name: "AttributeTwice", file: "modes:\n  a:\n    attributes: [{name: x, equal: true}, {name: x, equal: true}]\n", err: "modes.a.attributes[1].name"},
		{name: "AttributeRangeInverted", file: "modes:\n  a:\n    attributes: [{name: x, min: 5, max: 1}]\n", err: "modes.a.attributes[0].max"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rs, err := ParseRules([]byte(c.file))
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err %v, want one with %q", err, c.err)
				}
				if c.notErr != "" && strings.Contains(err.Error(), c.notErr) {
					t.Fatalf("err %v, want none with %q", err, c.notErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			c.check(t, rs)
		})
	}
}

func TestWindowWidens(t *testing.T) {
	r := Rules{Window: Window{Start: 50, Step: 50, Every: Duration(10 * time.Second), Max: 400}}
	cases := []struct {
		waited time.Duration
		want   float64
	}{
		{0, 50}, {9999 * time.Millisecond, 50}, {10 * time.Second, 100}, {25 * time.Second, 150},
		{70 * time.Second, 400}, {time.Hour, 400}, {-time.Second, 50},
	}
	for _, c := range cases {
		if got := r.WindowAt(c.waited); got != c.want {
			t.Errorf("WindowAt(%s) = %v, want %v", c.waited, got, c.want)
		}
	}
	if got := Default().WindowAt(12 * time.Second); got != 300 {
		t.Errorf("default window after 12s = %v, want 300", got)
	}
}

func TestRegionsFallBack(t *testing.T) {
	r := Rules{RegionFallback: Duration(15 * time.Second)}
	regs := []string{"eu", "us", "asia"}
	cases := []struct {
		waited time.Duration
		want   int
	}{{0, 1}, {14 * time.Second, 1}, {15 * time.Second, 2}, {31 * time.Second, 3}, {time.Hour, 3}}
	for _, c := range cases {
		if got := r.RegionsAt(regs, c.waited); len(got) != c.want {
			t.Errorf("RegionsAt(%s) = %v, want the first %d", c.waited, got, c.want)
		}
	}
	if got := (Rules{}).RegionsAt(regs, 0); len(got) != 3 {
		t.Errorf("no fallback wait: %v, want all", got)
	}
}
