package api

import (
	"encoding/json"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/realsync/realsync/api/oapi"
	"github.com/realsync/realsync/internal/jsonout"
	"github.com/realsync/realsync/lobby"
)

// appendHot appends the JSON of the hot answers (a room, a joined room, a
// page of rooms) without reflection, byte for byte as encoding/json writes
// them (TestAppendHotMatchesEncodingJSON, FuzzAppendRoom); false for any
// other value, which encoding/json writes. encoding/json reflected over
// every field and allocated for every time; a page of 20 rooms spent more
// CPU in it than in decoding the Redis reply.
func appendHot(b []byte, v any) ([]byte, bool) {
	switch x := v.(type) {
	case oapi.Room:
		return appendRoom(b, &x), true
	case oapi.RoomJoined:
		b = append(b, `{"playerId":`...)
		b = strconv.AppendInt(b, int64(x.PlayerId), 10)
		b = append(b, `,"room":`...)
		b = appendRoom(b, &x.Room)
		return append(b, '}'), true
	case oapi.RoomList:
		b = append(b, `{"nextCursor":`...)
		if x.NextCursor == nil {
			b = append(b, "null"...)
		} else {
			b = appendString(b, *x.NextCursor)
		}
		b = append(b, `,"rooms":`...)
		if x.Rooms == nil {
			b = append(b, "null"...)
		} else {
			b = append(b, '[')
			for i := range x.Rooms {
				if i > 0 {
					b = append(b, ',')
				}
				b = appendRoom(b, &x.Rooms[i])
			}
			b = append(b, ']')
		}
		return append(b, '}'), true
	}
	return b, false
}

// appendRoomPage appends a list page as appendHot appends its
// oapi.RoomList (each room its roomBody without players), one room at a
// time: no slice of answer rooms for the page (TestAppendRoomPage).
func appendRoomPage(b []byte, page lobby.Page) []byte {
	b = append(b, `{"nextCursor":`...)
	if page.NextCursor == "" {
		b = append(b, "null"...)
	} else {
		b = appendString(b, page.NextCursor)
	}
	b = append(b, `,"rooms":[`...)
	for i := range page.Rooms {
		if i > 0 {
			b = append(b, ',')
		}
		body := roomBody(page.Rooms[i], false)
		b = appendRoom(b, &body)
	}
	return append(b, "]}"...)
}

// appendRoom appends r with oapi.Room's members in their declared order.
func appendRoom(b []byte, r *oapi.Room) []byte {
	b = append(b, `{"attributes":`...)
	b = appendAttributes(b, r.Attributes)
	b = append(b, `,"createdAt":`...)
	b = appendTime(b, r.CreatedAt)
	b = append(b, `,"id":`...)
	b = appendString(b, r.Id)
	if r.InviteCode != nil {
		b = append(b, `,"inviteCode":`...)
		b = appendString(b, *r.InviteCode)
	}
	b = append(b, `,"locked":`...)
	b = strconv.AppendBool(b, r.Locked)
	b = append(b, `,"maxPlayers":`...)
	b = strconv.AppendInt(b, int64(r.MaxPlayers), 10)
	b = append(b, `,"mode":`...)
	b = appendString(b, r.Mode)
	b = append(b, `,"name":`...)
	b = appendString(b, r.Name)
	b = append(b, `,"ownerPlayerId":`...)
	b = strconv.AppendInt(b, int64(r.OwnerPlayerId), 10)
	b = append(b, `,"playerCount":`...)
	b = strconv.AppendInt(b, int64(r.PlayerCount), 10)
	if r.Players != nil {
		b = append(b, `,"players":`...)
		b = appendPlayers(b, *r.Players)
	}
	b = append(b, `,"region":`...)
	b = appendString(b, r.Region)
	b = append(b, `,"reservedSeats":`...)
	b = strconv.AppendInt(b, int64(r.ReservedSeats), 10)
	b = append(b, `,"statePolicy":`...)
	b = appendString(b, string(r.StatePolicy))
	b = append(b, `,"status":`...)
	b = appendString(b, string(r.Status))
	b = append(b, `,"updatedAt":`...)
	b = appendTime(b, r.UpdatedAt)
	b = append(b, `,"version":`...)
	b = strconv.AppendInt(b, r.Version, 10)
	b = append(b, `,"visibility":`...)
	b = appendString(b, string(r.Visibility))
	return append(b, '}')
}

func appendPlayers(b []byte, ps []oapi.Player) []byte {
	if ps == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, p := range ps {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"connected":`...)
		b = strconv.AppendBool(b, p.Connected)
		b = append(b, `,"joinedAt":`...)
		b = appendTime(b, p.JoinedAt)
		b = append(b, `,"name":`...)
		b = appendString(b, p.Name)
		b = append(b, `,"playerId":`...)
		b = strconv.AppendInt(b, int64(p.PlayerId), 10)
		b = append(b, '}')
	}
	return append(b, ']')
}

// appendAttributes appends the map with its keys sorted, as encoding/json
// does; a value other than a string or a json.Number (the store decodes
// numbers so) goes through encoding/json.
func appendAttributes(b []byte, attrs oapi.Attributes) []byte {
	if attrs == nil {
		return append(b, "null"...)
	}
	if len(attrs) == 0 {
		return append(b, "{}"...)
	}
	var buf [16]string
	keys := buf[:0]
	for k := range attrs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, k)
		b = append(b, ':')
		b = appendValue(b, attrs[k])
	}
	return append(b, '}')
}

func appendValue(b []byte, v any) []byte {
	switch x := v.(type) {
	case string:
		return appendString(b, x)
	case json.Number:
		if plainNumber(string(x)) {
			return append(b, x...)
		}
	}
	out, err := jsonout.Marshal(v)
	if err != nil {
		// encoding/json would have failed the whole answer; an attribute
		// the store decoded cannot get here
		return append(b, "null"...)
	}
	return append(b, out...)
}

// plainNumber: a JSON number as encoding/json writes a json.Number back
// (digits, sign, point, exponent; it checks the same and writes it as is).
func plainNumber(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E') {
			return false
		}
	}
	return json.Valid([]byte(s))
}

// appendTime appends t as time.Time's MarshalJSON does (RFC 3339 with
// nanoseconds, trailing zeros cut).
func appendTime(b []byte, t time.Time) []byte {
	if y := t.Year(); y < 0 || y > 9999 {
		out, _ := json.Marshal(t) // an error there; not a time a room holds
		return append(b, out...)
	}
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"')
}

// appendString appends s quoted. A string of printable ASCII without
// anything JSON escapes (", \) goes as it is; any other goes through
// jsonout, so escapes, invalid UTF-8 and U+2028/U+2029 come out exactly
// as encoding/json writes them, but <, > and & as they are.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' {
			out, _ := jsonout.Marshal(s)
			return append(b, out...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
