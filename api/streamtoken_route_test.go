package api_test

import "testing"

// A stream token opens its event stream only: "used for ... any REST route
// it is 401 STREAM_TOKEN_REQUIRED" (docs/SECURITY.md). authenticate tells
// stream routes by the decoded path, the router matches the raw one: with
// the last slash encoded the stream token authenticates GET/PATCH/DELETE
// /v1/rooms/{roomId} (the room id then holds a slash, so today no room is
// reached; the request counts as the user and has no request timeout).
func TestStreamTokenOnRESTRouteEncoded(t *testing.T) {
	e := newEnv(t, redistestEmbedded, true)
	alice, _ := e.guest("alice")
	id := e.create(alice, arena)["id"].(string)
	st := e.streamToken(alice, "/v1/rooms/"+id)
	for _, m := range []string{"GET", "PATCH", "DELETE"} {
		want(t, e.do(m, "/v1/rooms/"+id+"%2Fevents?token="+st, "", map[string]any{}), 401, "STREAM_TOKEN_REQUIRED")
	}
}
