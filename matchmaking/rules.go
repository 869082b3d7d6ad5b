// Package matchmaking groups players who queue with a ticket (a mode, the
// regions they accept, a skill rating, attributes, a party) into matches:
// the rules per mode (this file), tickets and their window at a time
// (ticket.go, window.go), the grouping (group.go), the service the HTTP
// API calls (service.go) and the matcher loop (matcher.go). It imports no
// adapter: the store implements Queue, the rooms service creates the
// match's room, a Notifier reaches the players.
package matchmaking

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"sort"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/realsync/realsync/rooms"

	"github.com/realsync/realsync/internal/configfile"
)

// Rules is how one mode matches. Exactly one of TeamSize or
// MinPlayers/MaxPlayers says the match's size: Teams teams of exactly
// TeamSize players, or one team of MinPlayers..MaxPlayers players.
type Rules struct {
	// Teams is the number of teams (default 1).
	Teams int `yaml:"teams" json:"teams"`
	// TeamSize is the players per team (with Teams).
	TeamSize int `yaml:"teamSize" json:"teamSize"`
	// MinPlayers and MaxPlayers bound a one-team match: it forms at
	// MaxPlayers, or at MinPlayers or more when no other ticket fits.
	MinPlayers int `yaml:"minPlayers" json:"minPlayers"`
	MaxPlayers int `yaml:"maxPlayers" json:"maxPlayers"`
	// Window is the rating window and how it widens with the wait.
	Window Window `yaml:"window" json:"window"`
	// DefaultRating is a ticket's rating when it gives none (1000).
	DefaultRating *float64 `yaml:"defaultRating" json:"defaultRating"`
	// RegionFallback is how long a ticket waits for its first region
	// before its second is tried too, and so on (0: every region at once).
	RegionFallback Duration `yaml:"regionFallback" json:"regionFallback"`
	// Attributes constrain tickets' attributes: Equal ones must be equal
	// across a match, ranged ones must be numbers within [Min, Max].
	Attributes []Attribute `yaml:"attributes" json:"attributes"`
	// TicketTTL is how long a ticket searches before it expires (5m).
	TicketTTL Duration `yaml:"ticketTTL" json:"ticketTTL"`
	// Backfill lets the mode's match rooms that have free seats (a match
	// formed below maxPlayers, a player who left, a seat whose hold
	// lapsed) take matching tickets before a new match is made; one-team
	// modes only (minPlayers/maxPlayers), as a room's teams are not known
	// once players leave.
	Backfill bool `yaml:"backfill" json:"backfill"`
	// SeatHold is how long a match's seats in its room are held for its
	// users (DefaultSeatHold): match_found says until when
	// (seatHeldUntil); a user who joins later may find the seat given
	// away. Zero is the default (Hold).
	SeatHold Duration `yaml:"seatHold" json:"seatHold"`
}

// Hold is r's SeatHold, DefaultSeatHold when unset.
func (r Rules) Hold() time.Duration {
	if r.SeatHold <= 0 {
		return DefaultSeatHold
	}
	return time.Duration(r.SeatHold)
}

// Window is a rating window: ±Start at first, widened by Step every
// Every of wait, up to ±Max.
type Window struct {
	Start float64  `yaml:"start" json:"start"`
	Step  float64  `yaml:"step" json:"step"`
	Every Duration `yaml:"every" json:"every"`
	Max   float64  `yaml:"max" json:"max"`
	// given: read from a file, where `window: {start: 0}` is an exact
	// window, not an unset one (a tester's find: it took the default's
	// ±100 widening to ±1000); in code the zero Window is unset
	given bool
}

// UnmarshalYAML reads a window the file gives, marking it given unless
// it names no field (`window: {}` is the default, as no window is). Its
// keys are checked here: n.Decode does not carry the file's strict
// decoding (a reviewer's find: `{satrt: 200}` passed, an exact window).
func (w *Window) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: a window is a mapping of start, step, every and max", n.Line)
	}
	for i := 0; i < len(n.Content); i += 2 {
		switch k := n.Content[i]; k.Value {
		case "start", "step", "every", "max":
		default:
			return fmt.Errorf("line %d: field %s not found in a window (start, step, every, max)", k.Line, k.Value)
		}
	}
	type plain Window // without this method
	var v plain
	if err := n.Decode(&v); err != nil {
		return err
	}
	*w = Window(v)
	w.given = len(n.Content) > 0
	return nil
}

// Attribute is a constraint on a ticket attribute: Equal, or a numeric
// range (Min and/or Max).
type Attribute struct {
	Name  string   `yaml:"name" json:"name"`
	Equal bool     `yaml:"equal" json:"equal"`
	Min   *float64 `yaml:"min" json:"min"`
	Max   *float64 `yaml:"max" json:"max"`
}

// Duration is a time.Duration written as "10s", "5m" in the file.
type Duration time.Duration

// UnmarshalYAML reads a Go duration string.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	var s string
	if err := n.Decode(&s); err != nil {
		return fmt.Errorf("line %d: want a duration like \"10s\"", n.Line)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		// the line, as yaml's own errors give it: a custom unmarshaler's
		// error comes out as it is, and "10" alone said not where
		return fmt.Errorf("line %d: want a duration like \"10s\", got %q", n.Line, s)
	}
	*d = Duration(v)
	return nil
}

// Default is the rules of a mode the file does not name: matches of
// exactly 2 players (one team of 2: a party of two is a match of its own;
// a duel of two sides is teams 2, teamSize 1), window ±100 widening by
// 100 every 5 s up to ±1000, ticket TTL 5 min, no backfill, seats held
// 15 s.
func Default() Rules {
	r := 1000.0
	return Rules{Teams: 1, MinPlayers: 2, MaxPlayers: 2,
		Window:        Window{Start: 100, Step: 100, Every: Duration(5 * time.Second), Max: 1000, given: true},
		DefaultRating: &r, TicketTTL: Duration(5 * time.Minute), SeatHold: Duration(DefaultSeatHold)}
}

// Limits of a rules file (README, "Matchmaking tickets"). A match's
// players (MaxMatchPlayers) fit one room's seats (rooms.MaxPlayersLimit)
// with room to spare; a ticket's party is at most one match's players.
const (
	MaxTeams        = 16
	MaxMatchPlayers = 64
	MaxTicketTTL    = time.Hour
	MaxAttributes   = 8
	MinWindowEvery  = 100 * time.Millisecond
	// DefaultSeatHold is rooms.DefaultReservationTTL; MaxSeatHold is a
	// reservation's longest (rooms.ReserveParams).
	DefaultSeatHold = 15 * time.Second
	MaxSeatHold     = 5 * time.Minute
)

// RuleSet is the rules of every mode; Of gives a mode's.
type RuleSet struct {
	Modes map[string]Rules `yaml:"modes" json:"modes"`
}

// Of is mode's rules, Default() for a mode the set does not name.
func (s RuleSet) Of(mode string) Rules {
	if r, ok := s.Modes[mode]; ok {
		return r
	}
	return Default()
}

var attrRe = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]{0,31}$`)

// LoadRules reads the rules file at path (REALSYNC_MATCHMAKING_FILE).
func LoadRules(path string) (RuleSet, error) {
	raw, err := configfile.Read(path)
	if err != nil {
		return RuleSet{}, fmt.Errorf("matchmaking file: %w", err)
	}
	rs, err := ParseRules(raw)
	if err != nil {
		return RuleSet{}, fmt.Errorf("matchmaking file %s: %w", path, err)
	}
	return rs, nil
}

// ParseRules decodes (YAML or JSON: JSON is YAML) and checks a rules
// file: unknown fields, and every bad field, are errors naming it
// ("modes.ranked.window.max: ..."); unset fields take Default()'s values.
func ParseRules(raw []byte) (RuleSet, error) {
	var f RuleSet
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil && !errors.Is(err, io.EOF) {
		return RuleSet{}, err
	}
	// a second document ("---") was ignored whole (a tester's find)
	var more yaml.Node
	if err := dec.Decode(&more); !errors.Is(err, io.EOF) {
		return RuleSet{}, errors.New("one YAML document only: the file holds more (a \"---\" line?)")
	}
	return f.Normalize()
}

// Normalize checks s as ParseRules checks a file (every bad field is an
// error naming it, "modes.ranked.window.max: ...") and returns a copy of
// it whose unset fields take Default()'s values; s is left as it is. A
// rule set built in code goes through it before use (NewService,
// NewMatcher): a Rules with unset fields (no DefaultRating, no size) is
// not usable as it is. Normalizing a normalized set changes nothing.
func (s RuleSet) Normalize() (RuleSet, error) {
	names := make([]string, 0, len(s.Modes))
	for m := range s.Modes {
		names = append(names, m)
	}
	sort.Strings(names)
	out := RuleSet{Modes: make(map[string]Rules, len(s.Modes))}
	var errs []error
	for _, m := range names {
		if !rooms.ValidName(m) {
			errs = append(errs, fmt.Errorf("modes.%s: a mode is 1..32 of a-z 0-9 _ -, starting with a letter or digit", m))
			continue
		}
		r, err := normalize("modes."+m, s.Modes[m])
		if err != nil {
			errs = append(errs, err)
		}
		out.Modes[m] = r
	}
	if err := errors.Join(errs...); err != nil {
		return RuleSet{}, err
	}
	return out, nil
}

// normalize fills r's unset fields from Default() and checks it; errors
// name the field under at.
func normalize(at string, r Rules) (Rules, error) {
	d := Default()
	var errs []error
	bad := func(field, format string, a ...any) {
		errs = append(errs, fmt.Errorf("%s.%s: %s", at, field, fmt.Sprintf(format, a...)))
	}
	switch {
	case r.TeamSize == 0 && r.MinPlayers == 0 && r.MaxPlayers == 0:
		if r.Teams > 1 {
			bad("teamSize", "required with teams > 1")
		}
		r.MinPlayers, r.MaxPlayers = d.MinPlayers, d.MaxPlayers
	case r.TeamSize != 0 && (r.MinPlayers != 0 || r.MaxPlayers != 0):
		bad("teamSize", "give teamSize or minPlayers/maxPlayers, not both")
	case r.TeamSize != 0:
		if r.TeamSize < 1 || r.TeamSize > MaxMatchPlayers {
			bad("teamSize", "must be 1..%d", MaxMatchPlayers)
		}
	default:
		if r.Teams > 1 {
			bad("minPlayers", "minPlayers/maxPlayers make one team; use teamSize with teams")
		}
		if r.MaxPlayers == 0 {
			r.MaxPlayers = r.MinPlayers
		}
		if r.MinPlayers == 0 {
			r.MinPlayers = r.MaxPlayers
		}
		if r.MinPlayers < 2 || r.MinPlayers > MaxMatchPlayers {
			bad("minPlayers", "must be 2..%d", MaxMatchPlayers)
		}
		if r.MaxPlayers < r.MinPlayers || r.MaxPlayers > MaxMatchPlayers {
			bad("maxPlayers", "must be minPlayers..%d", MaxMatchPlayers)
		}
	}
	if r.Teams == 0 {
		r.Teams = 1
	}
	if r.Teams < 1 || r.Teams > MaxTeams {
		bad("teams", "must be 1..%d", MaxTeams)
	}
	// the product of the two only when each is in range: a huge one
	// overflowed it (a tester's find: "a match needs at least 2 players"
	// for 2^62 teams)
	if sized := r.TeamSize >= 1 && r.TeamSize <= MaxMatchPlayers && r.Teams >= 1 && r.Teams <= MaxTeams; sized {
		if r.Teams*r.TeamSize > MaxMatchPlayers {
			bad("teamSize", "teams × teamSize must be at most %d", MaxMatchPlayers)
		}
		if r.Teams*r.TeamSize < 2 {
			bad("teamSize", "a match needs at least 2 players")
		}
	}
	if r.Window == (Window{}) { // not in the file (a given one is not the zero Window), nor set in code
		r.Window = d.Window
	}
	w := &r.Window
	switch {
	case w.Start < 0 || math.IsNaN(w.Start) || math.IsInf(w.Start, 0):
		bad("window.start", "must be 0 or more")
	case w.Max == 0 && w.Step > 0:
		// max = start would never widen it (a tester's find: silently)
		bad("window.max", "required with window.step: the window widens up to it")
	case w.Max == 0:
		w.Max = w.Start
	}
	w.given = true // normalized: normalizing again changes nothing
	if w.Step < 0 || math.IsNaN(w.Step) || math.IsInf(w.Step, 0) {
		bad("window.step", "must be 0 or more")
	}
	if w.Step > 0 && time.Duration(w.Every) < MinWindowEvery {
		bad("window.every", "must be at least %s when window.step is set", MinWindowEvery)
	}
	if w.Max < w.Start || math.IsNaN(w.Max) || math.IsInf(w.Max, 0) {
		bad("window.max", "must be at least window.start")
	}
	if r.DefaultRating == nil {
		r.DefaultRating = d.DefaultRating
	}
	if !finite(*r.DefaultRating) || math.Abs(*r.DefaultRating) > MaxRating {
		// a ticket's own rating is held to the same (a NaN here made every
		// ticket create of the mode a 500 and every pass fail)
		bad("defaultRating", "must be a number within ±%g", MaxRating)
	}
	if r.RegionFallback < 0 {
		bad("regionFallback", "must be 0 or more")
	}
	if r.TicketTTL == 0 {
		r.TicketTTL = d.TicketTTL
	}
	if r.TicketTTL < Duration(time.Second) || r.TicketTTL > Duration(MaxTicketTTL) {
		bad("ticketTTL", "must be 1s..%s", MaxTicketTTL)
	}
	if r.SeatHold == 0 {
		r.SeatHold = d.SeatHold
	}
	if r.SeatHold < Duration(time.Second) || r.SeatHold > Duration(MaxSeatHold) {
		bad("seatHold", "must be 1s..%s", MaxSeatHold)
	}
	if r.Backfill && r.Teams > 1 {
		bad("backfill", "only for one-team modes (minPlayers/maxPlayers): a room's teams are not known once players leave")
	}
	if len(r.Attributes) > MaxAttributes {
		bad("attributes", "at most %d", MaxAttributes)
	}
	seen := map[string]bool{}
	for i, a := range r.Attributes {
		f := fmt.Sprintf("attributes[%d]", i)
		switch {
		case !attrRe.MatchString(a.Name):
			bad(f+".name", "must be 1..32 of A-Z a-z 0-9 _, starting with a letter")
		case seen[a.Name]:
			bad(f+".name", "%q appears twice", a.Name)
		}
		seen[a.Name] = true
		ranged := a.Min != nil || a.Max != nil
		if a.Equal == ranged {
			bad(f, "give equal: true or a range (min and/or max), one of them")
		}
		if a.Min != nil && !finite(*a.Min) {
			bad(f+".min", "must be a finite number")
		}
		if a.Max != nil && !finite(*a.Max) {
			bad(f+".max", "must be a finite number")
		}
		if a.Min != nil && a.Max != nil && *a.Max < *a.Min {
			bad(f+".max", "must be at least min")
		}
	}
	return r, errors.Join(errs...)
}

// finite is a number neither NaN nor infinite (YAML's .nan, .inf).
func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// Size is the players of a full match; Needed the fewest a match may
// have.
func (r Rules) Size() int {
	if r.TeamSize > 0 {
		return r.Teams * r.TeamSize
	}
	return r.MaxPlayers
}

// Needed is the fewest players a match of r may have.
func (r Rules) Needed() int {
	if r.TeamSize > 0 {
		return r.Teams * r.TeamSize
	}
	return r.MinPlayers
}

// teamCap is the most players one team holds.
func (r Rules) teamCap() int {
	if r.TeamSize > 0 {
		return r.TeamSize
	}
	return r.MaxPlayers
}
