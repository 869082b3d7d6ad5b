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
			_, err := parse(c.p)
			var verr *rooms.ValidationError
			switch {
			case c.field == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.field != "" && (!errors.As(err, &verr) || verr.Fields[0].Field != c.field):
				t.Fatalf("got %v, want an error on %s", err, c.field)
			}
		})
	}
	q, _ := parse(ListParams{Sort: "fill", Joinable: true})
	c := encodeCursor(q, Position{ID: "0aABC", Key: "098|00000000000000001|0aABC"})
	if p, ok := decodeCursor(q, c); !ok || p.Key == "" {
		t.Fatalf("fill cursor round trip = %v, %v", p, ok)
	}
	newest, _ := parse(ListParams{Joinable: true})
	if _, ok := decodeCursor(newest, c); ok {
		t.Fatal("a fill cursor was accepted for newest")
	}
}
