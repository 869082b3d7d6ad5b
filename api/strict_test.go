package api_test

import (
	"strings"
	"testing"

	"github.com/realsync/realsync/api"
	"github.com/realsync/realsync/lobby"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/store"
)

// Bodies, filters, ids and cursors are read strictly: one spelling per
// value, no repeated keys, no non-finite numbers; each refusal is precise.
func TestStrictInput(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		alice, _ := e.guest("alice")
		bob, _ := e.guest("bob")
		room := e.create(alice, map[string]any{"name": "Arena", "mode": "battle", "region": "eu", "maxPlayers": 4,
			"attributes": map[string]any{"rank": 1500}})
		id := room["id"].(string)
		want(t, e.do("POST", "/v1/rooms/"+id+"/join", bob, nil), 200, "")
		before := e.do("GET", "/v1/rooms/"+id, alice, nil).raw
		tests := []struct {
			name         string
			method, path string
			body         any
			hdr          []string
			status       int
			code         string
			field        string // first errors[].field, when 422
			detail       string // in the detail, when set
		}{
			{"CaseFoldedName", "PATCH", "/v1/rooms/" + id, `{"NAME":"x"}`, nil, 422, "VALIDATION_FAILED", "NAME", ""},
			{"CaseFoldedNested", "POST", "/v1/matchmaking/quick-join", `{"mode":"battle","regions":["eu"],"create":{"Name":"x"}}`, nil, 422, "VALIDATION_FAILED", "create.Name", ""},
			{"DuplicateKey", "PATCH", "/v1/rooms/" + id, `{"name":"a","name":"b"}`, nil, 400, "MALFORMED_REQUEST", "", `"name"`},
			{"DuplicateAttr", "PATCH", "/v1/rooms/" + id, `{"attributes":{"a":1,"a":2}}`, nil, 400, "MALFORMED_REQUEST", "", `"a"`},
			{"DuplicateInStateValue", "PATCH", "/v1/rooms/" + id + "/state", `{"k":{"x":1,"x":2}}`, []string{"Content-Type", "application/merge-patch+json"}, 400, "MALFORMED_REQUEST", "", `"x"`},
			{"DuplicateStateKey", "PATCH", "/v1/rooms/" + id + "/state", `{"k":1,"k":null}`, []string{"Content-Type", "application/merge-patch+json"}, 400, "MALFORMED_REQUEST", "", `"k"`},
			{"DuplicateInMessageData", "POST", "/v1/rooms/" + id + "/messages", `{"type":"chat","data":{"t":"a","t":"b"}}`, nil, 400, "MALFORMED_REQUEST", "", `"t"`},
			{"PlayerIDNotAnInteger", "POST", "/v1/rooms/" + id + "/messages", `{"type":"chat","data":1,"to":[2.0]}`, nil, 400, "MALFORMED_REQUEST", "", `"to.0" must be an integer written in digits`},
			{"InvalidUTF8", "PATCH", "/v1/rooms/" + id, "{\"name\":\"a\xffb\"}", nil, 400, "MALFORMED_REQUEST", "", ""},
			{"AttrOverflow", "PATCH", "/v1/rooms/" + id, `{"attributes":{"rank":1e400}}`, nil, 422, "VALIDATION_FAILED", "attributes.rank", ""},
			{"CreateAttrOverflow", "POST", "/v1/rooms", `{"name":"a","mode":"battle","region":"eu","attributes":{"r":-1e999}}`, nil, 422, "VALIDATION_FAILED", "attributes.r", ""},
			{"QuickJoinFilterOverflow", "POST", "/v1/matchmaking/quick-join", `{"mode":"battle","attributes":{"rank":1e400}}`, nil, 422, "VALIDATION_FAILED", "attributes.rank", ""},
			{"QuickJoinBoundOverflow", "POST", "/v1/matchmaking/quick-join", `{"mode":"battle","attributes":{"rank":{"gte":1e400}}}`, nil, 422, "VALIDATION_FAILED", "attributes.rank", ""},
			{"FilterNaN", "GET", "/v1/rooms?attr.rank.gte=NaN", nil, nil, 422, "VALIDATION_FAILED", "attr.rank.gte", ""},
			{"FilterInf", "GET", "/v1/rooms?attr.rank.lte=Inf", nil, nil, 422, "VALIDATION_FAILED", "attr.rank.lte", ""},
			{"FilterOverflow", "GET", "/v1/rooms?attr.rank.lt=1e400", nil, nil, 422, "VALIDATION_FAILED", "attr.rank.lt", ""},
			{"FilterHex", "GET", "/v1/rooms?attr.rank.gt=0x10", nil, nil, 422, "VALIDATION_FAILED", "attr.rank.gt", ""},
			{"FilterTwice", "GET", "/v1/rooms?attr.rank=1&attr.rank=2", nil, nil, 422, "VALIDATION_FAILED", "attr.rank", "given more than once"},
			{"FilterBoundTwice", "GET", "/v1/rooms?attr.rank.gte=3&attr.rank.gte=1", nil, nil, 422, "VALIDATION_FAILED", "attr.rank.gte", "given more than once"},
			{"KickLeadingZero", "DELETE", "/v1/rooms/" + id + "/players/02", nil, nil, 404, "PLAYER_NOT_FOUND", "", ""},
			{"KickPlus", "DELETE", "/v1/rooms/" + id + "/players/+2", nil, nil, 404, "PLAYER_NOT_FOUND", "", ""},
			{"KickTooLong", "DELETE", "/v1/rooms/" + id + "/players/00000000002", nil, nil, 404, "PLAYER_NOT_FOUND", "", ""},
			{"MessagesBeforeLeadingZero", "GET", "/v1/rooms/" + id + "/messages?before=07", nil, nil, 422, "VALIDATION_FAILED", "before", ""},
			{"MessagesLimitLeadingZero", "GET", "/v1/rooms/" + id + "/messages?limit=010", nil, nil, 422, "VALIDATION_FAILED", "limit", ""},
			{"RoomsLimitLeadingZero", "GET", "/v1/rooms?limit=020", nil, nil, 422, "VALIDATION_FAILED", "limit", ""},
			// null is no field's value: it would read as the field left out
			{"NullName", "PATCH", "/v1/rooms/" + id, `{"name":null}`, nil, 400, "MALFORMED_REQUEST", "", `"name" must be a string, not null`},
			{"NullAttributes", "PATCH", "/v1/rooms/" + id, `{"attributes":null}`, []string{"Content-Type", "application/merge-patch+json"}, 400, "MALFORMED_REQUEST", "", `"attributes" must be an object, not null`},
			{"NullAfterAGoodField", "PATCH", "/v1/rooms/" + id, `{"locked":true,"maxPlayers":null}`, nil, 400, "MALFORMED_REQUEST", "", `"maxPlayers" must be an integer, not null`},
			{"NullOnCreate", "POST", "/v1/rooms", `{"name":"a","mode":"battle","region":"eu","visibility":null}`, nil, 400, "MALFORMED_REQUEST", "", `"visibility" must be a string, not null`},
			{"NullState", "POST", "/v1/rooms", `{"name":"a","mode":"battle","region":"eu","state":null}`, nil, 400, "MALFORMED_REQUEST", "", `"state" must be an object, not null`},
			{"NullNested", "POST", "/v1/matchmaking/quick-join", `{"mode":"battle","regions":["eu"],"create":{"name":"x","maxPlayers":null}}`, nil, 400, "MALFORMED_REQUEST", "", `"create.maxPlayers" must be an integer, not null`},
			{"NullRegions", "POST", "/v1/matchmaking/quick-join", `{"mode":"battle","regions":null}`, nil, 400, "MALFORMED_REQUEST", "", `"regions" must be an array, not null`},
			{"NullRecipients", "POST", "/v1/rooms/" + id + "/messages", `{"type":"chat","data":1,"to":null}`, nil, 400, "MALFORMED_REQUEST", "", `"to" must be an array, not null`},
			{"NullMessageData", "POST", "/v1/rooms/" + id + "/messages", `{"type":"chat","data":null}`, nil, 422, "VALIDATION_FAILED", "data", ""},
			{"NullAttributeValue", "PATCH", "/v1/rooms/" + id, `{"attributes":{"rank":null}}`, nil, 422, "VALIDATION_FAILED", "attributes.rank", ""},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				r := e.do(tc.method, tc.path, alice, tc.body, tc.hdr...)
				want(t, r, tc.status, tc.code)
				if tc.field != "" {
					errs, _ := r.body["errors"].([]any)
					if len(errs) == 0 || errs[0].(map[string]any)["field"] != tc.field {
						t.Fatalf("errors %v, want field %s", r.body["errors"], tc.field)
					}
				}
				if d, _ := r.body["detail"].(string); !strings.Contains(d, tc.detail) {
					t.Fatalf("detail %q does not say %s", d, tc.detail)
				}
			})
		}
		if after := e.do("GET", "/v1/rooms/"+id, alice, nil).raw; after != before {
			t.Fatalf("refused input changed the room:\n%s\n%s", before, after)
		}
		// null keeps its meaning in a merge patch of the state: the key
		// is deleted
		want(t, e.do("PATCH", "/v1/rooms/"+id+"/state", alice, `{"gone":null}`, "Content-Type", "application/merge-patch+json"), 200, "")
		// The canonical spellings work.
		want(t, e.do("GET", "/v1/rooms?attr.rank.gte=1400&attr.rank.lte=1.6e3", alice, nil), 200, "")
		want(t, e.do("GET", "/v1/rooms/"+id+"/messages?before=7&limit=10", alice, nil), 200, "")
		want(t, e.do("DELETE", "/v1/rooms/"+id+"/players/2", alice, nil), 204, "")
	})
}

// With REALSYNC_MODES and REALSYNC_REGIONS set, every route taking a mode
// or region refuses others with 422 naming the field and the allowed names.
func TestAllowedNamesOverHTTP(t *testing.T) {
	names := rooms.Names{Modes: []string{"battle"}, Regions: []string{"eu", "us-west"}}
	e := newEnv(t, redistestEmbedded, true, func(c *api.Config, st *store.Store, _ string) {
		c.Rooms = rooms.New(rooms.Config{Store: st, Names: names})
		c.Lobby = lobby.New(lobby.Config{Index: st.Listing(), Names: names})
	})
	alice, _ := e.guest("alice")
	cases := []struct {
		name, method, path string
		body               any
		field, message     string
	}{
		{"Create", "POST", "/v1/rooms", `{"name":"a","mode":"race","region":"eu"}`, "mode", "must be one of: battle"},
		{"CreateRegion", "POST", "/v1/rooms", `{"name":"a","mode":"battle","region":"mars"}`, "region", "must be one of: eu, us-west"},
		{"QuickJoin", "POST", "/v1/matchmaking/quick-join", `{"mode":"race"}`, "mode", "must be one of: battle"},
		{"QuickJoinRegion", "POST", "/v1/matchmaking/quick-join", `{"mode":"battle","regions":["eu","mars"]}`, "regions.1", "must be one of: eu, us-west"},
		{"List", "GET", "/v1/rooms?mode=race", nil, "mode", "must be one of: battle"},
		{"ListRegion", "GET", "/v1/rooms?region=mars", nil, "region", "must be one of: eu, us-west"},
		{"LobbyFeed", "GET", "/v1/lobby/events?region=mars", nil, "region", "must be one of: eu, us-west"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(tc.method, tc.path, alice, tc.body)
			want(t, r, 422, "VALIDATION_FAILED")
			errs, _ := r.body["errors"].([]any)
			if len(errs) != 1 || errs[0].(map[string]any)["field"] != tc.field || errs[0].(map[string]any)["message"] != tc.message {
				t.Fatalf("errors %v, want %s %s", r.body["errors"], tc.field, tc.message)
			}
		})
	}
	want(t, e.do("POST", "/v1/rooms", alice, `{"name":"a","mode":"battle","region":"us-west"}`), 201, "")
	want(t, e.do("GET", "/v1/rooms?mode=battle&region=eu", alice, nil), 200, "")
}

// GET /v1/me/rooms is paged: limit rooms a page, nextCursor to the next,
// null on the last; a bad limit or cursor is 422 naming it.
func TestMyRoomsPaged(t *testing.T) {
	e := newEnv(t, redistestEmbedded, true)
	alice, _ := e.guest("alice")
	var ids []string
	for range 5 {
		ids = append([]string{e.create(alice, arena)["id"].(string)}, ids...)
	}
	var got []string
	path := "/v1/me/rooms?limit=2"
	for pages := 0; pages < 5; pages++ {
		r := e.do("GET", path, alice, nil)
		want(t, r, 200, "")
		list := r.body["rooms"].([]any)
		if len(list) > 2 {
			t.Fatalf("page of %d rooms", len(list))
		}
		for _, room := range list {
			got = append(got, room.(map[string]any)["id"].(string))
		}
		next, isNext := r.body["nextCursor"].(string)
		if !isNext {
			if _, present := r.body["nextCursor"]; !present {
				t.Fatalf("no nextCursor member: %s", r.raw)
			}
			break
		}
		path = "/v1/me/rooms?limit=2&cursor=" + next
	}
	if strings.Join(got, ",") != strings.Join(ids, ",") {
		t.Fatalf("pages gave %v, want %v", got, ids)
	}
	first := e.do("GET", "/v1/me/rooms", alice, nil)
	if n := len(first.body["rooms"].([]any)); n != 5 {
		t.Fatalf("default page has %d rooms, want all 5", n)
	}
	for _, bad := range []struct{ query, field string }{{"limit=0", "limit"}, {"limit=101", "limit"}, {"limit=020", "limit"}, {"cursor=abc", "cursor"}} {
		r := e.do("GET", "/v1/me/rooms?"+bad.query, alice, nil)
		want(t, r, 422, "VALIDATION_FAILED")
		if !strings.Contains(r.raw, `"field":"`+bad.field+`"`) {
			t.Fatalf("%s: %s", bad.query, r.raw)
		}
	}
}
