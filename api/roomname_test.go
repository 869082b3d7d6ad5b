package api_test

import (
	"fmt"
	"testing"
)

// A room's name is stored with its white space folded, as a guest's name
// is, however it is set (create, quick-join's create, update): the
// answer, a read and the listing show the folded name. One that folds to
// nothing is refused as an empty one is, the room keeping its name.
func TestRoomNamesStoredFolded(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		alice, _ := e.guest("alice")
		bob, _ := e.guest("bob")
		name := func(r resp) any {
			room, _ := r.body["room"].(map[string]any)
			if room == nil {
				return r.body["name"] // a room's own answer
			}
			return room["name"]
		}
		created := e.do("POST", "/v1/rooms", alice, map[string]any{"name": "  Epic   Battle\u00a0\u2003Arena \ufeff", "mode": "fold", "region": "eu"})
		want(t, created, 201, "")
		id := created.body["room"].(map[string]any)["id"].(string)
		if got := name(created); got != "Epic Battle Arena" {
			t.Fatalf("create answered the name %q", got)
		}
		if got := name(e.do("GET", "/v1/rooms/"+id, alice, nil)); got != "Epic Battle Arena" {
			t.Fatalf("created room read back named %q", got)
		}
		updated := e.do("PATCH", "/v1/rooms/"+id, alice, `{"name":" x   y "}`)
		want(t, updated, 200, "")
		if got := name(updated); got != "x y" {
			t.Fatalf("update answered the name %q", got)
		}
		if got := name(e.do("GET", "/v1/rooms/"+id, alice, nil)); got != "x y" {
			t.Fatalf("updated room read back named %q", got)
		}
		for _, blank := range []string{"", " \ufeff\u3000 "} {
			r := e.do("PATCH", "/v1/rooms/"+id, alice, fmt.Sprintf(`{"name":%q}`, blank))
			want(t, r, 422, "VALIDATION_FAILED")
			if fmt.Sprint(r.body["errors"]) != "[map[field:name message:must be 1..64 characters]]" {
				t.Fatalf("name %q: errors %v, want those of an empty name", blank, r.body["errors"])
			}
		}
		if got := name(e.do("GET", "/v1/rooms/"+id, alice, nil)); got != "x y" {
			t.Fatalf("refused names renamed the room %q", got)
		}
		quick := e.do("POST", "/v1/matchmaking/quick-join", bob, map[string]any{"mode": "fold2", "regions": []string{"eu"},
			"create": map[string]any{"name": " Quick\u2009 Room "}})
		want(t, quick, 201, "")
		if got := name(quick); got != "Quick Room" {
			t.Fatalf("quick-join created the name %q", got)
		}
		list := e.do("GET", "/v1/rooms?mode=fold", alice, nil)
		want(t, list, 200, "")
		if rooms, _ := list.body["rooms"].([]any); len(rooms) != 1 || rooms[0].(map[string]any)["name"] != "x y" {
			t.Fatalf("listing: %s", list.raw)
		}
	})
}
