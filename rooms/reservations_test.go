package rooms

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// seatStore records the reservations that reach the store; any other
// store call panics (the nil Store it embeds).
type seatStore struct {
	Store
	reserved [][]string
}

func (s *seatStore) ReserveSeats(_ context.Context, _ User, _ string, ids []string, _ time.Duration) (Reservation, error) {
	s.reserved = append(s.reserved, ids)
	return Reservation{ReservedSeats: len(ids)}, nil
}

// A reservation's userIds follow the user-id grammar (ValidUserID), as
// every user id the API takes: an id no token could carry is refused 422
// naming userIds.<i>, and no seat is held; the grammar's edges pass.
func TestReserveSeatsUserIDs(t *testing.T) {
	owner := User{ID: "owner", Name: "o"}
	for _, tc := range []struct {
		name string
		ids  []string
		// field is the field refused ("" when the reservation passes)
		field string
	}{
		{"Space", []string{"a b"}, "userIds.0"},
		{"Comma", []string{"ok", "a,b"}, "userIds.1"},
		{"Tab", []string{"a\tb"}, "userIds.0"},
		{"Delete", []string{"a\x7f"}, "userIds.0"},
		{"NotUTF8", []string{"\xff"}, "userIds.0"},
		{"Empty", []string{""}, "userIds.0"},
		{"129Bytes", []string{strings.Repeat("u", 129)}, "userIds.0"},
		{"100TwoByteRunes", []string{strings.Repeat("é", 100)}, "userIds.0"}, // 200 bytes
		{"65TwoByteRunes", []string{strings.Repeat("é", 65)}, "userIds.0"},   // 130 bytes
		{"APIKey", []string{"key:gs"}, "userIds.0"},
		{"128Bytes", []string{strings.Repeat("u", 128)}, ""},
		{"64TwoByteRunes", []string{strings.Repeat("é", 64)}, ""}, // 128 bytes
		{"Punctuation", []string{"u-8f2c_x.y@studio|42"}, ""},
		{"Unicode", []string{"jöran", "名前"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &seatStore{}
			_, err := NewService(st).ReserveSeats(context.Background(), owner, "room1", ReserveParams{UserIDs: tc.ids})
			if tc.field == "" {
				if err != nil || len(st.reserved) != 1 {
					t.Fatalf("%q: %v (%d reservations), want held", tc.ids, err, len(st.reserved))
				}
				return
			}
			var ve *ValidationError
			if !errors.As(err, &ve) || len(ve.Fields) != 1 || ve.Fields[0].Field != tc.field {
				t.Fatalf("%q: %v, want a validation error on %s alone", tc.ids, err, tc.field)
			}
			if len(st.reserved) != 0 {
				t.Fatalf("%q: %d reservations reached the store after a refusal", tc.ids, len(st.reserved))
			}
		})
	}
}
