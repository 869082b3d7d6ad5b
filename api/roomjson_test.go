package api

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/realsync/realsync/api/oapi"
	"github.com/realsync/realsync/internal/jsonout"
	"github.com/realsync/realsync/lobby"
	"github.com/realsync/realsync/rooms"
)

// testRoom is a room with every member set, players included.
func testRoom() oapi.Room {
	code := "K7Q2-MX9P-4HRT"
	players := []oapi.Player{
		{PlayerId: 1, Name: "alice", JoinedAt: time.UnixMilli(1_700_000_000_123).UTC(), Connected: true},
		{PlayerId: 7, Name: "Bób <b>&", JoinedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)},
	}
	return oapi.Room{Id: "0b7Kx2hQ9pLmN3vR", Name: "Epic Battle Arena", Mode: "battle", Region: "us-west",
		Visibility: "private", Status: "waiting", Locked: true, MaxPlayers: 100, PlayerCount: 2, OwnerPlayerId: 1,
		Attributes:  oapi.Attributes{"map": "dust2", "rank": json.Number("1500"), "ratio": json.Number("-0.5e3"), "z": "ü"},
		StatePolicy: "open", CreatedAt: time.UnixMilli(1_699_999_999_000).UTC(), UpdatedAt: time.Unix(1_700_000_001, 120_000_000).UTC(),
		Version: 42, InviteCode: &code, Players: &players}
}

// TestAppendHotMatchesEncodingJSON: the hand-written encoder writes every
// hot answer byte for byte as encoding/json does (without its HTML
// escaping: jsonout).
func TestAppendHotMatchesEncodingJSON(t *testing.T) {
	full := testRoom()
	bare := oapi.Room{} // zero everything: null attributes, zero times, no players
	noPlayers := testRoom()
	empty := []oapi.Player{}
	noPlayers.Players, noPlayers.InviteCode, noPlayers.Attributes = &empty, nil, oapi.Attributes{}
	escapes := testRoom()
	escapes.Name = "quote \" backslash \\ newline \n tab \t ctl \x01 \x7f line sep \u2028 para \u2029 bad \xff utf8 😀"
	escapes.Mode = "<script>&</script>"
	escapes.Attributes = oapi.Attributes{"a": "\u2028", "b": json.Number(""), "c": json.Number("1e400"), "d": true, "e": nil, "f": 1.5,
		"g": json.Number("12345678901234567890123")}
	nilPlayers := testRoom()
	var none []oapi.Player
	nilPlayers.Players = &none
	local := testRoom()
	local.CreatedAt = time.Date(2026, 5, 6, 7, 8, 9, 123456789, time.FixedZone("x", 3600))
	cursor := "abc<def>"
	tests := []struct {
		name string
		v    any
	}{
		{"room", full},
		{"zero room", bare},
		{"no players, no code, empty attributes", noPlayers},
		{"strings that need escapes", escapes},
		{"nil players slice", nilPlayers},
		{"time in a zone with nanoseconds", local},
		{"joined", oapi.RoomJoined{PlayerId: 3, Room: full}},
		{"list with cursor", oapi.RoomList{NextCursor: &cursor, Rooms: []oapi.Room{noPlayers, escapes, bare}}},
		{"empty list", oapi.RoomList{Rooms: []oapi.Room{}}},
		{"nil list", oapi.RoomList{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, err := jsonout.Marshal(tt.v)
			if err != nil {
				t.Fatal(err)
			}
			got, ok := appendHot(nil, tt.v)
			if !ok {
				t.Fatalf("%T not written by appendHot", tt.v)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("got\n%s\nwant\n%s", got, want)
			}
		})
	}
	if _, ok := appendHot(nil, oapi.Health{Status: "ok"}); ok {
		t.Fatal("appendHot wrote a value it does not know")
	}
}

// TestAppendRoomPage: a list page is written as its oapi.RoomList (each
// room's roomBody without players) would be by encoding/json.
func TestAppendRoomPage(t *testing.T) {
	room := rooms.Room{ID: "0b7Kx2hQ9pLmN3vR", Name: "Bób <b>&", Mode: "battle", Region: "eu", Visibility: rooms.Public,
		Status: rooms.Waiting, MaxPlayers: 8, PlayerCount: 2, ReservedSeats: 1, OwnerPlayerID: 1, StatePolicy: "open",
		InviteCode: "K7Q2-MX9P-4HRT", Attributes: map[string]any{"map": "dust2", "rank": json.Number("1500")},
		CreatedAt: time.UnixMilli(1_699_999_999_000).UTC(), UpdatedAt: time.UnixMilli(1_700_000_001_120).UTC(), Version: 42,
		Players: []rooms.Player{{PlayerID: 1, Name: "alice"}}}
	bare := rooms.Room{ID: "b"} // nil attributes: written as {}
	for _, page := range []lobby.Page{{}, {Rooms: []rooms.Room{}}, {Rooms: []rooms.Room{room, bare}, NextCursor: "abc<def>"}} {
		list := oapi.RoomList{Rooms: make([]oapi.Room, len(page.Rooms))}
		for i, r := range page.Rooms {
			list.Rooms[i] = roomBody(r, false)
		}
		if page.NextCursor != "" {
			list.NextCursor = &page.NextCursor
		}
		want, err := jsonout.Marshal(list)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendRoomPage(nil, page); !bytes.Equal(got, want) {
			t.Fatalf("got\n%s\nwant\n%s", got, want)
		}
	}
}

// TestWriteJSON: the answer has its Content-Length and the body
// encoding/json's Encoder wrote (a newline after the value), for hot
// answers and others alike, over and over (pooled buffers are reused).
func TestWriteJSON(t *testing.T) {
	big := oapi.RoomList{Rooms: make([]oapi.Room, 200)} // past the pooled size
	for i := range big.Rooms {
		big.Rooms[i] = testRoom()
	}
	for i, v := range []any{testRoom(), oapi.Health{Status: "ok"}, big, oapi.RoomJoined{PlayerId: 1, Room: testRoom()}, testRoom()} {
		rec := httptest.NewRecorder()
		writeJSON(rec, 201, v)
		var want bytes.Buffer
		jsonout.NewEncoder(&want).Encode(v)
		if rec.Code != 201 || rec.Header().Get("Content-Type") != "application/json" ||
			rec.Header().Get("Content-Length") != strconv.Itoa(want.Len()) || !bytes.Equal(rec.Body.Bytes(), want.Bytes()) {
			t.Fatalf("answer %d: %d %v\n%s\nwant\n%s", i, rec.Code, rec.Header(), rec.Body, want.Bytes())
		}
	}
}

func FuzzAppendRoom(f *testing.F) {
	f.Add("name", "mode", "value", "12", int64(1_700_000_000_123_456_789), true)
	f.Add("<&>", "\u2028", "\xff", "-0.5e-3", int64(-5), false)
	f.Add("", "", "", "", int64(0), false)
	f.Fuzz(func(t *testing.T, name, mode, value, number string, ns int64, withPlayers bool) {
		r := testRoom()
		r.Name, r.Mode = name, mode
		r.Attributes = oapi.Attributes{value: value, "n": json.Number(number)}
		r.CreatedAt = time.Unix(0, ns).UTC()
		if !withPlayers {
			r.Players = nil
		} else {
			(*r.Players)[1].Name = value
		}
		want, err := jsonout.Marshal(r)
		if err != nil {
			return // encoding/json refuses it (a bad json.Number): never a stored attribute
		}
		if got, _ := appendHot(nil, r); !bytes.Equal(got, want) {
			t.Fatalf("got\n%s\nwant\n%s", got, want)
		}
	})
}
