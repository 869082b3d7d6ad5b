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

// A quick-join's create may not contradict its own filters (a tester's
// find: create's attributes won over an equality filter, so the room
// created failed the filter and every caller made a room of its own): a
// contradiction, or a range-filtered key missing or out of range, is 422
// naming create.attributes.<key>, and nothing is created; an equal value
// is taken, a missing equality key filled in, and the next caller with
// the same body joins the room.
func TestQuickJoinCreateMustMatchItsFiltersOverHTTP(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		alice, _ := e.guest("alice")
		bob, _ := e.guest("bob")
		path := "/v1/matchmaking/quick-join"
		body := func(filters, create map[string]any) map[string]any {
			c := map[string]any{"name": "a", "maxPlayers": 4}
			if create != nil {
				c["attributes"] = create
			}
			return map[string]any{"mode": "qd", "regions": []string{"eu"}, "attributes": filters, "create": c}
		}
		for _, c := range []struct {
			name            string
			filters, create map[string]any
			field           string
		}{
			{"contradicts equality", map[string]any{"map": "x"}, map[string]any{"map": "y"}, "create.attributes.map"},
			{"range key missing", map[string]any{"rank": map[string]any{"gte": 10}}, map[string]any{"map": "y"}, "create.attributes.rank"},
			{"below range", map[string]any{"rank": map[string]any{"gte": 10}}, map[string]any{"rank": 3}, "create.attributes.rank"},
		} {
			t.Run(c.name, func(t *testing.T) {
				r := e.do("POST", path, alice, body(c.filters, c.create))
				want(t, r, 422, "VALIDATION_FAILED")
				if !strings.Contains(r.raw, `"field":"`+c.field+`"`) {
					t.Errorf("errors do not name %s: %s", c.field, r.raw)
				}
			})
		}
		if r := e.do("GET", "/v1/rooms?mode=qd", alice, nil); len(r.body["rooms"].([]any)) != 0 {
			t.Fatalf("a refused quick-join created a room: %s", r.raw)
		}
		same := body(map[string]any{"map": "x", "rank": map[string]any{"gte": 10}}, map[string]any{"map": "x", "rank": 12})
		r := e.do("POST", path, alice, same)
		want(t, r, 201, "")
		first := r.body["room"].(map[string]any)
		if attrs := first["attributes"].(map[string]any); attrs["map"] != "x" || attrs["rank"] != 12.0 {
			t.Fatalf("created room's attributes %v", attrs)
		}
		r = e.do("POST", path, bob, same)
		want(t, r, 200, "")
		if r.body["room"].(map[string]any)["id"] != first["id"] {
			t.Fatalf("the second caller got another room: %s", r.raw)
		}
		carol, _ := e.guest("carol")
		r = e.do("POST", path, carol, body(map[string]any{"map": "z"}, nil))
		want(t, r, 201, "")
		if attrs := r.body["room"].(map[string]any)["attributes"].(map[string]any); attrs["map"] != "z" {
			t.Fatalf("the filtered attribute was not filled in: %v", attrs)
		}
	})
}

// Two lower (gt, gte) or two upper (lt, lte) bounds on one attribute, or
// a bound with an equality, are 422 naming both, in a listing and a
// quick-join (a tester's find: the listing dropped one, quick-join
// applied them in Go's map order); one bound of each side still filters.
func TestConflictingBoundsOverHTTP(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		alice, _ := e.guest("alice")
		for _, rank := range []int{1, 3, 5, 7} {
			want(t, e.do("POST", "/v1/rooms", alice, map[string]any{"name": "r", "mode": "rk", "region": "eu",
				"attributes": map[string]any{"rank": rank}}), 201, "")
		}
		for _, c := range []struct {
			query  string
			fields []string
		}{
			{"attr.rank.gt=5&attr.rank.gte=1", []string{"attr.rank.gt", "attr.rank.gte"}},
			{"attr.rank.lt=3&attr.rank.lte=7", []string{"attr.rank.lt", "attr.rank.lte"}},
			{"attr.rank=3&attr.rank.gte=5", []string{"attr.rank", "attr.rank.gte"}},
		} {
			t.Run(c.query, func(t *testing.T) {
				r := e.do("GET", "/v1/rooms?mode=rk&"+c.query, alice, nil)
				want(t, r, 422, "VALIDATION_FAILED")
				for _, f := range c.fields {
					if !strings.Contains(r.raw, `"field":"`+f+`"`) {
						t.Errorf("errors do not name %s: %s", f, r.raw)
					}
				}
			})
		}
		r := e.do("GET", "/v1/rooms?mode=rk&attr.rank.gt=1&attr.rank.lte=5", alice, nil)
		want(t, r, 200, "")
		if n := len(r.body["rooms"].([]any)); n != 2 {
			t.Errorf("gt=1&lte=5 listed %d rooms, want 2 (3 and 5): %s", n, r.raw)
		}
		bob, _ := e.guest("bob")
		r = e.do("POST", "/v1/matchmaking/quick-join", bob, map[string]any{"mode": "rk",
			"attributes": map[string]any{"rank": map[string]any{"gte": 1, "gt": 5}}})
		want(t, r, 422, "VALIDATION_FAILED")
		for _, f := range []string{"attributes.rank.gt", "attributes.rank.gte"} {
			if !strings.Contains(r.raw, `"field":"`+f+`"`) {
				t.Errorf("errors do not name %s: %s", f, r.raw)
			}
		}
	})
}
