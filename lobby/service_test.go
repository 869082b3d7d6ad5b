package lobby

import (
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
		{"NewestHigherScoreFirst", Newest, Position{11, "a"}, a, true},
		{"NewestTieHigherIDFirst", Newest, Position{10, "c"}, a, true},
		{"NewestTieLowerIDAfter", Newest, Position{10, "a"}, a, false},
		{"OldestLowerScoreFirst", Oldest, Position{9, "z"}, a, true},
		{"OldestTieLowerIDFirst", Oldest, Position{10, "a"}, a, true},
		{"OldestTieHigherIDAfter", Oldest, Position{10, "c"}, a, false},
		{"NewestSameIsNotBefore", Newest, a, a, false},
		{"OldestSameIsNotBefore", Oldest, a, a, false},
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
