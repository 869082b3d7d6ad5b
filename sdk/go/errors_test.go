package realsync

import (
	"fmt"
	"testing"
)

// Error's message: status, code, title, a detail that says more, and each
// field error.
func TestErrorMessage(t *testing.T) {
	for _, tc := range []struct {
		err  Error
		want string
	}{
		{Error{Status: 404, Code: "ROOM_NOT_FOUND", Title: "Room not found", Detail: "Room not found."},
			"realsync: 404 ROOM_NOT_FOUND: Room not found"},
		{Error{Status: 409, Code: "ROOM_FULL", Title: "Room is full", Detail: "the room has 4 players of 4"},
			"realsync: 409 ROOM_FULL: Room is full: the room has 4 players of 4"},
		{Error{Status: 422, Code: "VALIDATION_FAILED", Title: "Validation failed", Detail: "2 fields are invalid",
			Errors: []FieldError{{Field: "name", Message: "must be 1..64 characters"}, {Field: "maxPlayers", Message: "must be 1..100"}}},
			"realsync: 422 VALIDATION_FAILED: Validation failed: 2 fields are invalid; name must be 1..64 characters; maxPlayers must be 1..100"},
		{Error{Status: 502, Title: "Bad Gateway", Detail: "upstream down"}, "realsync: 502: Bad Gateway: upstream down"},
	} {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("got  %q\nwant %q", got, tc.want)
		}
		wrapped := fmt.Errorf("joining: %w", &tc.err)
		if !IsCode(wrapped, tc.err.Code) || StatusOf(wrapped) != tc.err.Status {
			t.Errorf("%v: IsCode/StatusOf through a wrap", wrapped)
		}
	}
	if IsCode(fmt.Errorf("plain"), "") || StatusOf(fmt.Errorf("plain")) != 0 {
		t.Error("a plain error has a code or a status")
	}
}
