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

func TestQuickJoinAttributeFiltersOverHTTP(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		alice, _ := e.guest("alice")
		bob, _ := e.guest("bob")
		path := "/v1/matchmaking/quick-join"
		for _, c := range []struct {
			name  string
			attrs any
			field string
		}{
			{"bad key", map[string]any{"ma p": "x"}, "attributes.ma p"},
			{"bool value", map[string]any{"ranked": true}, "attributes.ranked"},
			{"empty bounds", map[string]any{"rank": map[string]any{}}, "attributes.rank"},
			{"bad operator", map[string]any{"rank": map[string]any{"between": 1}}, "attributes.rank"},
			{"string bound", map[string]any{"rank": map[string]any{"gte": "a"}}, "attributes.rank"},
		} {
			t.Run(c.name, func(t *testing.T) {
				r := e.do("POST", path, alice, map[string]any{"mode": "m", "attributes": c.attrs})
				want(t, r, 422, "VALIDATION_FAILED")
				if !strings.Contains(r.raw, `"field":"`+c.field+`"`) {
					t.Errorf("errors do not name %s: %s", c.field, r.raw)
				}
			})
		}
		body := map[string]any{"mode": "m", "regions": []string{"eu"}, "attributes": map[string]any{"map": "dust2", "rank": map[string]any{"gte": 0}},
			"create": map[string]any{"name": "x", "attributes": map[string]any{"rank": 1500}}}
		r := e.do("POST", path, alice, body)
		want(t, r, 201, "")
		attrs := r.body["room"].(map[string]any)["attributes"].(map[string]any)
		if attrs["map"] != "dust2" || attrs["rank"] != 1500.0 {
			t.Errorf("created room's attributes %v", attrs)
		}
		r = e.do("POST", path, bob, body)
		want(t, r, 200, "")
		if list := e.do("GET", "/v1/rooms?attr.map=dust2&attr.rank.gte=1000&mode=m", bob, nil); len(list.body["rooms"].([]any)) != 1 {
			t.Errorf("listing by attributes: %s", list.raw)
		}
		want(t, e.do("GET", "/v1/rooms?attr.rank.gte=high", bob, nil), 422, "VALIDATION_FAILED")
	})
}
