package api_test

import (
	"fmt"
	"testing"
)

// A stream token opens its event stream only (docs/SECURITY.md), and a
// stream is told by the path the router matches: with the last slash
// encoded, GET/PATCH/DELETE /v1/rooms/ID%2Fevents reach
// /v1/rooms/{roomId} (the room "ID/events"), a REST route, whose query
// carries no credential. Each answer is the one /v1/rooms/ID with the same
// query gets (401 UNAUTHENTICATED, no credential), whatever the query
// holds: a stream token, an identity token, an API key. Before, the
// stream token authenticated the request as its user (refused only once
// routed), so a leaked stream URL spent that user's write budget: 429 on
// the user's own writes for half an hour. The stream's own path opens,
// also with a character of the room id escaped (its handler gets the id
// unescaped).
func TestStreamTokenOnRESTRouteEncoded(t *testing.T) {
	e := limitedEnv(t, redistestEmbedded, "write=2/h")
	alice, _ := e.guest("alice")
	id := e.create(alice, arena)["id"].(string)
	st := e.streamToken(alice, "/v1/rooms/"+id)
	for _, q := range []string{"token=" + st, "access_token=" + alice, "token=" + "rsk_" + id} {
		for _, m := range []string{"GET", "PATCH", "DELETE", "PATCH", "PATCH"} {
			r := e.do(m, "/v1/rooms/"+id+"%2Fevents?"+q, "", map[string]any{"name": "x"})
			want(t, r, 401, "UNAUTHENTICATED")
			if plain := e.do(m, "/v1/rooms/"+id+"?"+q, "", map[string]any{"name": "x"}); r.raw != plain.raw {
				t.Fatalf("%s ?%.20s: encoded %s, plain %s", m, q, r.raw, plain.raw)
			}
		}
	}
	for i := range 2 { // the write budget (2/h) is the user's still
		want(t, e.do("PATCH", "/v1/rooms/"+id, alice, map[string]any{"name": fmt.Sprint("Renamed ", i)}), 200, "")
	}
	escaped := fmt.Sprintf("%%%02X", id[0]) + id[1:]
	if f := e.open("/v1/rooms/" + escaped + "/events?token=" + st).next(); f.event != "snapshot" {
		t.Fatalf("first event %q, want snapshot", f.event)
	}
}
