package sse

import (
	"fmt"
	"testing"

	"github.com/realsync/realsync/internal/doctable"
)

// The "lists" row of docs/SECURITY.md's "Every limit" table states the
// lobby feed's first list, lobbyInitial (its other figures:
// cmd/realsyncd's TestEveryLimitTableStatesTheCode).
func TestEveryLimitTableStatesTheLobbyFeed(t *testing.T) {
	rows, err := doctable.Table("../docs/SECURITY.md", "## Every limit")
	if err != nil {
		t.Fatal(err)
	}
	r, err := doctable.Row(rows, "lists")
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("the lobby feed's first list %d", lobbyInitial); !doctable.States(r[1], want) {
		t.Errorf("row %q: %q does not state %q (lobbyInitial)", r[0], r[1], want)
	}
}
