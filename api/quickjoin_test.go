package api_test

import (
	"strings"
	"testing"
)

func TestQuickJoinOverHTTP(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		alice, _ := e.guest("alice")
		bob, _ := e.guest("bob")
		path := "/v1/matchmaking/quick-join"
		bad := []struct {
			name  string
			body  any
			field string
		}{
			{"no mode", map[string]any{"regions": []string{"eu"}}, "mode"},
			{"bad mode", map[string]any{"mode": "Battle Royale"}, "mode"},
			{"empty regions", map[string]any{"mode": "m", "regions": []string{}}, "regions"},
			{"repeated region", map[string]any{"mode": "m", "regions": []string{"eu", "eu"}}, "regions"},
			{"bad region", map[string]any{"mode": "m", "regions": []string{"EU"}}, "regions.0"},
			{"create without regions", map[string]any{"mode": "m", "create": map[string]any{"name": "x"}}, "regions"},
			{"create without name", map[string]any{"mode": "m", "regions": []string{"eu"}, "create": map[string]any{}}, "create.name"},
			{"create too big", map[string]any{"mode": "m", "regions": []string{"eu"}, "create": map[string]any{"name": "x", "maxPlayers": 101}}, "create.maxPlayers"},
			{"unknown field", map[string]any{"mode": "m", "region": "eu"}, "region"},
		}
		for _, c := range bad {
			t.Run(c.name, func(t *testing.T) {
				r := e.do("POST", path, alice, c.body)
				want(t, r, 422, "VALIDATION_FAILED")
				if !strings.Contains(r.raw, `"field":"`+c.field+`"`) {
					t.Errorf("errors do not name %s: %s", c.field, r.raw)
				}
			})
		}
		want(t, e.do("POST", path, alice, map[string]any{"mode": "m", "regions": []string{"eu"}}), 404, "NO_MATCH")
		r := e.do("POST", path, alice, map[string]any{"mode": "m", "regions": []string{"eu"},
			"create": map[string]any{"name": "Quick", "maxPlayers": 2}})
		want(t, r, 201, "")
		room := r.body["room"].(map[string]any)
		if r.body["created"] != true || r.body["playerId"] != 1.0 || room["region"] != "eu" || room["maxPlayers"] != 2.0 || r.header.Get("Location") != "/v1/rooms/"+room["id"].(string) {
			t.Fatalf("created %v %v", r.body, r.header)
		}
		r = e.do("POST", path, bob, map[string]any{"mode": "m"})
		want(t, r, 200, "")
		if r.body["created"] != false || r.body["playerId"] != 2.0 || r.body["room"].(map[string]any)["id"] != room["id"] {
			t.Fatalf("joined %v", r.body)
		}
		// The room is full now: the next caller gets a new one.
		carol, _ := e.guest("carol")
		r = e.do("POST", path, carol, map[string]any{"mode": "m", "regions": []string{"eu"}, "create": map[string]any{"name": "Quick"}})
		want(t, r, 201, "")
	})
}
