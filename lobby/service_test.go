package lobby

import (
	"errors"
	"testing"

	"github.com/realsync/realsync/rooms"
)

func TestBefore(t *testing.T) {
	a := Position{Score: 10, ID: "b"}
	tests := []struct {
		name string
		sort Sort
		x, y Position
		want bool
	}{
		{"NewestHigherScoreFirst", Newest, Position{Score: 11, ID: "a"}, a, true},
		{"NewestTieHigherIDFirst", Newest, Position{Score: 10, ID: "c"}, a, true},
		{"NewestTieLowerIDAfter", Newest, Position{Score: 10, ID: "a"}, a, false},
		{"OldestLowerScoreFirst", Oldest, Position{Score: 9, ID: "z"}, a, true},
		{"OldestTieLowerIDFirst", Oldest, Position{Score: 10, ID: "a"}, a, true},
		{"OldestTieHigherIDAfter", Oldest, Position{Score: 10, ID: "c"}, a, false},
		{"NewestSameIsNotBefore", Newest, a, a, false},
		{"OldestSameIsNotBefore", Oldest, a, a, false},
		{"FillLowerKeyFirst", Fill, Position{Key: "097|1|a"}, Position{Key: "098|0|b"}, true},
		{"FillHigherKeyAfter", Fill, Position{Key: "098|0|b"}, Position{Key: "097|1|a"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Before(tc.sort, tc.x, tc.y); got != tc.want {
				t.Fatalf("Before(%s, %v, %v) = %v, want %v", tc.sort, tc.x, tc.y, got, tc.want)
			}
		})
	}
}

func TestCursorIsBoundToItsQuery(t *testing.T) {
	q := Query{Statuses: []rooms.Status{rooms.Waiting}, Sort: Newest, Limit: 5}
	c := encodeCursor(q, Position{Score: 42, ID: "0aABC"})
	if p, ok := decodeCursor(q, c); !ok || p.Score != 42 || p.ID != "0aABC" {
		t.Fatalf("round trip = %v, %v", p, ok)
	}
	other := q
	other.Mode = "battle"
	if _, ok := decodeCursor(other, c); ok {
		t.Fatal("cursor accepted for another filter")
	}
	other = q
	other.Limit = 50 // the page size may change between pages
	if _, ok := decodeCursor(other, c); !ok {
		t.Fatal("cursor refused for another limit")
	}
}

func TestParseFillAndJoinable(t *testing.T) {
	cases := []struct {
		name  string
		p     ListParams
		field string // "" when valid
	}{
		{"fill needs joinable", ListParams{Sort: "fill"}, "sort"},
		{"fill with joinable", ListParams{Sort: "fill", Joinable: true}, ""},
		{"joinable with waiting", ListParams{Status: "waiting", Joinable: true}, ""},
		{"joinable with playing", ListParams{Status: "waiting,playing", Joinable: true}, "status"},
		{"unknown sort", ListParams{Sort: "best"}, "sort"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := (&Service{}).parse(c.p)
			var verr *rooms.ValidationError
			switch {
			case c.field == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.field != "" && (!errors.As(err, &verr) || verr.Fields[0].Field != c.field):
				t.Fatalf("got %v, want an error on %s", err, c.field)
			}
		})
	}
	q, _ := (&Service{}).parse(ListParams{Sort: "fill", Joinable: true})
	c := encodeCursor(q, Position{ID: "0aABC", Key: "098|00000000000000001|0aABC"})
	if p, ok := decodeCursor(q, c); !ok || p.Key == "" {
		t.Fatalf("fill cursor round trip = %v, %v", p, ok)
	}
	newest, _ := (&Service{}).parse(ListParams{Joinable: true})
	if _, ok := decodeCursor(newest, c); ok {
		t.Fatal("a fill cursor was accepted for newest")
	}
}

// With allow-lists, a mode or region filter outside them is a validation
// error naming the parameter and listing the allowed names, on the lobby
// listing and the lobby feed alike.
func TestAllowedNames(t *testing.T) {
	s := New(Config{Names: rooms.Names{Modes: []string{"duel", "battle"}, Regions: []string{"eu"}}})
	cases := []struct {
		name          string
		mode, region  string
		field, reason string // "" when valid
	}{
		{"Allowed", "duel", "eu", "", ""},
		{"Any", "", "", "", ""},
		{"ModeNotAllowed", "race", "eu", "mode", "must be one of: duel, battle"},
		{"RegionNotAllowed", "duel", "us", "region", "must be one of: eu"},
		{"BadFormFirst", "Duel", "", "mode", "must match ^[a-z0-9][a-z0-9_-]{0,31}$"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for what, err := range map[string]error{
				"feed": s.CheckFilter(c.mode, c.region),
				"list": func() error { _, err := s.parse(ListParams{Mode: c.mode, Region: c.region}); return err }(),
			} {
				var verr *rooms.ValidationError
				switch {
				case c.field == "" && err != nil:
					t.Fatalf("%s refused: %v", what, err)
				case c.field != "" && (!errors.As(err, &verr) || len(verr.Fields) != 1 || verr.Fields[0] != rooms.FieldError{Field: c.field, Message: c.reason}):
					t.Fatalf("%s: got %v, want %s %s", what, err, c.field, c.reason)
				}
			}
		})
	}
}

// Whatever the text, a cursor is refused, or it is exactly the cursor
// encodeCursor makes for the position it decodes to (one spelling per
// position), for the query it was made for.
func FuzzDecodeCursor(f *testing.F) {
	s := &Service{}
	newest, _ := s.parse(ListParams{})
	fill, _ := s.parse(ListParams{Sort: "fill", Joinable: true})
	f.Add(encodeCursor(newest, Position{Score: 1700000000000000, ID: "0aABC"}))
	f.Add(encodeCursor(fill, Position{ID: "0aABC", Key: "098|00000000000000001|0aABC"}))
	f.Add("eyJpIjoiMGFBQkMiLCJxIjoxfQ")
	f.Add("eyJpIjoiMGFBQkMiLCJJIjoiMGFBQkMiLCJxIjoxfQ==")
	f.Add("")
	f.Fuzz(func(t *testing.T, c string) {
		for _, q := range []Query{newest, fill} {
			p, ok := decodeCursor(q, c)
			if !ok {
				continue
			}
			if again := encodeCursor(q, p); again != c {
				t.Fatalf("cursor %q decodes to %+v, which encodes as %q", c, p, again)
			}
			if !rooms.ValidRoomID(p.ID) || (q.Sort == Fill) != (p.Key != "") {
				t.Fatalf("cursor %q decodes to an impossible position %+v", c, p)
			}
		}
	})
}
