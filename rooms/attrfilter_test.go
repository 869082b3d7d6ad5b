package rooms

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"
)

// Two bounds of one side on one attribute (gt with gte, lt with lte), or
// a bound with an equality, are refused naming both, in the listing's
// query and in a quick-join's filters alike (a tester's find: the listing
// kept the parameter whose name sorted last, so attr.rank.gt=5 &
// attr.rank.gte=1 listed ranks 1..7, and quick-join applied the bounds in
// Go's map order, a random answer). One bound of each side passes.
func TestAttrFilterConflicts(t *testing.T) {
	for _, tc := range []struct {
		name   string
		query  map[string]string // the listing's parameters; nil: none
		quick  string            // a quick-join's attributes, as JSON; "": none
		fields []string          // the fields refused; nil when accepted
	}{
		{"LowerAndUpper", map[string]string{"attr.rank.gt": "5", "attr.rank.lte": "9"},
			`{"rank":{"gt":5,"lte":9}}`, nil},
		{"GtWithGte", map[string]string{"attr.rank.gt": "5", "attr.rank.gte": "1"},
			`{"rank":{"gte":1,"gt":5}}`, []string{"rank.gt", "rank.gte"}},
		{"LtWithLte", map[string]string{"attr.rank.lt": "5", "attr.rank.lte": "9"},
			`{"rank":{"lte":9,"lt":5}}`, []string{"rank.lt", "rank.lte"}},
		{"AllFour", map[string]string{"attr.rank.gt": "1", "attr.rank.gte": "1", "attr.rank.lt": "9", "attr.rank.lte": "9"},
			`{"rank":{"gt":1,"gte":1,"lt":9,"lte":9}}`, []string{"rank.gt", "rank.gte", "rank.lt", "rank.lte"}},
		{"OtherKeysApart", map[string]string{"attr.rank.gt": "5", "attr.level.gte": "1"},
			`{"rank":{"gt":5},"level":{"gte":1}}`, nil},
		{"EqualityWithBound", map[string]string{"attr.rank": "5", "attr.rank.gte": "10"},
			"", []string{"rank", "rank.gte"}},
		{"TrailingDotIsNoSecondEquality", map[string]string{"attr.rank": "5", "attr.rank.": "6"},
			"", []string{"rank."}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.query != nil {
				q := map[string][]string{}
				for k, v := range tc.query {
					q[k] = []string{v}
				}
				_, err := ParseAttrQuery(q)
				checkFields(t, "listing", err, "attr.", tc.fields)
			}
			if tc.quick != "" {
				p := QuickJoinParams{}
				if err := json.Unmarshal([]byte(tc.quick), &p.Attributes); err != nil {
					t.Fatal(err)
				}
				_, errs := p.attrFilters()
				checkFields(t, "quick-join", errs.err(), "attributes.", tc.fields)
			}
		})
	}
}

// checkFields fails t (going on) unless err names exactly prefix+fields (none: nil).
func checkFields(t *testing.T, what string, err error, prefix string, fields []string) {
	t.Helper()
	if fields == nil {
		if err != nil {
			t.Errorf("%s: %v, want none", what, err)
		}
		return
	}
	var verr *ValidationError
	if !errors.As(err, &verr) {
		t.Errorf("%s: %v, want a ValidationError", what, err)
		return
	}
	var got, want []string
	for _, f := range verr.Fields {
		got = append(got, f.Field)
	}
	for _, f := range fields {
		want = append(want, prefix+f)
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("%s: named %v, want %v (%v)", what, got, want, err)
	}
}
