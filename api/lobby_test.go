package api_test

import (
	"testing"
)

func TestMyRoomsAndStats(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		alice, _ := e.guest("alice")
		bob, _ := e.guest("bob")
		a := e.create(alice, map[string]any{"name": "a", "mode": "duel", "region": "eu"})["id"].(string)
		b := e.create(alice, map[string]any{"name": "b", "mode": "duel", "region": "us", "visibility": "private"})
		c := e.create(bob, map[string]any{"name": "c", "mode": "ctf", "region": "eu"})["id"].(string)
		e.do("POST", "/v1/rooms/"+c+"/join", alice, nil)
		e.do("PATCH", "/v1/rooms/"+c, bob, map[string]any{"status": "playing"})
		e.do("POST", "/v1/rooms/"+a+"/join", bob, nil)

		r := e.do("GET", "/v1/me/rooms", alice, nil)
		want(t, r, 200, "")
		rs := r.body["rooms"].([]any)
		if len(rs) != 3 {
			t.Fatalf("alice's rooms: %v", rs)
		}
		newest := rs[0].(map[string]any)
		if newest["id"] != c || newest["playerId"] != 2.0 || newest["players"] != nil {
			t.Errorf("newest of alice's rooms: %v", newest)
		}
		if rs[1].(map[string]any)["inviteCode"] != b["inviteCode"] || b["inviteCode"] == nil {
			t.Errorf("private room without its code: %v", rs[1])
		}

		r = e.do("GET", "/v1/lobby/stats", bob, nil)
		want(t, r, 200, "")
		rooms := r.body["rooms"].(map[string]any)
		modes := r.body["modes"].(map[string]any)
		regions := r.body["regions"].(map[string]any)
		if rooms["waiting"] != 2.0 || rooms["playing"] != 1.0 || rooms["finished"] != 0.0 || r.body["players"] != 5.0 {
			t.Errorf("stats %v", r.body)
		}
		if modes["duel"].(map[string]any)["waiting"] != 2.0 || modes["ctf"].(map[string]any)["playing"] != 1.0 ||
			regions["eu"].(map[string]any)["waiting"] != 1.0 || regions["eu"].(map[string]any)["playing"] != 1.0 {
			t.Errorf("stats by mode %v, by region %v", modes, regions)
		}
		e.do("DELETE", "/v1/rooms/"+a, alice, nil)
		r = e.do("GET", "/v1/lobby/stats", bob, nil)
		if r.body["rooms"].(map[string]any)["waiting"] != 1.0 || r.body["players"] != 3.0 {
			t.Errorf("stats after a close: %v", r.body)
		}
	})
}

func TestLobbyEventsOverHTTP(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		alice, _ := e.guest("alice")
		want(t, e.do("GET", "/v1/lobby/events?mode=Not+A+Slug", alice, nil), 422, "VALIDATION_FAILED")
		want(t, e.do("GET", "/v1/lobby/events", "", nil), 401, "UNAUTHENTICATED")
		s := e.open("/v1/lobby/events?mode=m&token=" + e.streamToken(alice, "/v1/lobby/events"))
		if f := s.next(); f.event != "rooms" || len(f.data["rooms"].([]any)) != 0 {
			t.Fatalf("first event %+v", f)
		}
		id := e.create(alice, map[string]any{"name": "r", "mode": "m", "region": "r"})["id"].(string)
		f := s.next()
		if room, _ := f.data["room"].(map[string]any); f.event != "room_added" || room["id"] != id || room["players"] != nil || f.data["version"] != 1.0 {
			t.Fatalf("after create: %+v", f)
		}
		e.do("DELETE", "/v1/rooms/"+id, alice, nil)
		if f := s.next(); f.event != "room_removed" || f.data["room"].(map[string]any)["id"] != id {
			t.Fatalf("after close: %+v", f)
		}
	})
}
