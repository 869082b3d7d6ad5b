package api_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/realsync/realsync/internal/redistest"
)

func TestRoomLifecycle(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		alice, aliceID := e.guest("alice")
		bob, _ := e.guest("bob")
		carol, _ := e.guest("carol")

		r := e.do("POST", "/v1/rooms", alice, arena)
		want(t, r, 201, "")
		room := r.body["room"].(map[string]any)
		id := room["id"].(string)
		if r.header.Get("Location") != "/v1/rooms/"+id || r.body["playerId"] != float64(1) {
			t.Fatalf("create: %v %s", r.header, r.raw)
		}
		if strings.Contains(r.raw, aliceID) {
			t.Fatal("a userId appears in a room")
		}
		for _, f := range []string{"id", "name", "mode", "region", "visibility", "status", "locked", "maxPlayers",
			"playerCount", "ownerPlayerId", "attributes", "statePolicy", "createdAt", "updatedAt", "version", "players"} {
			if _, ok := room[f]; !ok {
				t.Errorf("room lacks %s", f)
			}
		}

		want(t, e.do("GET", "/v1/rooms/"+id, bob, nil), 200, "")
		j := e.do("POST", "/v1/rooms/"+id+"/join", bob, nil)
		want(t, j, 200, "")
		if j.body["playerId"] != float64(2) {
			t.Fatalf("join: %s", j.raw)
		}
		want(t, e.do("POST", "/v1/rooms/"+id+"/join", bob, nil), 200, "")
		want(t, e.do("POST", "/v1/rooms/"+id+"/join", carol, nil), 409, "ROOM_FULL")
		want(t, e.do("PATCH", "/v1/rooms/"+id, bob, map[string]any{"locked": true}), 403, "NOT_OWNER")
		want(t, e.do("PATCH", "/v1/rooms/"+id, carol, map[string]any{"locked": true}), 403, "NOT_A_MEMBER")
		want(t, e.do("PATCH", "/v1/rooms/"+id, alice, map[string]any{"maxPlayers": 1}), 422, "VALIDATION_FAILED")
		u := e.do("PATCH", "/v1/rooms/"+id, alice, map[string]any{"status": "playing", "maxPlayers": 3})
		want(t, u, 200, "")
		if u.body["status"] != "playing" || u.body["maxPlayers"] != float64(3) {
			t.Fatalf("update: %s", u.raw)
		}
		want(t, e.do("POST", "/v1/rooms/"+id+"/join", carol, nil), 409, "ROOM_NOT_JOINABLE")
		want(t, e.do("PATCH", "/v1/rooms/"+id, alice, map[string]any{"status": "finished"}), 200, "")
		want(t, e.do("PATCH", "/v1/rooms/"+id, alice, map[string]any{"status": "waiting"}), 409, "INVALID_TRANSITION")

		want(t, e.do("DELETE", "/v1/rooms/"+id+"/players/9", alice, nil), 404, "PLAYER_NOT_FOUND")
		want(t, e.do("DELETE", "/v1/rooms/"+id+"/players/x", alice, nil), 404, "PLAYER_NOT_FOUND")
		want(t, e.do("DELETE", "/v1/rooms/"+id+"/players/1", alice, nil), 422, "VALIDATION_FAILED")
		want(t, e.do("DELETE", "/v1/rooms/"+id+"/players/1", bob, nil), 403, "NOT_OWNER")
		want(t, e.do("DELETE", "/v1/rooms/"+id+"/players/2", alice, nil), 204, "")
		want(t, e.do("POST", "/v1/rooms/"+id+"/leave", bob, nil), 403, "NOT_A_MEMBER")
		want(t, e.do("DELETE", "/v1/rooms/"+id, bob, nil), 403, "NOT_A_MEMBER")
		want(t, e.do("POST", "/v1/rooms/"+id+"/leave", alice, nil), 204, "")
		want(t, e.do("GET", "/v1/rooms/"+id, alice, nil), 404, "ROOM_NOT_FOUND")

		other := e.create(alice, arena)["id"].(string)
		want(t, e.do("DELETE", "/v1/rooms/"+other, alice, nil), 204, "")
		want(t, e.do("DELETE", "/v1/rooms/"+other, alice, nil), 404, "ROOM_NOT_FOUND")
	})
}

func TestPrivateRooms(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		alice, _ := e.guest("alice")
		bob, _ := e.guest("bob")
		carol, _ := e.guest("carol")
		room := e.create(alice, map[string]any{"name": "Secret", "mode": "battle", "region": "eu", "visibility": "private"})
		id, code := room["id"].(string), room["inviteCode"].(string)
		want(t, e.do("GET", "/v1/rooms/"+id, bob, nil), 404, "ROOM_NOT_FOUND")
		want(t, e.do("POST", "/v1/rooms/"+id+"/join", bob, nil), 404, "ROOM_NOT_FOUND")
		want(t, e.do("GET", "/v1/rooms/"+id+"/state", bob, nil), 404, "ROOM_NOT_FOUND")
		want(t, e.do("POST", "/v1/rooms/join-by-code", bob, map[string]any{"inviteCode": "ZZZZZZ"}), 404, "ROOM_NOT_FOUND")
		want(t, e.do("POST", "/v1/rooms/join-by-code", bob, map[string]any{"inviteCode": "nope"}), 404, "ROOM_NOT_FOUND")
		want(t, e.do("POST", "/v1/rooms/join-by-code", bob, map[string]any{"inviteCode": ""}), 422, "VALIDATION_FAILED")
		j := e.do("POST", "/v1/rooms/join-by-code", bob, map[string]any{"inviteCode": strings.ToLower(code)})
		want(t, j, 200, "")
		got := e.do("GET", "/v1/rooms/"+id, bob, nil)
		if got.body["inviteCode"] != code {
			t.Fatalf("member does not see the code: %s", got.raw)
		}
		list := e.do("GET", "/v1/rooms", carol, nil)
		if strings.Contains(list.raw, id) {
			t.Fatal("private room listed")
		}
	})
}

func TestRoomState(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		alice, _ := e.guest("alice")
		bob, _ := e.guest("bob")
		carol, _ := e.guest("carol")
		id := e.create(alice, map[string]any{"name": "S", "mode": "m", "region": "r", "state": map[string]any{"board": []int{1, 2}}})["id"].(string)
		e.do("POST", "/v1/rooms/"+id+"/join", bob, nil)
		g := e.do("GET", "/v1/rooms/"+id+"/state", alice, nil)
		want(t, g, 200, "")
		if g.header.Get("ETag") != `"0"` || g.body["stateVersion"] != float64(0) || fmt.Sprint(g.body["state"]) != "map[board:[1 2]]" {
			t.Fatalf("state: %v %s", g.header, g.raw)
		}
		want(t, e.do("GET", "/v1/rooms/"+id+"/state", carol, nil), 403, "NOT_A_MEMBER")

		p := e.do("PATCH", "/v1/rooms/"+id+"/state", alice, `{"score": 10, "board": null}`, "Content-Type", "application/merge-patch+json", "If-Match", `"0"`)
		want(t, p, 200, "")
		if p.header.Get("ETag") != `"1"` || p.body["stateVersion"] != float64(1) || p.body["version"] != float64(3) {
			t.Fatalf("patch: %v %s", p.header, p.raw)
		}
		want(t, e.do("PATCH", "/v1/rooms/"+id+"/state", alice, `{"score": 11}`, "If-Match", `"0"`), 412, "VERSION_MISMATCH")
		want(t, e.do("PATCH", "/v1/rooms/"+id+"/state", alice, `{"score": 11}`, "If-Match", `W/"1"`), 412, "VERSION_MISMATCH")
		// a malformed If-Match is no mismatch: 1 unquoted is the stateVersion
		// (a guide once left the quotes out), abc is no entity tag; sent
		// blank it is no missing header (a write the client meant to guard)
		for _, h := range []string{"1", "abc", `"1", *`, "", "   "} {
			r := e.do("PATCH", "/v1/rooms/"+id+"/state", alice, `{"score": 11}`, "If-Match", h)
			want(t, r, 422, "VALIDATION_FAILED")
			if errs, _ := r.body["errors"].([]any); len(errs) != 1 || errs[0].(map[string]any)["field"] != "If-Match" ||
				!strings.Contains(r.body["detail"].(string), `If-Match: "3"`) {
				t.Fatalf("If-Match %s: %s", h, r.raw)
			}
		}
		want(t, e.do("PATCH", "/v1/rooms/"+id+"/state", bob, `{"score": 11}`), 403, "STATE_KEY_FORBIDDEN")
		want(t, e.do("PATCH", "/v1/rooms/"+id+"/state", bob, `{"player_2_x": {"a": 1}}`, "If-Match", "*"), 200, "")
		want(t, e.do("PATCH", "/v1/rooms/"+id+"/state", carol, `{"player_3_x": 1}`), 403, "NOT_A_MEMBER")
		empty := e.do("PATCH", "/v1/rooms/"+id+"/state", alice, `{}`)
		if empty.status != 200 || empty.body["stateVersion"] != float64(2) {
			t.Fatalf("empty patch: %s", empty.raw)
		}
		want(t, e.do("PATCH", "/v1/rooms/"+id+"/state", alice, `{"bad key": 1}`), 422, "VALIDATION_FAILED")
		big := `{"k": "` + strings.Repeat("x", 9000) + `"}`
		want(t, e.do("PATCH", "/v1/rooms/"+id+"/state", alice, big), 422, "VALIDATION_FAILED")
		want(t, e.do("PATCH", "/v1/rooms/"+id+"/state", alice, `[1]`), 400, "MALFORMED_REQUEST")
		want(t, e.do("PATCH", "/v1/rooms/"+id+"/state", alice, `{"a":1}`, "Content-Type", "text/plain"), 415, "UNSUPPORTED_MEDIA_TYPE")
		// 8 values of ~8 KiB fit in a body but not in the 64 KiB state.
		var parts []string
		for i := range 9 {
			parts = append(parts, fmt.Sprintf(`"k%d": "%s"`, i, strings.Repeat("y", 8000)))
		}
		want(t, e.do("PATCH", "/v1/rooms/"+id+"/state", alice, "{"+strings.Join(parts, ",")+"}"), 413, "PAYLOAD_TOO_LARGE")
		final := e.do("GET", "/v1/rooms/"+id+"/state", alice, nil)
		if final.body["stateVersion"] != float64(2) {
			t.Fatalf("refused patches changed the state: %s", final.raw[:200])
		}
	})
}

func TestAuth(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		sign := func(c jwt.MapClaims, secret string) string {
			s, _ := jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString([]byte(secret))
			return s
		}
		exp := time.Now().Add(time.Hour).Unix()
		tests := []struct {
			name  string
			token string
			want  int
		}{
			{"Missing", "", 401},
			{"Garbage", "abc", 401},
			{"WrongSecret", sign(jwt.MapClaims{"sub": "u1", "exp": exp}, "other"), 401},
			{"Expired", sign(jwt.MapClaims{"sub": "u1", "exp": time.Now().Add(-time.Minute).Unix()}, "test-secret"), 401},
			{"NoExpiry", sign(jwt.MapClaims{"sub": "u1"}, "test-secret"), 401},
			{"NoSubject", sign(jwt.MapClaims{"exp": exp}, "test-secret"), 401},
			{"ControlInSubject", sign(jwt.MapClaims{"sub": "u\t1", "exp": exp}, "test-secret"), 401},
			{"NoneAlgorithm", "eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0.eyJzdWIiOiJ1MSJ9.", 401},
			{"Valid", sign(jwt.MapClaims{"sub": "u1", "name": "zed", "exp": exp}, "test-secret"), 200},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				r := e.do("GET", "/v1/rooms", tc.token, nil)
				if r.status != tc.want {
					t.Fatalf("status %d, want %d: %s", r.status, tc.want, r.raw)
				}
				if tc.want == 401 && (r.code() != "UNAUTHENTICATED" || !strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Bearer")) {
					t.Fatalf("401 without code or challenge: %v %s", r.header, r.raw)
				}
			})
		}
		t.Run("GuestDefaultsAndLimits", func(t *testing.T) {
			r := e.do("POST", "/v1/auth/guest", "", nil)
			if r.status != 201 || !strings.HasPrefix(r.body["name"].(string), "guest-") || r.body["expiresAt"] == nil {
				t.Fatalf("guest without body: %s", r.raw)
			}
			want(t, e.do("POST", "/v1/auth/guest", "", map[string]any{"name": strings.Repeat("n", 33)}), 422, "VALIDATION_FAILED")
			want(t, e.do("POST", "/v1/auth/guest", "", map[string]any{"name": ""}), 422, "VALIDATION_FAILED")
		})
	})
}

func TestGuestAuthDisabled(t *testing.T) {
	e := newEnv(t, redistest.Backend{Name: "embedded"}, false)
	want(t, e.do("POST", "/v1/auth/guest", "", map[string]any{"name": "a"}), 403, "GUEST_AUTH_DISABLED")
}
