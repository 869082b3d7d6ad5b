package rooms

import (
	"context"
	"errors"
	"testing"
)

// recordingStore is a Store that records the creates and quick-joins that
// passed validation.
type recordingStore struct {
	Store
	calls int
}

func (r *recordingStore) Create(context.Context, User, NewRoom) (Joined, error) {
	r.calls++
	return Joined{}, nil
}

func (r *recordingStore) QuickJoin(context.Context, User, string, []string, []AttrFilter, *NewRoom) (QuickJoined, error) {
	r.calls++
	return QuickJoined{}, nil
}

// With allow-lists, create and quick-join refuse a mode or region outside
// them with a validation error naming the field; without, any name of the
// documented form passes.
func TestAllowedNames(t *testing.T) {
	names := Names{Modes: []string{"duel", "battle"}, Regions: []string{"eu", "us-west"}}
	cases := []struct {
		name   string
		names  Names
		create CreateParams
		quick  QuickJoinParams
		field  string // "" when accepted
		reason string
	}{
		{"Allowed", names, CreateParams{Name: "a", Mode: "duel", Region: "eu"}, QuickJoinParams{Mode: "duel", Regions: []string{"us-west", "eu"}}, "", ""},
		{"NoLists", Names{}, CreateParams{Name: "a", Mode: "race", Region: "mars"}, QuickJoinParams{Mode: "race", Regions: []string{"mars"}}, "", ""},
		{"Mode", names, CreateParams{Name: "a", Mode: "race", Region: "eu"}, QuickJoinParams{Mode: "race"}, "mode", "must be one of: duel, battle"},
		{"Region", names, CreateParams{Name: "a", Mode: "duel", Region: "mars"}, QuickJoinParams{Mode: "duel", Regions: []string{"eu", "mars"}}, "region", "must be one of: eu, us-west"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := &recordingStore{}
			s := New(Config{Store: st, Names: tc.names})
			_, cerr := s.Create(context.Background(), User{ID: "u"}, tc.create)
			_, qerr := s.QuickJoin(context.Background(), User{ID: "u"}, tc.quick)
			quickField := tc.field
			if tc.field == "region" {
				quickField = "regions.1"
			}
			for _, c := range []struct {
				err   error
				field string
			}{{cerr, tc.field}, {qerr, quickField}} {
				var verr *ValidationError
				switch {
				case c.field == "" && c.err != nil:
					t.Fatalf("refused: %v", c.err)
				case c.field != "" && (!errors.As(c.err, &verr) || verr.Fields[0] != FieldError{Field: c.field, Message: tc.reason}):
					t.Fatalf("got %v, want %s %s", c.err, c.field, tc.reason)
				}
			}
			if want := map[bool]int{true: 2, false: 0}[tc.field == ""]; st.calls != want {
				t.Fatalf("store called %d times, want %d", st.calls, want)
			}
		})
	}
}
