package rooms

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// createStore is a Store that records the room a quick-join would create.
type createStore struct {
	Store
	calls  int
	create *NewRoom
}

func (c *createStore) QuickJoin(_ context.Context, _ User, _ string, _ []string, _ []AttrFilter, create *NewRoom) (QuickJoined, error) {
	c.calls++
	c.create = create
	return QuickJoined{}, nil
}

// The room a quick-join creates matches the quick-join's own filters:
// equality-filtered keys create lacks are filled in from the filter,
// equal values are taken as given, and a create that contradicts an
// equality filter, or lacks or misses a range-filtered key, is refused
// naming create.attributes.<key> before the store is asked anything (a
// tester's find: create's value won, so the room failed its own filter
// and 40 callers made 40 rooms).
func TestQuickJoinCreateMatchesItsFilters(t *testing.T) {
	for _, tc := range []struct {
		name    string
		filters string         // the quick-join's attributes, as JSON
		create  map[string]any // create.attributes
		want    map[string]any // the created room's attributes; nil when refused
		field   string         // the field refused, with what its message holds
		message string
	}{
		{"FilledFromEqualityFilter", `{"map":"x","size":4}`, nil,
			map[string]any{"map": "x", "size": json.Number("4")}, "", ""},
		{"EqualStringAccepted", `{"map":"x"}`, map[string]any{"map": "x", "tier": "gold"},
			map[string]any{"map": "x", "tier": "gold"}, "", ""},
		{"EqualNumberOtherSpelling", `{"size":4}`, map[string]any{"size": json.Number("4.0")},
			map[string]any{"size": json.Number("4.0")}, "", ""},
		{"ContradictsEqualityFilter", `{"map":"x"}`, map[string]any{"map": "y"},
			nil, "create.attributes.map", `must equal the filter attributes.map ("x")`},
		{"EqualityOtherCase", `{"map":"dust2"}`, map[string]any{"map": "Dust2"},
			nil, "create.attributes.map", "must equal the filter attributes.map"},
		{"EqualityNumberAgainstString", `{"size":4}`, map[string]any{"size": "four"},
			nil, "create.attributes.size", "must equal the filter attributes.size (4)"},
		{"WithinRange", `{"rank":{"gte":10,"lt":20}}`, map[string]any{"rank": json.Number("10")},
			map[string]any{"rank": json.Number("10")}, "", ""},
		{"RangeKeyMissing", `{"rank":{"gte":10}}`, map[string]any{"map": "x"},
			nil, "create.attributes.rank", "is required: the filter attributes.rank (gte 10)"},
		{"RangeKeyMissingNoCreateAttributes", `{"rank":{"gt":1.5}}`, nil,
			nil, "create.attributes.rank", "(gt 1.5)"},
		{"BelowRange", `{"rank":{"gte":10}}`, map[string]any{"rank": json.Number("3")},
			nil, "create.attributes.rank", "must be a number within the filter attributes.rank (gte 10)"},
		{"OnExclusiveBound", `{"rank":{"gte":0,"lt":20}}`, map[string]any{"rank": json.Number("20")},
			nil, "create.attributes.rank", "(gte 0, lt 20)"},
		{"RangeOverString", `{"rank":{"lte":5}}`, map[string]any{"rank": "low"},
			nil, "create.attributes.rank", "must be a number within"},
		{"EqualityFilledThenRangeChecked", `{"map":"x","rank":{"gte":1}}`, map[string]any{"rank": json.Number("2")},
			map[string]any{"map": "x", "rank": json.Number("2")}, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &createStore{}
			s := New(Config{Store: st})
			p := QuickJoinParams{Mode: "qd", Regions: []string{"eu"}, Create: &QuickCreate{Name: "a", Attributes: tc.create}}
			if err := json.Unmarshal([]byte(tc.filters), &p.Attributes); err != nil {
				t.Fatal(err)
			}
			_, err := s.QuickJoin(context.Background(), User{ID: "u"}, p)
			if tc.want != nil {
				if err != nil || st.calls != 1 {
					t.Fatalf("refused: %v (store called %d times)", err, st.calls)
				}
				if !reflect.DeepEqual(st.create.Attributes, tc.want) {
					t.Fatalf("created with %#v, want %#v", st.create.Attributes, tc.want)
				}
				return
			}
			var verr *ValidationError
			if !errors.As(err, &verr) || len(verr.Fields) != 1 {
				t.Fatalf("got %v, want one field error", err)
			}
			if f := verr.Fields[0]; f.Field != tc.field || !strings.Contains(f.Message, tc.message) {
				t.Fatalf("got %s %q, want %s containing %q", f.Field, f.Message, tc.field, tc.message)
			}
			if st.calls != 0 {
				t.Fatalf("the store was asked %d times", st.calls)
			}
		})
	}
}
