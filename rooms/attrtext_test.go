package rooms

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// valuesStore is a Store that records the creates, updates and quick-joins
// that passed validation.
type valuesStore struct {
	Store
	calls int
}

func (v *valuesStore) Create(context.Context, User, NewRoom) (Joined, error) {
	v.calls++
	return Joined{}, nil
}

func (v *valuesStore) Update(context.Context, User, string, UpdateParams) (Room, error) {
	v.calls++
	return Room{}, nil
}

func (v *valuesStore) QuickJoin(context.Context, User, string, []string, []AttrFilter, *NewRoom) (QuickJoined, error) {
	v.calls++
	return QuickJoined{}, nil
}

// A room attribute's string value holds no character a room's name may
// not (NameControl: controls such as NUL and CR/LF, bidirectional
// formatting such as U+202E, U+2028/U+2029), refused as the name's are,
// naming the attribute, at create, update and a quick-join's create, and
// in a filtered value a quick-join's create would store (a tester's find:
// all of them were stored and shown in lobbies). Other strings and
// numbers pass; a filter alone (no create) stores nothing and passes.
func TestAttributeValuesHoldNoNameControl(t *testing.T) {
	for _, tc := range []struct {
		name  string
		value any    // the attribute map's value
		field string // "" when accepted
	}{
		{"Plain", "dust 2", ""},
		{"Unicode", "Ærø ✓ 東京", ""},
		{"Number", json.Number("3"), ""},
		{"Empty", "", ""},
		{"NUL", "a\x00b", "map"},
		{"LineFeed", "a\nb", "map"},
		{"CarriageReturn", "a\rb", "map"},
		{"Tab", "a\tb", "map"},
		{"RightToLeftOverride", "\u202Eevil", "map"},
		{"LineSeparator", "a\u2028b", "map"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &valuesStore{}
			s := New(Config{Store: st})
			ctx, u := context.Background(), User{ID: "u"}
			attrs := map[string]any{"map": tc.value}
			_, cerr := s.Create(ctx, u, CreateParams{Name: "a", Mode: "m", Region: "eu", Attributes: attrs})
			_, uerr := s.Update(ctx, u, "r1", UpdateParams{Attributes: &attrs})
			_, qerr := s.QuickJoin(ctx, u, QuickJoinParams{Mode: "m", Regions: []string{"eu"},
				Create: &QuickCreate{Name: "a", Attributes: attrs}})
			filter, _ := json.Marshal(tc.value)
			raw := map[string]json.RawMessage{"map": filter}
			_, ferr := s.QuickJoin(ctx, u, QuickJoinParams{Mode: "m", Regions: []string{"eu"}, Attributes: raw,
				Create: &QuickCreate{Name: "a"}})
			_, nerr := s.QuickJoin(ctx, u, QuickJoinParams{Mode: "m", Regions: []string{"eu"}, Attributes: raw})
			for _, c := range []struct {
				what  string
				err   error
				field string
			}{
				{"create", cerr, "attributes." + tc.field},
				{"update", uerr, "attributes." + tc.field},
				{"quick-join's create", qerr, "create.attributes." + tc.field},
				{"quick-join's filled-in filter", ferr, "attributes." + tc.field},
				{"quick-join's filter without create", nerr, ""},
			} {
				var verr *ValidationError
				switch {
				case tc.field == "" || c.field == "":
					if c.err != nil {
						t.Errorf("%s: refused: %v", c.what, c.err)
					}
				case !errors.As(c.err, &verr) || len(verr.Fields) != 1 || verr.Fields[0].Field != c.field ||
					!strings.HasPrefix(verr.Fields[0].Message, "must not contain "+NameControlRule):
					t.Errorf("%s: %v, want %s refused as a name's character", c.what, c.err, c.field)
				}
			}
			if want := map[bool]int{true: 5, false: 1}[tc.field == ""]; st.calls != want {
				t.Errorf("the store was asked %d times, want %d", st.calls, want)
			}
		})
	}
}

// A filter's equality value that is not UTF-8 (a query's attr.map=%FF%FE)
// is refused naming the parameter: no attribute could hold it, so the
// listing answered an empty page.
func TestAttrQueryValueMustBeUTF8(t *testing.T) {
	for _, tc := range []struct {
		name, param, value string
		ok                 bool
	}{
		{"UTF8", "attr.map", "dust2 ✓", true},
		{"EmptyIsTheEmptyString", "attr.map", "", true},
		{"InvalidBytes", "attr.map", "\xff\xfe", false},
		{"TruncatedSequence", "attr.map", "ab\xe2\x82", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseAttrQuery(map[string][]string{tc.param: {tc.value}})
			var verr *ValidationError
			switch {
			case tc.ok && err != nil:
				t.Fatalf("refused: %v", err)
			case !tc.ok && (!errors.As(err, &verr) || verr.Fields[0].Field != tc.param):
				t.Fatalf("got %v, want %s refused", err, tc.param)
			}
		})
	}
}
