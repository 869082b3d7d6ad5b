package api_test

import (
	"fmt"
	"strings"
	"testing"
)

// Every bad request gets its precise problem and leaves the room as it was.
func TestBadInputChangesNothing(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		alice, _ := e.guest("alice")
		id := e.create(alice, arena)["id"].(string)
		before := e.do("GET", "/v1/rooms/"+id, alice, nil).raw
		huge := `{"name":"` + strings.Repeat("x", 130<<10) + `"}`
		tests := []struct {
			name         string
			method, path string
			token        string
			body         any
			hdr          []string
			status       int
			code         string
			field        string // first errors[].field, when 422
		}{
			{"TooLargeBeforeAuth", "PATCH", "/v1/rooms/" + id, "", huge, nil, 413, "PAYLOAD_TOO_LARGE", ""},
			{"TooLargeBeforeMediaType", "PATCH", "/v1/rooms/" + id, alice, huge, []string{"Content-Type", "text/plain"}, 413, "PAYLOAD_TOO_LARGE", ""},
			{"AuthBeforeBody", "PATCH", "/v1/rooms/" + id, "", `{`, nil, 401, "UNAUTHENTICATED", ""},
			{"MediaTypeBeforeSyntax", "PATCH", "/v1/rooms/" + id, alice, `{`, []string{"Content-Type", "text/plain"}, 415, "UNSUPPORTED_MEDIA_TYPE", ""},
			{"MissingMediaType", "POST", "/v1/rooms", alice, `{}`, []string{"Content-Type", ""}, 415, "UNSUPPORTED_MEDIA_TYPE", ""},
			{"Charset", "PATCH", "/v1/rooms/" + id, alice, `{"name":"b"}`, []string{"Content-Type", "application/json; charset=utf-16"}, 415, "UNSUPPORTED_MEDIA_TYPE", ""},
			{"MergePatchCharset", "PATCH", "/v1/rooms/" + id, alice, `{"name":"b"}`, []string{"Content-Type", "application/merge-patch+json; charset=iso-8859-1"}, 415, "UNSUPPORTED_MEDIA_TYPE", ""},
			{"TwoMediaTypes", "PATCH", "/v1/rooms/" + id, alice, `{"name":"b"}`, []string{"Content-Type", "application/json", "Content-Type", "text/plain"}, 415, "UNSUPPORTED_MEDIA_TYPE", ""},
			{"TwoSameMediaTypes", "POST", "/v1/rooms/" + id + "/messages", alice, `{"type":"chat"}`, []string{"Content-Type", "application/json", "Content-Type", "application/json"}, 415, "UNSUPPORTED_MEDIA_TYPE", ""},
			{"ContentEncoding", "PATCH", "/v1/rooms/" + id, alice, `{"name":"b"}`, []string{"Content-Encoding", "gzip"}, 415, "UNSUPPORTED_MEDIA_TYPE", ""},
			{"ContentEncodingListed", "POST", "/v1/rooms/" + id + "/messages", alice, `{"type":"chat"}`, []string{"Content-Encoding", "identity, br"}, 415, "UNSUPPORTED_MEDIA_TYPE", ""},
			{"Syntax", "PATCH", "/v1/rooms/" + id, alice, `{"name":`, nil, 400, "MALFORMED_REQUEST", ""},
			{"NotAnObject", "PATCH", "/v1/rooms/" + id, alice, `null`, nil, 400, "MALFORMED_REQUEST", ""},
			{"TrailingData", "PATCH", "/v1/rooms/" + id, alice, `{"name":"a"} {}`, nil, 400, "MALFORMED_REQUEST", ""},
			{"WrongType", "PATCH", "/v1/rooms/" + id, alice, `{"locked":"yes"}`, nil, 400, "MALFORMED_REQUEST", ""},
			{"UnknownField", "PATCH", "/v1/rooms/" + id, alice, `{"colour":"red"}`, nil, 422, "VALIDATION_FAILED", "colour"},
			{"NameTooLong", "PATCH", "/v1/rooms/" + id, alice, `{"name":"` + strings.Repeat("é", 65) + `"}`, nil, 422, "VALIDATION_FAILED", "name"},
			{"NameControl", "PATCH", "/v1/rooms/" + id, alice, `{"name":"a\u0007b"}`, nil, 422, "VALIDATION_FAILED", "name"},
			// what would reorder or break the text around a name others see
			{"NameBidiOverride", "PATCH", "/v1/rooms/" + id, alice, `{"name":"Join \u202eevil"}`, nil, 422, "VALIDATION_FAILED", "name"},
			{"CreateNameBidiIsolate", "POST", "/v1/rooms", alice, `{"name":"a\u2067b","mode":"x","region":"eu"}`, nil, 422, "VALIDATION_FAILED", "name"},
			{"QuickJoinCreateNameLineSeparator", "POST", "/v1/matchmaking/quick-join", alice, `{"mode":"x","regions":["eu"],"create":{"name":"a\u2028b"}}`, nil, 422, "VALIDATION_FAILED", "create.name"},
			{"NameBlank", "PATCH", "/v1/rooms/" + id, alice, `{"name":" \u3000 "}`, nil, 422, "VALIDATION_FAILED", "name"},
			{"CreateNameBlank", "POST", "/v1/rooms", alice, `{"name":"   ","mode":"x","region":"eu"}`, nil, 422, "VALIDATION_FAILED", "name"},
			{"QuickJoinCreateNameBlank", "POST", "/v1/matchmaking/quick-join", alice, `{"mode":"x","regions":["eu"],"create":{"name":" "}}`, nil, 422, "VALIDATION_FAILED", "create.name"},
			{"GuestNameBlank", "POST", "/v1/auth/guest", "", `{"name":"  "}`, nil, 422, "VALIDATION_FAILED", "name"},
			{"GuestNameBOM", "POST", "/v1/auth/guest", "", `{"name":"\ufeff"}`, nil, 422, "VALIDATION_FAILED", "name"},
			{"CreateNameBOM", "POST", "/v1/rooms", alice, `{"name":"\ufeff \u00a0","mode":"x","region":"eu"}`, nil, 422, "VALIDATION_FAILED", "name"},
			{"CreateNameInvisible", "POST", "/v1/rooms", alice, `{"name":"\u200b\u200b","mode":"x","region":"eu"}`, nil, 422, "VALIDATION_FAILED", "name"},
			{"NameFiller", "PATCH", "/v1/rooms/" + id, alice, `{"name":"\u3164"}`, nil, 422, "VALIDATION_FAILED", "name"},
			{"QuickJoinCreateNameBraille", "POST", "/v1/matchmaking/quick-join", alice, `{"mode":"x","regions":["eu"],"create":{"name":"\u2800"}}`, nil, 422, "VALIDATION_FAILED", "create.name"},
			{"Status", "PATCH", "/v1/rooms/" + id, alice, `{"status":"paused"}`, nil, 422, "VALIDATION_FAILED", "status"},
			{"MaxPlayers", "PATCH", "/v1/rooms/" + id, alice, `{"maxPlayers":101}`, nil, 422, "VALIDATION_FAILED", "maxPlayers"},
			{"Visibility", "PATCH", "/v1/rooms/" + id, alice, `{"visibility":"hidden"}`, nil, 422, "VALIDATION_FAILED", "visibility"},
			{"AttrKey", "PATCH", "/v1/rooms/" + id, alice, `{"attributes":{"a-b":1}}`, nil, 422, "VALIDATION_FAILED", "attributes.a-b"},
			{"AttrProto", "PATCH", "/v1/rooms/" + id, alice, `{"attributes":{"__proto__":"x"}}`, nil, 422, "VALIDATION_FAILED", "attributes.__proto__"},
			{"CreateAttrProto", "POST", "/v1/rooms", alice, `{"name":"a","mode":"x","region":"eu","attributes":{"__proto__":1}}`, nil, 422, "VALIDATION_FAILED", "attributes.__proto__"},
			{"AttrValue", "PATCH", "/v1/rooms/" + id, alice, `{"attributes":{"a":[1]}}`, nil, 422, "VALIDATION_FAILED", "attributes.a"},
			{"AttrLong", "PATCH", "/v1/rooms/" + id, alice, `{"attributes":{"a":"` + strings.Repeat("z", 129) + `"}}`, nil, 422, "VALIDATION_FAILED", "attributes.a"},
			{"TooManyAttrs", "PATCH", "/v1/rooms/" + id, alice, `{"attributes":{"a":1,"b":1,"c":1,"d":1,"e":1,"f":1,"g":1,"h":1,"i":1,"j":1,"k":1,"l":1,"m":1,"n":1,"o":1,"p":1,"q":1}}`, nil, 422, "VALIDATION_FAILED", "attributes"},
			{"ValidationBeforeNotFound", "PATCH", "/v1/rooms/00AAAAAAAAAAAAAA", alice, `{"maxPlayers":0}`, nil, 422, "VALIDATION_FAILED", "maxPlayers"},
			{"BadRoomID", "GET", "/v1/rooms/no%20such", alice, nil, nil, 404, "ROOM_NOT_FOUND", ""},
			{"LongRoomID", "GET", "/v1/rooms/" + strings.Repeat("a", 41), alice, nil, nil, 404, "ROOM_NOT_FOUND", ""},
			// an empty id names nothing, as one never issued (the router
			// refuses it before the domain would)
			{"EmptyRoomID", "GET", "/v1/rooms//state", alice, nil, nil, 404, "ROOM_NOT_FOUND", ""},
			{"EmptyRoomIDJoin", "POST", "/v1/rooms//join", alice, nil, nil, 404, "ROOM_NOT_FOUND", ""},
			{"EmptyRoomIDEvents", "GET", "/v1/rooms//events", alice, nil, nil, 404, "ROOM_NOT_FOUND", ""},
			{"EmptyUserID", "POST", "/v1/users//messages", alice, `{"type":"chat"}`, nil, 422, "VALIDATION_FAILED", "userId"},
			{"CreateMissingFields", "POST", "/v1/rooms", alice, `{}`, nil, 422, "VALIDATION_FAILED", "name"},
			{"CreateMode", "POST", "/v1/rooms", alice, `{"name":"a","mode":"-x","region":"eu"}`, nil, 422, "VALIDATION_FAILED", "mode"},
			{"CreateStateKey", "POST", "/v1/rooms", alice, `{"name":"a","mode":"x","region":"eu","state":{"a b":1}}`, nil, 422, "VALIDATION_FAILED", "state.a b"},
			{"StateHugeNumber", "PATCH", "/v1/rooms/" + id + "/state", alice, `{"hp":1e400}`, nil, 422, "VALIDATION_FAILED", "hp"},
			{"StateProto", "PATCH", "/v1/rooms/" + id + "/state", alice, `{"__proto__":{"player_1_ready":true}}`, nil, 422, "VALIDATION_FAILED", "__proto__"},
			{"CreateStateProto", "POST", "/v1/rooms", alice, `{"name":"a","mode":"x","region":"eu","state":{"__proto__":{}}}`, nil, 422, "VALIDATION_FAILED", "state.__proto__"},
			// a value no SDK reads back (the C# SDK's parser stops at 256)
			{"StateTooDeep", "PATCH", "/v1/rooms/" + id + "/state", alice, `{"hp":` + strings.Repeat("[", 300) + strings.Repeat("]", 300) + `}`, nil, 400, "MALFORMED_REQUEST", ""},
			{"CreateStateHugeNumber", "POST", "/v1/rooms", alice, `{"name":"a","mode":"x","region":"eu","state":{"hp":[` + strings.Repeat("9", 400) + `]}}`, nil, 422, "VALIDATION_FAILED", "state.hp"},
			{"MessageHugeNumber", "POST", "/v1/rooms/" + id + "/messages", alice, `{"type":"chat","data":{"hp":-1E+999}}`, nil, 422, "VALIDATION_FAILED", "data"},
			{"DirectMessageHugeNumber", "POST", "/v1/users/bob/messages", alice, `{"type":"chat","data":1.8e308}`, nil, 422, "VALIDATION_FAILED", "data"},
			{"CreatePolicy", "POST", "/v1/rooms", alice, `{"name":"a","mode":"x","region":"eu","statePolicy":"all"}`, nil, 422, "VALIDATION_FAILED", "statePolicy"},
			{"ListLimitForm", "GET", "/v1/rooms?limit=abc", alice, nil, nil, 422, "VALIDATION_FAILED", "limit"},
			{"ListLimitRange", "GET", "/v1/rooms?limit=0", alice, nil, nil, 422, "VALIDATION_FAILED", "limit"},
			{"ListStatus", "GET", "/v1/rooms?status=open", alice, nil, nil, 422, "VALIDATION_FAILED", "status"},
			{"ListCursor", "GET", "/v1/rooms?cursor=abc", alice, nil, nil, 422, "VALIDATION_FAILED", "cursor"},
			{"TwoLastEventIDs", "GET", "/v1/rooms/" + id + "/events", alice, nil, []string{"Last-Event-ID", "1", "Last-Event-ID", "2"}, 422, "VALIDATION_FAILED", "Last-Event-ID"},
			{"TwoLastEventIDsMe", "GET", "/v1/me/events?platform=pc", alice, nil, []string{"Last-Event-ID", "1", "Last-Event-ID", "2"}, 422, "VALIDATION_FAILED", "Last-Event-ID"},
			{"UnknownRoute", "GET", "/v1/nothing", alice, nil, nil, 404, "NOT_FOUND", ""},
			{"WrongMethod", "PUT", "/v1/rooms/" + id, alice, nil, nil, 405, "METHOD_NOT_ALLOWED", ""},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				r := e.do(tc.method, tc.path, tc.token, tc.body, tc.hdr...)
				want(t, r, tc.status, tc.code)
				if tc.field != "" {
					errs, _ := r.body["errors"].([]any)
					if len(errs) == 0 || errs[0].(map[string]any)["field"] != tc.field {
						t.Fatalf("errors %v, want field %s", r.body["errors"], tc.field)
					}
				}
				for _, k := range []string{"type", "title", "status", "detail", "code"} {
					if _, ok := r.body[k]; !ok {
						t.Fatalf("problem lacks %s: %s", k, r.raw)
					}
				}
			})
		}
		// a parameter given twice is told so, in the query as in a header
		for _, r := range []resp{
			e.do("GET", "/v1/me/events?platform=pc&lastEventId=1-a&lastEventId=1-a", alice, nil),
			e.do("GET", "/v1/rooms?limit=5&limit=5", alice, nil),
			e.do("GET", "/v1/rooms/"+id+"/events", alice, nil, "Last-Event-ID", "1", "Last-Event-ID", "2"),
		} {
			if want(t, r, 422, "VALIDATION_FAILED"); !strings.Contains(r.raw, "must be sent once") {
				t.Fatalf("a parameter given twice: %s", r.raw)
			}
		}
		// a 415 for a content coding names the one taken (RFC 9110)
		if r := e.do("PATCH", "/v1/rooms/"+id, alice, `{"name":"b"}`, "Content-Encoding", "gzip"); r.header.Get("Accept-Encoding") != "identity" {
			t.Fatalf("415 of a gzip body: Accept-Encoding %q, want identity", r.header.Get("Accept-Encoding"))
		}
		// a 405 names what the resource allows (RFC 9110)
		if r := e.do("PUT", "/v1/rooms/"+id, alice, nil); r.header.Get("Allow") != "GET, PATCH, DELETE" {
			t.Fatalf("405 Allow %q, want GET, PATCH, DELETE", r.header.Get("Allow"))
		}
		if r := e.do("GET", "/v1/rooms/"+id+"/join", alice, nil); r.status != 405 || r.header.Get("Allow") != "POST" {
			t.Fatalf("GET of join: %d, Allow %q", r.status, r.header.Get("Allow"))
		}
		if after := e.do("GET", "/v1/rooms/"+id, alice, nil).raw; after != before {
			t.Fatalf("bad input changed the room:\n%s\n%s", before, after)
		}
		// a room holding a __proto__ key (made before it was refused) may
		// have it deleted
		want(t, e.do("PATCH", "/v1/rooms/"+id+"/state", alice, `{"__proto__":null}`), 200, "")
		if list := e.do("GET", "/v1/rooms", alice, nil); strings.Count(list.raw, `"id"`) != 1 {
			t.Fatalf("bad creates made rooms: %s", list.raw)
		}
	})
}

// A body declared UTF-8 in any case, or sent with the identity coding, is
// taken as one without either.
func TestBodyInUTF8Accepted(t *testing.T) {
	e := newEnv(t, redistestEmbedded, true)
	alice, _ := e.guest("alice")
	id := e.create(alice, arena)["id"].(string)
	for i, hdr := range [][]string{
		{"Content-Type", "application/json; charset=UTF-8"},
		{"Content-Type", `application/merge-patch+json;charset="utf-8"`},
		{"Content-Encoding", "identity"},
		{"Content-Type", "application/json; charset=utf8"},
	} {
		name := fmt.Sprint("n", i)
		want(t, e.do("PATCH", "/v1/rooms/"+id, alice, `{"name":"`+name+`"}`, hdr...), 200, "")
		if got := e.do("GET", "/v1/rooms/"+id, alice, nil).body["name"]; got != name {
			t.Fatalf("%v: name %v, want %s", hdr, got, name)
		}
	}
}

func TestOperations(t *testing.T) {
	e := newEnv(t, redistestEmbedded, true)
	want(t, e.do("GET", "/healthz", "", nil), 200, "")
	want(t, e.do("GET", "/readyz", "", nil), 200, "")
	spec := e.do("GET", "/openapi.yaml", "", nil)
	if spec.status != 200 || !strings.HasPrefix(spec.raw, "openapi: 3.0") {
		t.Fatalf("spec: %d %.40s", spec.status, spec.raw)
	}
	e.store.Close()
	want(t, e.do("GET", "/readyz", "", nil), 503, "STORE_UNAVAILABLE")
	alice, _ := e.guest("alice")
	want(t, e.do("POST", "/v1/rooms", alice, arena), 503, "STORE_UNAVAILABLE")
}
