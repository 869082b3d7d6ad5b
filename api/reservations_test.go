package api_test

import (
	"fmt"
	"strings"
	"testing"
)

// Seats held over HTTP: the owner holds one for a user, who then joins a
// full room; a stranger is ROOM_FULL; the room shows reservedSeats; bad
// bodies are 422 naming the field and hold nothing.
func TestReserveSeatsRoute(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		owner, _ := e.guest("owner")
		held, heldID := e.guest("held")
		other, _ := e.guest("other")
		room := e.create(owner, map[string]any{"name": "Held", "mode": "battle", "region": "eu", "maxPlayers": 2})
		path := "/v1/rooms/" + room["id"].(string)
		for _, bad := range []struct {
			body  any
			field string
		}{
			{map[string]any{"userIds": []string{}}, "userIds"},
			{map[string]any{"userIds": []string{"a", "a"}}, "userIds"},
			{map[string]any{"userIds": []string{strings.Repeat("u", 129)}}, "userIds.0"},
			{map[string]any{"userIds": []string{"key:gs"}}, "userIds.0"},
			// outside the user-id grammar: no token could carry these
			{map[string]any{"userIds": []string{"a b"}}, "userIds.0"},
			{map[string]any{"userIds": []string{"ok", "a,b"}}, "userIds.1"},
			{map[string]any{"userIds": []string{strings.Repeat("é", 100)}}, "userIds.0"},
			// nor Unicode's spaces, separators, control or format characters
			{map[string]any{"userIds": []string{"ok", "a\u00a0b"}}, "userIds.1"},
			{map[string]any{"userIds": []string{"a\u200bb"}}, "userIds.0"},
			{map[string]any{"userIds": []string{"a\u2028b"}}, "userIds.0"},
			{map[string]any{"userIds": []string{"\ufeffa"}}, "userIds.0"},
			{map[string]any{"userIds": []string{"a"}, "ttlSeconds": 301}, "ttlSeconds"},
			{map[string]any{"userIds": []string{"a"}, "extra": 1}, "extra"},
		} {
			r := e.do("POST", path+"/reservations", owner, bad.body)
			want(t, r, 422, "VALIDATION_FAILED")
			if !strings.Contains(r.raw, fmt.Sprintf(`"field":%q`, bad.field)) {
				t.Fatalf("%v: %s does not name %s", bad.body, r.raw, bad.field)
			}
		}
		want(t, e.do("POST", path+"/reservations", held, map[string]any{"userIds": []string{heldID}}), 403, "NOT_A_MEMBER")
		r := e.do("POST", path+"/reservations", owner, map[string]any{"userIds": []string{heldID}, "ttlSeconds": 60})
		want(t, r, 201, "")
		if r.body["reservedSeats"] != float64(1) || r.body["expiresAt"] == nil {
			t.Fatalf("reservation %s", r.raw)
		}
		got := e.do("GET", path, owner, nil)
		if got.body["reservedSeats"] != float64(1) {
			t.Fatalf("room %s, want reservedSeats 1", got.raw)
		}
		want(t, e.do("POST", path+"/join", other, nil), 409, "ROOM_FULL")
		want(t, e.do("POST", path+"/join", held, nil), 200, "")
		got = e.do("GET", path, owner, nil)
		if got.body["reservedSeats"] != float64(0) || got.body["playerCount"] != float64(2) {
			t.Fatalf("room %s after the holder joined", got.raw)
		}
	})
}

// A reservation naming a user the room banned is 409 USER_BANNED (their
// join would be 403 BANNED; the caller is not the one banned), naming
// that user, and holds no seat for anyone it named.
func TestReserveSeatsRefusesABannedUser(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		owner, _ := e.guest("owner")
		bad, badID := e.guest("bad")
		_, friendID := e.guest("friend")
		room := e.create(owner, map[string]any{"name": "Held", "mode": "battle", "region": "eu", "maxPlayers": 3})
		path := "/v1/rooms/" + room["id"].(string)
		j := e.do("POST", path+"/join", bad, nil)
		want(t, j, 200, "")
		want(t, e.do("DELETE", fmt.Sprintf("%s/players/%v?ban=true", path, j.body["playerId"]), owner, nil), 204, "")
		r := e.do("POST", path+"/reservations", owner, map[string]any{"userIds": []string{friendID, badID}})
		want(t, r, 409, "USER_BANNED")
		if detail, _ := r.body["detail"].(string); !strings.Contains(detail, badID) || strings.Contains(detail, friendID) {
			t.Fatalf("refusal %s: want its detail to name %s alone", r.raw, badID)
		}
		if got := e.do("GET", path, owner, nil); got.body["reservedSeats"] != float64(0) {
			t.Fatalf("room %s after the refusal, want no seat held", got.raw)
		}
		want(t, e.do("POST", path+"/reservations", owner, map[string]any{"userIds": []string{friendID}}), 201, "")
	})
}
