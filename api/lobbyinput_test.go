package api_test

import (
	"strings"
	"testing"

	"github.com/realsync/realsync/rooms"
)

// GET /v1/rooms' joinable= and limit= given empty are 422 saying so (they
// said "has the wrong form"), while status=, mode=, region=, sort= and
// cursor= given empty are taken as absent, as they always were (a client
// sending "" for "any" is served); an attribute filter's empty value is a
// filter on the empty string; a filter value that is not UTF-8 is 422 (a
// tester's find: it answered an empty page).
func TestEmptyAndInvalidQueryValuesOverHTTP(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		alice, _ := e.guest("alice")
		want(t, e.do("POST", "/v1/rooms", alice, map[string]any{"name": "r", "mode": "m", "region": "eu",
			"attributes": map[string]any{"map": ""}}), 201, "")
		for _, c := range []struct {
			path  string
			field string
		}{
			{"/v1/rooms?joinable=", "joinable"},
			{"/v1/rooms?limit=", "limit"},
			{"/v1/rooms?mode=m&attr.map=%FF%FE", "attr.map"},
		} {
			t.Run(c.path, func(t *testing.T) {
				// refused: a feed that opens is closed, not waited for
				r := e.refused(c.path, 422, "VALIDATION_FAILED", "Authorization", "Bearer "+alice)
				if !strings.Contains(r.raw, `"field":"`+c.field+`"`) {
					t.Errorf("errors do not name %s: %s", c.field, r.raw)
				}
				if c.field != "attr.map" && !strings.Contains(r.raw, "must not be empty") {
					t.Errorf("the error does not say the value is empty: %s", r.raw)
				}
			})
		}
		r := e.do("GET", "/v1/rooms?mode=m&attr.map=", alice, nil)
		want(t, r, 200, "")
		if n := len(r.body["rooms"].([]any)); n != 1 {
			t.Errorf("attr.map= listed %d rooms, want the one whose map is empty: %s", n, r.raw)
		}
		// the string parameters given empty are absent, as they always
		// were (an SDK's "" for "any"): the room listed as without them
		r = e.do("GET", "/v1/rooms?status=&mode=&region=&sort=&cursor=", alice, nil)
		want(t, r, 200, "")
		if n := len(r.body["rooms"].([]any)); n != 1 {
			t.Errorf("empty string parameters listed %d rooms, want the one room as without them: %s", n, r.raw)
		}
	})
}

// A room attribute's string value may hold no character a room's name may
// not (NUL, CR/LF, U+202E ...): 422 naming the attribute at create,
// update and a quick-join's create, and nothing changes (a tester's find:
// all were stored and shown in lobbies).
func TestAttributeValuesRefuseNameControlOverHTTP(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		alice, _ := e.guest("alice")
		r := e.do("POST", "/v1/rooms", alice, map[string]any{"name": "r", "mode": "m", "region": "eu",
			"attributes": map[string]any{"map": "dust2"}})
		want(t, r, 201, "")
		id := r.body["room"].(map[string]any)["id"].(string)
		for _, v := range []string{"a\x00b", "a\r\nb", "\u202Eevil"} {
			attrs := map[string]any{"map": v}
			for _, c := range []struct {
				method, path string
				body         map[string]any
				field        string
			}{
				{"POST", "/v1/rooms", map[string]any{"name": "r", "mode": "m", "region": "eu", "attributes": attrs}, "attributes.map"},
				{"PATCH", "/v1/rooms/" + id, map[string]any{"attributes": attrs}, "attributes.map"},
				{"POST", "/v1/matchmaking/quick-join", map[string]any{"mode": "q", "regions": []string{"eu"},
					"create": map[string]any{"name": "q", "attributes": attrs}}, "create.attributes.map"},
				{"POST", "/v1/matchmaking/quick-join", map[string]any{"mode": "q", "regions": []string{"eu"},
					"attributes": attrs, "create": map[string]any{"name": "q"}}, "attributes.map"},
			} {
				r := e.do(c.method, c.path, alice, c.body)
				want(t, r, 422, "VALIDATION_FAILED")
				if !strings.Contains(r.raw, `"field":"`+c.field+`"`) || !strings.Contains(r.raw, "bidirectional formatting") {
					t.Errorf("%s %s with %q: errors do not name %s as a name's rule: %s", c.method, c.path, v, c.field, r.raw)
				}
			}
		}
		r = e.do("GET", "/v1/rooms/"+id, alice, nil)
		if attrs := r.body["attributes"].(map[string]any); attrs["map"] != "dust2" {
			t.Errorf("the refused update changed the room: %v", attrs)
		}
		if r := e.do("GET", "/v1/rooms?mode=q", alice, nil); len(r.body["rooms"].([]any)) != 0 {
			t.Errorf("a refused quick-join created a room: %s", r.raw)
		}
	})
}

// What a client sent and an error repeats (a field named by an unknown key,
// an attribute key in a query) shows its control and bidirectional
// formatting characters as \uXXXX in the problem's detail and field
// errors: a console or a game's dialog showing them shows what came, not
// text reordered by U+202E or split by a line break.
func TestProblemsShowClientTextEscaped(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		alice, _ := e.guest("alice")
		for _, c := range []struct {
			name, method, path string
			body               any
			field              string
		}{
			{"unknown member", "POST", "/v1/rooms", map[string]any{"name": "r", "x\u202Ey": 1}, `x\u202Ey`},
			{"attribute key", "POST", "/v1/rooms", map[string]any{"name": "r", "mode": "m", "region": "eu", "attributes": map[string]any{"a\nb": 1}}, `attributes.a\u000Ab`},
			{"query attribute key", "GET", "/v1/rooms?attr.a%E2%80%AEb=1", nil, `attr.a\u202Eb`},
		} {
			r := e.do(c.method, c.path, alice, c.body)
			want(t, r, 422, "VALIDATION_FAILED")
			errs, _ := r.body["errors"].([]any)
			if len(errs) != 1 || errs[0].(map[string]any)["field"] != c.field {
				t.Errorf("%s: errors %v, want one naming %s", c.name, r.body["errors"], c.field)
			}
			if detail, _ := r.body["detail"].(string); !strings.Contains(detail, c.field) || strings.ContainsFunc(detail, rooms.NameControl) {
				t.Errorf("%s: detail %q does not name %s escaped", c.name, detail, c.field)
			}
		}
	})
}
