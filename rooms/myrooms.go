package rooms

import (
	"context"
	"encoding/base64"
	"strconv"
	"strings"
)

// Paging of a user's rooms (GET /v1/me/rooms).
const (
	DefaultMyRooms = 20
	MaxMyRooms     = 100
)

// RoomPosition is a room's place among a user's rooms, newest first: its
// creation time (µs, as the store keeps it) descending, then its id
// descending.
type RoomPosition struct {
	Created int64
	ID      string
}

// Before reports whether a comes before b, newest first.
func (a RoomPosition) Before(b RoomPosition) bool {
	if a.Created != b.Created {
		return a.Created > b.Created
	}
	return a.ID > b.ID
}

// MyRoomsQuery is a page request as the client sent it: Limit nil for the
// default, Cursor "" for the first page.
type MyRoomsQuery struct {
	Limit  *int
	Cursor string
}

// MyRoomsPage is a page of a user's rooms; NextCursor is "" on the last.
type MyRoomsPage struct {
	Rooms      []Joined
	NextCursor string
}

// MyRooms returns a page of the rooms u is in, newest first, without
// players; u is a member of each, so invite codes show. A validation error
// names a bad limit or cursor.
func (s *Service) MyRooms(ctx context.Context, u User, q MyRoomsQuery) (MyRoomsPage, error) {
	if err := PlayersOnly(u); err != nil {
		return MyRoomsPage{}, err
	}
	limit := DefaultMyRooms
	var errs fieldErrors
	if q.Limit != nil {
		if *q.Limit < 1 || *q.Limit > MaxMyRooms {
			errs.add("limit", "must be 1..%d", MaxMyRooms)
		}
		limit = *q.Limit
	}
	var after *RoomPosition
	if q.Cursor != "" {
		p, ok := decodeMyCursor(q.Cursor)
		if !ok {
			errs.add("cursor", "is not a cursor of this listing")
		}
		after = &p
	}
	if err := errs.err(); err != nil {
		return MyRoomsPage{}, err
	}
	js, next, err := s.store.MyRooms(ctx, u, after, limit)
	if err != nil {
		return MyRoomsPage{}, err
	}
	page := MyRoomsPage{Rooms: js}
	if next != nil {
		page.NextCursor = encodeMyCursor(*next)
	}
	return page, nil
}

func encodeMyCursor(p RoomPosition) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(p.Created, 10) + "." + p.ID))
}

// decodeMyCursor accepts only the exact text encodeMyCursor makes.
func decodeMyCursor(s string) (RoomPosition, bool) {
	if len(s) > 256 {
		return RoomPosition{}, false
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(s)
	if err != nil {
		return RoomPosition{}, false
	}
	created, id, ok := strings.Cut(string(b), ".")
	n, err := strconv.ParseInt(created, 10, 64)
	p := RoomPosition{Created: n, ID: id}
	if !ok || err != nil || n < 0 || !ValidRoomID(id) || encodeMyCursor(p) != s {
		return RoomPosition{}, false
	}
	return p, true
}
