package api_test

import (
	"context"
	"fmt"
	"testing"
)

// What a client that retries without an Idempotency-Key after a lost
// answer gets, per operation: the second request of each pair is the
// retry of the first, which ran. openapi.yaml's IdempotencyKey, README
// ("Retries") and docs/GUIDE.md promise these answers.
func TestRetriesWithoutAKey(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		alice, _ := e.guest("alice")
		bob, bobID := e.guest("bob")
		carol, _ := e.guest("carol")

		// create: another room each time
		want(t, e.do("POST", "/v1/rooms", carol, arena), 201, "")
		want(t, e.do("POST", "/v1/rooms", carol, arena), 201, "")
		if n := len(e.do("GET", "/v1/me/rooms", carol, nil).body["rooms"].([]any)); n != 2 {
			t.Fatalf("carol's create sent twice made %d rooms, want 2", n)
		}

		// quick-join: 200 created false, the room the first made
		dave, _ := e.guest("dave")
		qj := map[string]any{"mode": "squad", "regions": []string{"eu"}, "create": map[string]any{"name": "Squad", "maxPlayers": 4}}
		q1 := e.do("POST", "/v1/matchmaking/quick-join", dave, qj)
		want(t, q1, 201, "")
		q2 := e.do("POST", "/v1/matchmaking/quick-join", dave, qj)
		want(t, q2, 200, "")
		if q2.body["created"] != false || q2.body["room"].(map[string]any)["id"] != q1.body["room"].(map[string]any)["id"] ||
			q2.body["playerId"] != q1.body["playerId"] {
			t.Fatalf("quick-join sent twice: %s then %s, want the first room, created false", q1.raw, q2.raw)
		}

		// join: the same answer (a member joining again)
		four := map[string]any{"name": "Four", "mode": "battle", "region": "eu", "maxPlayers": 4}
		id := e.create(alice, four)["id"].(string)
		j1 := e.do("POST", "/v1/rooms/"+id+"/join", bob, nil)
		want(t, j1, 200, "")
		j2 := e.do("POST", "/v1/rooms/"+id+"/join", bob, nil)
		want(t, j2, 200, "")
		if j1.body["playerId"] != j2.body["playerId"] {
			t.Fatalf("join sent twice: player %v then %v", j1.body["playerId"], j2.body["playerId"])
		}

		// state patch with If-Match: 412 as a lost race; without: applied twice
		st := e.do("GET", "/v1/rooms/"+id+"/state", alice, nil)
		want(t, st, 200, "")
		etag := st.header.Get("ETag")
		want(t, e.do("PATCH", "/v1/rooms/"+id+"/state", alice, `{"score": 1}`, "If-Match", etag), 200, "")
		want(t, e.do("PATCH", "/v1/rooms/"+id+"/state", alice, `{"score": 1}`, "If-Match", etag), 412, "VERSION_MISMATCH")
		before := e.do("GET", "/v1/rooms/"+id+"/state", alice, nil).body["stateVersion"].(float64)
		want(t, e.do("PATCH", "/v1/rooms/"+id+"/state", alice, `{"score": 2}`), 200, "")
		want(t, e.do("PATCH", "/v1/rooms/"+id+"/state", alice, `{"score": 2}`), 200, "")
		if after := e.do("GET", "/v1/rooms/"+id+"/state", alice, nil).body["stateVersion"].(float64); after != before+2 {
			t.Fatalf("a patch without If-Match sent twice: stateVersion %v then %v, want applied twice", before, after)
		}

		// kick: 404 PLAYER_NOT_FOUND
		pid := fmt.Sprint(j1.body["playerId"])
		want(t, e.do("DELETE", "/v1/rooms/"+id+"/players/"+pid, alice, nil), 204, "")
		want(t, e.do("DELETE", "/v1/rooms/"+id+"/players/"+pid, alice, nil), 404, "PLAYER_NOT_FOUND")

		// leave: 403 NOT_A_MEMBER; the last member's: 404, the room gone
		want(t, e.do("POST", "/v1/rooms/"+id+"/join", carol, nil), 200, "")
		// (a route that takes no key ignores the header: no replay)
		want(t, e.do("POST", "/v1/rooms/"+id+"/leave", carol, nil, "Idempotency-Key", "leave-1"), 204, "")
		want(t, e.do("POST", "/v1/rooms/"+id+"/leave", carol, nil, "Idempotency-Key", "leave-1"), 403, "NOT_A_MEMBER")
		want(t, e.do("POST", "/v1/rooms/"+id+"/leave", alice, nil), 204, "")
		want(t, e.do("POST", "/v1/rooms/"+id+"/leave", alice, nil), 404, "ROOM_NOT_FOUND")
		// a private room's: 404, as to any non-member
		secret := e.create(alice, map[string]any{"name": "Secret", "mode": "battle", "region": "eu", "visibility": "private"})
		code := secret["inviteCode"].(string)
		c1 := e.do("POST", "/v1/rooms/join-by-code", carol, map[string]any{"inviteCode": code})
		want(t, c1, 200, "")
		c2 := e.do("POST", "/v1/rooms/join-by-code", carol, map[string]any{"inviteCode": code})
		want(t, c2, 200, "")
		if c1.body["playerId"] != c2.body["playerId"] {
			t.Fatalf("join-by-code sent twice: player %v then %v", c1.body["playerId"], c2.body["playerId"])
		}
		want(t, e.do("POST", "/v1/rooms/"+secret["id"].(string)+"/leave", carol, nil), 204, "")
		want(t, e.do("POST", "/v1/rooms/"+secret["id"].(string)+"/leave", carol, nil), 404, "ROOM_NOT_FOUND")

		// a room message, a direct message: sent twice
		id = e.create(alice, arena)["id"].(string)
		gg := map[string]any{"type": "chat", "data": "gg"}
		want(t, e.do("POST", "/v1/rooms/"+id+"/messages", alice, gg), 202, "")
		want(t, e.do("POST", "/v1/rooms/"+id+"/messages", alice, gg), 202, "")
		if n := len(e.do("GET", "/v1/rooms/"+id+"/messages", alice, nil).body["messages"].([]any)); n != 2 {
			t.Fatalf("a message sent twice: %d messages, want 2", n)
		}
		logged := func() int64 { return e.store.Client().XLen(ctx, e.store.UserLogs().KeysOf(bobID).Log).Val() }
		had := logged() // the kick's notice
		want(t, e.do("POST", "/v1/users/"+bobID+"/messages", alice, gg), 202, "")
		want(t, e.do("POST", "/v1/users/"+bobID+"/messages", alice, gg), 202, "")
		if n := logged() - had; n != 2 {
			t.Fatalf("a direct message sent twice: %d logged, want 2", n)
		}

		// a room's delete: 404
		want(t, e.do("DELETE", "/v1/rooms/"+id, alice, nil), 204, "")
		want(t, e.do("DELETE", "/v1/rooms/"+id, alice, nil), 404, "ROOM_NOT_FOUND")

		// a ticket: 409 TICKET_ACTIVE (the first one is)
		ticket := map[string]any{"mode": "duel", "regions": []string{"eu"}}
		want(t, e.do("POST", "/v1/matchmaking/tickets", bob, ticket), 201, "")
		want(t, e.do("POST", "/v1/matchmaking/tickets", bob, ticket), 409, "TICKET_ACTIVE")
	})
}
