package rooms

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxAttrFilters bounds the attribute filters of one request.
const MaxAttrFilters = 8

// AttrFilter selects rooms by one attribute: equal to a value (a string
// attribute equal to it, or a numeric one equal to it as a number), or
// within a numeric range (bounds inclusive unless Exclusive says so).
type AttrFilter struct {
	Key string
	Eq  *string // nil for a range
	Min *float64
	Max *float64
	// MinExclusive and MaxExclusive turn gte/lte into gt/lt.
	MinExclusive, MaxExclusive bool
}

// Match reports whether attribute value v (as stored: string or
// json.Number) passes the filter. A missing attribute never matches.
func (f AttrFilter) Match(attrs map[string]any) bool {
	v, ok := attrs[f.Key]
	if !ok {
		return false
	}
	if s, isStr := v.(string); isStr {
		return f.Eq != nil && s == *f.Eq
	}
	n, ok := number(v)
	if !ok {
		return false
	}
	if f.Eq != nil {
		eq, err := strconv.ParseFloat(*f.Eq, 64)
		return err == nil && n == eq
	}
	if f.Min != nil && (n < *f.Min || (f.MinExclusive && n == *f.Min)) {
		return false
	}
	if f.Max != nil && (n > *f.Max || (f.MaxExclusive && n == *f.Max)) {
		return false
	}
	return true
}

// jsonNumberRe is the JSON grammar of a number (RFC 8259, section 6).
var jsonNumberRe = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$`)

// FiniteNumber parses s when it is a JSON number whose value is a finite
// float64; anything else (NaN, Inf, "1e400", "0x10", "+1", "") is false.
func FiniteNumber(s string) (float64, bool) {
	if len(s) > 64 || !jsonNumberRe.MatchString(s) {
		return 0, false
	}
	n, err := strconv.ParseFloat(s, 64)
	return n, err == nil && !math.IsInf(n, 0) && !math.IsNaN(n)
}

// AttrValueKey is attribute value v in canonical form: two attribute
// values are equal when their keys are (matchmaking's equal attributes
// compare so), whatever their JSON spelling.
//   - A number (json.Number, float64, int) is its float64 value as
//     encoding/json writes one: 1, 1.0, 1e0 and 10e-1 are all 1, and -0 is
//     0. It is AttrFilter.Match's equality (attr.<key>=1 matches a room
//     whose attribute is 1.0): by float64 value, so integers past 2^53
//     that round to one float64 are equal.
//   - A string is its JSON string: equal only to the same string byte for
//     byte (no case folding or Unicode normalisation), never to a number
//     ("1" is not 1).
//   - A boolean is true or false.
//   - Anything else (nil: an absent attribute) is its JSON, null for nil.
func AttrValueKey(v any) string {
	if n, ok := number(v); ok && !math.IsInf(n, 0) && !math.IsNaN(n) {
		if n == 0 {
			n = 0 // -0 is 0
		}
		v = n
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "null"
	}
	return string(b)
}

func number(v any) (float64, bool) {
	switch x := v.(type) {
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	case float64:
		return x, true
	case int:
		return float64(x), true
	}
	return 0, false
}

// MatchAll reports whether attrs pass every filter.
func MatchAll(fs []AttrFilter, attrs map[string]any) bool {
	for _, f := range fs {
		if !f.Match(attrs) {
			return false
		}
	}
	return true
}

// ParseAttrQuery reads the query parameters "attr.<key>=<value>" (equal:
// a number when the value is one, compared with numeric attributes, else a
// string) and "attr.<key>.gte|gt|lte|lt=<number>" (ranges). Other
// parameters are ignored. Errors name the parameter; two that may not be
// given together on one key (conflict: gt with gte, lt with lte, an
// equality with a bound) are named both.
func ParseAttrQuery(q map[string][]string) ([]AttrFilter, error) {
	byKey := map[string]*AttrFilter{}
	var errs fieldErrors
	names := make([]string, 0, len(q))
	for name := range q {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		rest, ok := strings.CutPrefix(name, "attr.")
		if !ok {
			continue
		}
		key, op, dotted := strings.Cut(rest, ".")
		val := q[name][0]
		if len(q[name]) > 1 {
			errs.add(name, "given more than once")
			continue
		}
		if !attrKeyRe.MatchString(key) {
			errs.add(name, "attribute key must match ^[A-Za-z0-9_]{1,32}$")
			continue
		}
		if dotted && op == "" { // attr.rank.=5 would be a second attr.rank
			errs.add(name, "operator must be one of gte, gt, lte, lt")
			continue
		}
		f := byKey[key]
		if f == nil {
			f = &AttrFilter{Key: key}
			byKey[key] = f
		}
		if other, ok := f.conflict(op); ok {
			otherName := strings.TrimSuffix("attr."+key+"."+other, ".")
			errs.add(otherName, "may not be given with %s: %s", name, conflictRule)
			errs.add(name, "may not be given with %s: %s", otherName, conflictRule)
			continue
		}
		if err := f.set(op, val); err != "" {
			errs.add(name, "%s", err)
		}
	}
	if len(byKey) > MaxAttrFilters {
		errs.add("attr", "at most %d attributes may be filtered", MaxAttrFilters)
	}
	if err := errs.err(); err != nil {
		return nil, err
	}
	out := make([]AttrFilter, 0, len(byKey))
	for _, f := range byKey {
		out = append(out, *f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// conflictRule is what each of two operators given together on one key
// (AttrFilter.conflict) is told.
const conflictRule = "an attribute takes at most one lower bound (gt or gte) and one upper bound (lt or lte), " +
	"and no bound with an equality filter"

// conflict reports which operator already set on f op may not be given
// with ("" for equality), if any: a second lower bound (gt with gte) or
// upper one (lt with lte), or a bound with an equality. Set, the later
// one would replace the earlier (with query parameters, the one whose
// name sorts later; in a quick-join's object, whichever Go's map order
// read last: random) or, with an equality, be ignored by Match, and the
// filter would not be the one the client asked for.
func (f AttrFilter) conflict(op string) (string, bool) {
	lower := func() (string, bool) {
		if f.MinExclusive {
			return "gt", true
		}
		return "gte", true
	}
	upper := func() (string, bool) {
		if f.MaxExclusive {
			return "lt", true
		}
		return "lte", true
	}
	switch {
	case (op == "gt" || op == "gte") && f.Min != nil:
		return lower()
	case (op == "lt" || op == "lte") && f.Max != nil:
		return upper()
	case (op == "gt" || op == "gte" || op == "lt" || op == "lte") && f.Eq != nil:
		return "", true
	case op == "" && f.Min != nil:
		return lower()
	case op == "" && f.Max != nil:
		return upper()
	}
	return "", false
}

// set applies one operator; returns a message when it is bad. A bound
// must be a finite number written as JSON writes numbers: NaN (which
// compares false with everything, so "gte=NaN" would match every room),
// Inf, overflow ("1e400"), hex and the like are refused.
func (f *AttrFilter) set(op, val string) string {
	n, isNum := FiniteNumber(val)
	switch op {
	case "":
		if !utf8.ValidString(val) { // a query's %FF: no attribute holds it
			return "must be valid UTF-8"
		}
		if utf8.RuneCountInString(val) > 128 {
			return "must be at most 128 characters"
		}
		f.Eq = &val
		return ""
	case "gte", "gt", "lte", "lt":
		if !isNum {
			return "must be a finite number (JSON number syntax, within ±1.8e308)"
		}
		if op[0] == 'g' {
			f.Min, f.MinExclusive = &n, op == "gt"
		} else {
			f.Max, f.MaxExclusive = &n, op == "lt"
		}
		return ""
	}
	return "operator must be one of gte, gt, lte, lt"
}

// bounds renders a range filter's bounds as a quick-join writes them:
// "gte 10, lt 20".
func (f AttrFilter) bounds() string {
	var parts []string
	if f.Min != nil {
		op := "gte "
		if f.MinExclusive {
			op = "gt "
		}
		parts = append(parts, op+strconv.FormatFloat(*f.Min, 'g', -1, 64))
	}
	if f.Max != nil {
		op := "lte "
		if f.MaxExclusive {
			op = "lt "
		}
		parts = append(parts, op+strconv.FormatFloat(*f.Max, 'g', -1, 64))
	}
	return strings.Join(parts, ", ")
}

// String renders the filters canonically (for cursors bound to them).
func (f AttrFilter) String() string {
	eq := "-"
	if f.Eq != nil {
		eq = strconv.Quote(*f.Eq)
	}
	return fmt.Sprintf("%s=%s|%v|%v|%v|%v", f.Key, eq, deref(f.Min), deref(f.Max), f.MinExclusive, f.MaxExclusive)
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}
