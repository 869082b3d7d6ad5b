package layout

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/rooms"
)

func TestDecodePlayer(t *testing.T) {
	created := int64(1795298493000)
	at := time.UnixMilli(created + 182).UTC()
	for _, name := range []string{"bob", "", `a"b`, `back\slash`, "<b>&", "żółw 🐢", "a|b"} {
		rec := "182|" + jsonString(name)
		p, err := decodePlayer("7", rec, created)
		if err != nil || p.PlayerID != 7 || p.Name != name || !p.JoinedAt.Equal(at) {
			t.Errorf("decodePlayer(%q) = %+v, %v; want name %q", rec, p, err, name)
		}
	}
	for _, rec := range []string{"", "182", "x|\"bob\"", "182|bob", `{"playerId":1}`} {
		if _, err := decodePlayer("1", rec, created); err == nil {
			t.Errorf("decodePlayer(%q): no error", rec)
		}
	}
	if _, err := decodePlayer("one", `1|"bob"`, created); err == nil {
		t.Error("decodePlayer with playerId \"one\": no error")
	}
}

// TestDecodeRoom: a room from its fields (as HMGET or HGETALL read them),
// players in playerId order with their users and connections, attributes.
func TestDecodeRoom(t *testing.T) {
	full := map[string]string{"n": "arena", "m": "battle", "r": "eu", "vi": "private", "st": "waiting", "lk": "1", "mx": "8",
		"pc": "3", "ow": "2", "po": "open", "cd": "K7Q2MX9P4HRT", "cr": "1795298493000123", "up": "1795298494000", "ver": "9",
		"sv": "4", "at": `{"rank":1500,"map":"dust2"}`, "sq": "12", "sb": "0"}
	players := map[string]string{"10": `5|"c"`, "2": `1|"a"`, "3": `2|"b"`}
	users := map[string]string{"ua": "2", "ub": "3", "uc": "10", "ghost": "99"}
	conn := []string{"3", "10", "42", "x"}

	vals := make([]string, len(roomFields))
	for i, f := range roomFields {
		vals[i] = full[f]
	}
	tests := []struct {
		name string
		h    RoomHash
	}{
		{"from HMGET", RoomHashOf(redis.NewStringSliceResult(vals, nil))},
		{"from HGETALL", RoomHashFrom(full)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := DecodeRoom("id1", tt.h, players, users, conn)
			if err != nil {
				t.Fatal(err)
			}
			created := time.UnixMilli(1795298493000).UTC()
			want := rooms.Room{ID: "id1", Name: "arena", Mode: "battle", Region: "eu", Visibility: rooms.Private, Status: rooms.Waiting,
				Locked: true, MaxPlayers: 8, PlayerCount: 3, OwnerPlayerID: 2, StatePolicy: rooms.StatePolicy("open"), InviteCode: "K7Q2MX9P4HRT",
				CreatedAt: created, UpdatedAt: time.UnixMilli(1795298494000).UTC(), Version: 9, StateVersion: 4,
				Attributes: map[string]any{"rank": json.Number("1500"), "map": "dust2"},
				Players: []rooms.Player{
					{PlayerID: 2, UserID: "ua", Name: "a", JoinedAt: created.Add(time.Millisecond)},
					{PlayerID: 3, UserID: "ub", Name: "b", JoinedAt: created.Add(2 * time.Millisecond), Connected: true},
					{PlayerID: 10, UserID: "uc", Name: "c", JoinedAt: created.Add(5 * time.Millisecond), Connected: true},
				}}
			if !reflect.DeepEqual(r, want) {
				t.Fatalf("got  %+v\nwant %+v", r, want)
			}
		})
	}
	t.Run("empty attributes, no players", func(t *testing.T) {
		h := RoomHashFrom(map[string]string{"n": "x", "at": "{}"})
		r, err := DecodeRoom("id2", h, nil, nil, nil)
		if err != nil || r.Attributes == nil || len(r.Attributes) != 0 || r.Players == nil || len(r.Players) != 0 {
			t.Fatalf("%+v %v", r, err)
		}
	})
	t.Run("gone", func(t *testing.T) {
		if h := RoomHashOf(redis.NewStringSliceResult(make([]string, len(roomFields)), nil)); h != nil {
			t.Fatalf("a room without fields: %v", h)
		}
		if h := RoomHashFrom(map[string]string{}); h != nil {
			t.Fatalf("an empty hash: %v", h)
		}
	})
	t.Run("bad player", func(t *testing.T) {
		if _, err := DecodeRoom("id3", RoomHashFrom(full), map[string]string{"1": "bad"}, nil, nil); err == nil {
			t.Fatal("no error")
		}
	})
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
