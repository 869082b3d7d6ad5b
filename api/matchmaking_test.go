package api_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/realsync/realsync/api"
	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/matchmaking"
	"github.com/realsync/realsync/players"
	"github.com/realsync/realsync/store"
	"github.com/realsync/realsync/store/tickets"
)

func TestTicketsOverHTTP(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		alice, aliceID := e.guest("alice")
		bob, _ := e.guest("bob")
		carol, _ := e.guest("carol")
		path := "/v1/matchmaking/tickets"
		bad := []struct {
			name  string
			body  any
			field string
			says  string // in the error's text, when set
		}{
			{"no mode", map[string]any{"regions": []string{"eu"}}, "mode", ""},
			{"no regions", map[string]any{"mode": "duel"}, "regions", ""},
			{"bad region", map[string]any{"mode": "duel", "regions": []string{"EU"}}, "regions.0", ""},
			{"repeated region", map[string]any{"mode": "duel", "regions": []string{"eu", "eu"}}, "regions.1", ""},
			{"rating too big", map[string]any{"mode": "duel", "regions": []string{"eu"}, "rating": 2e9}, "rating", ""},
			{"self in party", map[string]any{"mode": "duel", "regions": []string{"eu"}, "partyUserIds": []string{aliceID}}, "partyUserIds.0", ""},
			{"party past a team", map[string]any{"mode": "duel", "regions": []string{"eu"}, "partyUserIds": []string{"x", "y"}}, "partyUserIds", ""},
			{"bad attribute", map[string]any{"mode": "duel", "regions": []string{"eu"}, "attributes": map[string]any{"a": []int{1}}}, "attributes.a", "must be a string"},
			{"bad attribute name", map[string]any{"mode": "duel", "regions": []string{"eu"}, "attributes": map[string]any{"a-b": 1}}, "attributes.a-b", "is no attribute name"},
			// user ids outside the grammar every route takes, and a number
			// longer than room attributes take (64 characters)
			{"party id with a space", map[string]any{"mode": "duel", "regions": []string{"eu"}, "partyUserIds": []string{"a b"}}, "partyUserIds.0", ""},
			{"party id with a comma", map[string]any{"mode": "duel", "regions": []string{"eu"}, "partyUserIds": []string{"a,b"}}, "partyUserIds.0", ""},
			{"party id with a no-break space", map[string]any{"mode": "duel", "regions": []string{"eu"}, "partyUserIds": []string{"a\u00a0b"}}, "partyUserIds.0", ""},
			{"party id with a zero-width space", map[string]any{"mode": "duel", "regions": []string{"eu"}, "partyUserIds": []string{"a\u200bb"}}, "partyUserIds.0", ""},
			{"party id of 200 bytes", map[string]any{"mode": "duel", "regions": []string{"eu"}, "partyUserIds": []string{strings.Repeat("é", 100)}}, "partyUserIds.0", ""},
			{"69-digit attribute", map[string]any{"mode": "duel", "regions": []string{"eu"}, "attributes": map[string]any{"x": json.Number("1" + strings.Repeat("0", 68))}}, "attributes.x", ""},
			{"unknown field", map[string]any{"mode": "duel", "region": "eu"}, "region", ""},
		}
		for _, c := range bad {
			t.Run(c.name, func(t *testing.T) {
				r := e.do("POST", path, alice, c.body)
				want(t, r, 422, "VALIDATION_FAILED")
				if !strings.Contains(r.raw, `"field":"`+c.field+`"`) {
					t.Errorf("errors do not name %s: %s", c.field, r.raw)
				}
				if !strings.Contains(r.raw, c.says) {
					t.Errorf("errors do not say %q: %s", c.says, r.raw)
				}
			})
		}

		r := e.do("POST", path, alice, map[string]any{"mode": "duel", "regions": []string{"eu"}, "rating": 1000})
		want(t, r, 201, "")
		a := r.body["ticket"].(map[string]any)
		aid := a["ticketId"].(string)
		if a["status"] != "searching" || a["window"] != 100.0 || a["userId"] != aliceID || r.header.Get("Location") != path+"/"+aid {
			t.Fatalf("created %s %v", r.raw, r.header)
		}
		want(t, e.do("POST", path, alice, map[string]any{"mode": "other", "regions": []string{"eu"}}), 409, "TICKET_ACTIVE")
		r = e.do("POST", path, carol, map[string]any{"mode": "duel", "regions": []string{"eu"}, "partyUserIds": []string{aliceID}})
		want(t, r, 409, "TICKET_ACTIVE")
		if !strings.Contains(r.raw, "partyUserIds.0 has") {
			t.Fatalf("the detail does not say which member: %s", r.raw)
		}
		want(t, e.do("GET", path+"/"+aid, bob, nil), 404, "TICKET_NOT_FOUND")
		want(t, e.do("GET", path+"/00AAAAAAAAAAAAAA", alice, nil), 404, "TICKET_NOT_FOUND")
		want(t, e.do("GET", path+"/nope", alice, nil), 404, "TICKET_NOT_FOUND")

		// Idempotency-Key: the same answer, the same ticket
		body := map[string]any{"mode": "duel", "regions": []string{"eu"}, "rating": 3000}
		first := e.do("POST", path, carol, body, "Idempotency-Key", "k1")
		want(t, first, 201, "")
		again := e.do("POST", path, carol, body, "Idempotency-Key", "k1")
		want(t, again, 201, "")
		cid := first.body["ticket"].(map[string]any)["ticketId"]
		if again.header.Get("Idempotent-Replayed") != "true" || again.body["ticket"].(map[string]any)["ticketId"] != cid {
			t.Fatalf("replay %v %s", again.header, again.raw)
		}

		// bob is matched with alice (carol's 3000 is out of every window)
		stream := e.me(alice, "web")
		defer stream.close()
		if f := stream.next(); f.event != "snapshot" {
			t.Fatalf("first event %s", f.event)
		}
		want(t, e.do("POST", path, bob, map[string]any{"mode": "duel", "regions": []string{"eu"}, "rating": 1060}), 201, "")
		ts := tickets.New(e.store.Base(), e.store.UserLogs(), e.store.Renewals())
		m := matchmaking.NewMatcher(matchmaking.MatcherConfig{Config: matchmaking.Config{Queue: ts}, Rooms: e.store,
			Notifier: ts, Holder: "test"})
		m.Round(context.Background())
		f := stream.next()
		checkUserEvent(t, f)
		if f.event != "match_found" || f.data["ticketId"] != aid || f.data["roomId"] == "" || f.id == "" {
			t.Fatalf("event %s %v", f.event, f.data)
		}
		room := f.data["roomId"].(string)
		r = e.do("GET", path+"/"+aid, alice, nil)
		want(t, r, 200, "")
		got := r.body["ticket"].(map[string]any)
		if got["status"] != "matched" || got["roomId"] != room || got["matchId"] != f.data["matchId"] || got["window"] != nil {
			t.Fatalf("matched ticket %s", r.raw)
		}
		// bob takes the seat held for him in the private room, by id
		want(t, e.do("POST", "/v1/rooms/"+room+"/join", bob, nil), 200, "")
		want(t, e.do("DELETE", path+"/"+aid, alice, nil), 409, "TICKET_MATCHED")

		want(t, e.do("DELETE", path+"/"+cid.(string), bob, nil), 404, "TICKET_NOT_FOUND")
		want(t, e.do("DELETE", path+"/"+cid.(string), carol, nil), 204, "")
		r = e.do("GET", path+"/"+cid.(string), carol, nil)
		if r.body["ticket"].(map[string]any)["status"] != "cancelled" {
			t.Fatalf("after cancel %s", r.raw)
		}
		// the keyed create sent again answers the ticket as it is now,
		// not its first answer ("searching": a tester's find)
		again = e.do("POST", path, carol, body, "Idempotency-Key", "k1")
		want(t, again, 201, "")
		if tk := again.body["ticket"].(map[string]any); again.header.Get("Idempotent-Replayed") != "true" || tk["ticketId"] != cid || tk["status"] != "cancelled" {
			t.Fatalf("the keyed create sent again after the cancel: %v %s", again.header, again.raw)
		}
		// a create that is not the first run's answer is no replay
		if r := e.do("POST", path, carol, map[string]any{"mode": "duel", "regions": []string{"eu"}, "rating": 3100}, "Idempotency-Key", "k2"); r.status != 201 || r.header.Get("Idempotent-Replayed") != "" {
			t.Fatalf("a new keyed create: %d %v %s", r.status, r.header, r.raw)
		}
		want(t, e.do("DELETE", path+"/"+cid.(string), carol, nil), 204, "")
		// free again: a new ticket for alice after her match
		want(t, e.do("POST", path, alice, map[string]any{"mode": "duel", "regions": []string{"eu"}}), 201, "")
	})
}

// TestPartyNeedsConsent: with Config.Consent (REALSYNC_PARTY_CONSENT
// party or follow) a ticket may name a user in its party only when the
// user joined its leader's party (follows its leader). One who did not is
// 403 PARTY_CONSENT_REQUIRED naming the member, before anything is
// claimed, queued or counted on the party's limits (direct); joining the
// leader's party (following the leader) consents, and only to that
// leader; joining another's (following another instead) withdraws it.
func TestPartyNeedsConsent(t *testing.T) {
	rules, err := matchmaking.ParseRules([]byte("modes:\n  big: {minPlayers: 2, maxPlayers: 8}\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []struct {
		name    string
		consent func(st *store.Store) matchmaking.Consent
		// give makes tok's user consent to leader's tickets, and to no
		// other leader's
		give    func(e *env, tok, leader string)
		refusal string
	}{
		{name: "Party", consent: func(st *store.Store) matchmaking.Consent { return players.NewParties(st.Sessions()) },
			give: func(e *env, tok, leader string) {
				want(e.t, e.do("PUT", "/v1/me/party", tok, map[string]any{"leaderUserId": leader}), 200, "")
			},
			refusal: "has not joined your party"},
		{name: "Follow", consent: func(st *store.Store) matchmaking.Consent { return players.FollowConsent{Store: st.Sessions()} },
			give: func(e *env, tok, leader string) {
				want(e.t, e.do("PUT", "/v1/me/following", tok, map[string]any{"userIds": []string{leader}}), 200, "")
			},
			refusal: "does not follow you"},
	} {
		for _, b := range redistest.Backends(t) {
			t.Run(mode.name+"/"+b.Name, func(t *testing.T) {
				e := limitedEnv(t, b, "direct=2/h", func(c *api.Config, st *store.Store, _ string) {
					c.Tickets = mustTickets(t, matchmaking.Config{Queue: tickets.New(st.Base(), st.UserLogs(), st.Renewals()), Rules: rules,
						Consent: mode.consent(st)})
				})
				path := "/v1/matchmaking/tickets"
				ticket := func(tok string, party ...string) resp {
					t.Helper()
					return e.do("POST", path, tok, map[string]any{"mode": "big", "regions": []string{"eu"}, "partyUserIds": append([]string{}, party...)})
				}
				alice, aliceID := e.guest("alice")
				bob, bobID := e.guest("bob")
				carol, carolID := e.guest("carol")
				mode.give(e, bob, aliceID)
				for range 3 { // past the direct burst (2) if it were counted
					r := ticket(alice, bobID, carolID)
					want(t, r, 403, "PARTY_CONSENT_REQUIRED")
					if !strings.Contains(r.raw, "partyUserIds.1 "+mode.refusal) {
						t.Fatalf("detail %s", r.raw)
					}
				}
				// nothing claimed: bob queues on his own
				r := ticket(bob)
				want(t, r, 201, "")
				want(t, e.do("DELETE", r.header.Get("Location"), bob, nil), 204, "")
				// a consent is to that leader only
				want(t, ticket(bob, aliceID), 403, "PARTY_CONSENT_REQUIRED")
				mode.give(e, carol, aliceID)
				r = ticket(alice, bobID, carolID)
				want(t, r, 201, "")
				want(t, e.do("DELETE", r.header.Get("Location"), alice, nil), 204, "")
				// withdrawn by consenting to another leader
				mode.give(e, carol, bobID)
				r = ticket(alice, bobID, carolID)
				want(t, r, 403, "PARTY_CONSENT_REQUIRED")
				if !strings.Contains(r.raw, "partyUserIds.1 "+mode.refusal) {
					t.Fatalf("detail after carol's change %s", r.raw)
				}
			})
		}
	}
}

// TestTicketsKeepRoomQuotas: a match's room counts for its owner past the
// room quotas (the matcher makes it), so a ticket is refused when its
// leader could not own one more room or a user of it could not be in
// one more, and nothing is queued or claimed; two users queueing against
// each other again and again own no more rooms than the quota.
func TestTicketsKeepRoomQuotas(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		var checks atomic.Int32
		e := newEnvStore(t, b, store.Quotas{RoomsOwned: 2, RoomsJoined: 3}, &api.Auth{Secret: []byte("test-secret"), GuestEnabled: true},
			func(c *api.Config, st *store.Store, _ string) {
				c.Tickets = mustTickets(t, matchmaking.Config{Queue: tickets.New(st.Base(), st.UserLogs(), st.Renewals()),
					Quotas: countedQuotas{st, &checks}})
			})
		path := "/v1/matchmaking/tickets"
		alice, aliceID := e.guest("alice")
		bob, bobID := e.guest("bob")
		carol, carolID := e.guest("carol")
		ticket := func(tok string, party ...string) resp {
			t.Helper()
			return e.do("POST", path, tok, map[string]any{"mode": "duel", "regions": []string{"eu"}, "partyUserIds": append([]string{}, party...)})
		}
		create := func(tok string) string {
			t.Helper()
			r := e.do("POST", "/v1/rooms", tok, map[string]any{"name": "r", "mode": "other", "region": "eu"})
			want(t, r, 201, "")
			return r.body["room"].(map[string]any)["id"].(string)
		}

		// alice owns two rooms: she may not own a match's
		owned := []string{create(alice), create(alice)}
		r := ticket(alice)
		want(t, r, 409, "OWNED_ROOMS_LIMIT")
		if !strings.Contains(r.raw, "past your room quotas") {
			t.Fatalf("detail %s", r.raw)
		}
		// carol is in three rooms: she may not be in a match's, as
		// alice's party member or as a leader
		for _, id := range append(owned, create(bob)) {
			want(t, e.do("POST", "/v1/rooms/"+id+"/join", carol, nil), 200, "")
		}
		r = ticket(bob, carolID)
		want(t, r, 409, "JOINED_ROOMS_LIMIT")
		if !strings.Contains(r.raw, "quotas of the party member partyUserIds.0:") {
			t.Fatalf("detail %s", r.raw)
		}
		want(t, ticket(carol), 409, "JOINED_ROOMS_LIMIT")
		// nothing was claimed or queued: once alice and carol left a
		// room each, the same tickets queue
		want(t, e.do("POST", "/v1/rooms/"+owned[0]+"/leave", carol, nil), 204, "")
		want(t, e.do("POST", "/v1/rooms/"+owned[0]+"/leave", alice, nil), 204, "")
		for _, c := range []struct {
			tok   string
			party []string
		}{{bob, []string{carolID}}, {alice, nil}} {
			r := ticket(c.tok, c.party...)
			want(t, r, 201, "")
			want(t, e.do("DELETE", r.header.Get("Location"), c.tok, nil), 204, "")
		}

		// the quotas are checked once the users' claims are the new
		// ticket's (their previous tickets final, their match rooms
		// counted): a create refused TICKET_ACTIVE checks none
		r = ticket(alice)
		want(t, r, 201, "")
		before := checks.Load()
		want(t, ticket(alice), 409, "TICKET_ACTIVE")
		if n := checks.Load() - before; n != 0 {
			t.Fatalf("%d quota checks before the claims", n)
		}
		want(t, e.do("DELETE", r.header.Get("Location"), alice, nil), 204, "")

		// alice (one room owned) and bob (one) queue against each other
		// eight times: each match's room is its first ticket's leader's
		ts := tickets.New(e.store.Base(), e.store.UserLogs(), e.store.Renewals())
		m := matchmaking.NewMatcher(matchmaking.MatcherConfig{Config: matchmaking.Config{Queue: ts}, Rooms: e.store,
			Notifier: ts, Holder: "test"})
		refused := 0
		for range 8 {
			for _, tok := range []string{alice, bob} {
				switch r := ticket(tok); r.code() {
				case "OWNED_ROOMS_LIMIT":
					refused++
				case "TICKET_ACTIVE": // searching still: its other was refused
				default:
					want(t, r, 201, "")
				}
			}
			m.Round(context.Background())
		}
		if refused == 0 {
			t.Fatal("no ticket refused in eight rounds")
		}
		matches := 0
		for _, u := range []struct{ tok, id string }{{alice, aliceID}, {bob, bobID}} {
			r := e.do("GET", "/v1/me/rooms?limit=100", u.tok, nil)
			want(t, r, 200, "")
			n := 0
			for _, x := range r.body["rooms"].([]any) {
				room := x.(map[string]any)
				if room["playerId"] == room["ownerPlayerId"] {
					n++
				}
				if strings.HasPrefix(room["name"].(string), "match ") {
					matches++
				}
			}
			if n > 2 {
				t.Errorf("%s owns %d rooms, the quota is 2: %s", u.id, n, r.raw)
			}
		}
		if matches == 0 {
			t.Fatal("no match made")
		}
	})
}

// countedQuotas counts the checks of its RoomQuotas.
type countedQuotas struct {
	matchmaking.RoomQuotas
	n *atomic.Int32
}

func (q countedQuotas) MayHoldRoom(ctx context.Context, uid string, owner bool) error {
	q.n.Add(1)
	return q.RoomQuotas.MayHoldRoom(ctx, uid, owner)
}

// A keyed create sent again after its answer answers its ticket as it is
// now, counted on no limit again (a reviewer's find: with create=2/h the
// second re-send was 429 while the ticket searched), and, once the ticket
// is gone (its grace passed, dropped by a pass), 404 TICKET_NOT_FOUND: the
// key queues no second ticket for the same users. A new key queues one.
// Sent again when its answer was lost (no record kept: the key's claim
// lapsed), it answers the same, counted on no limit either.
func TestKeyedTicketSentAgain(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		const grace = time.Second
		var ts *tickets.Store
		e := limitedEnv(t, b, "create=2/h", func(c *api.Config, st *store.Store, _ string) {
			ts = tickets.New(st.Base(), st.UserLogs(), st.Renewals())
			c.Tickets = mustTickets(t, matchmaking.Config{Queue: ts, Grace: grace})
		})
		path := "/v1/matchmaking/tickets"
		carol, _ := e.guest("carol")
		body := map[string]any{"mode": "duel", "regions": []string{"eu"}, "rating": 3000}
		first := e.do("POST", path, carol, body, "Idempotency-Key", "k1")
		want(t, first, 201, "")
		id := first.body["ticket"].(map[string]any)["ticketId"]
		for i := range 3 {
			again := e.do("POST", path, carol, body, "Idempotency-Key", "k1")
			want(t, again, 201, "")
			if tk := again.body["ticket"].(map[string]any); again.header.Get("Idempotent-Replayed") != "true" || tk["ticketId"] != id || tk["status"] != "searching" {
				t.Fatalf("sent again (%d): %v %s", i, again.header, again.raw)
			}
		}
		// its answer lost (the key's claim lapsed: no record kept),
		// twice: the first run's ticket again, counted on no limit
		// (create=2/h: the second was 429 when each counted)
		for i := range 2 {
			if keys := e.idemKeys(); len(keys) != 1 || e.store.Client().Del(context.Background(), keys...).Err() != nil {
				t.Fatalf("records %v, want k1's", keys)
			}
			lost := e.do("POST", path, carol, body, "Idempotency-Key", "k1")
			want(t, lost, 201, "")
			if tk := lost.body["ticket"].(map[string]any); lost.header.Get("Idempotent-Replayed") != "true" || tk["ticketId"] != id {
				t.Fatalf("sent again, its answer lost (%d): %v %s", i, lost.header, lost.raw)
			}
		}
		want(t, e.do("DELETE", path+"/"+id.(string), carol, nil), 204, "")
		again := e.do("POST", path, carol, body, "Idempotency-Key", "k1")
		if tk := again.body["ticket"].(map[string]any); again.status != 201 || tk["status"] != "cancelled" {
			t.Fatalf("sent again after the cancel: %d %s", again.status, again.raw)
		}
		// past its grace a pass drops the ticket
		m := matchmaking.NewMatcher(matchmaking.MatcherConfig{Config: matchmaking.Config{Queue: ts, Grace: grace}, Rooms: e.store,
			Notifier: ts, Holder: "test"})
		deadline := time.Now().Add(15 * time.Second)
		for e.do("GET", path+"/"+id.(string), carol, nil).status != 404 {
			if time.Now().After(deadline) {
				t.Fatal("the cancelled ticket is still readable 15 s after its grace")
			}
			time.Sleep(200 * time.Millisecond)
			m.Round(context.Background())
		}
		gone := e.do("POST", path, carol, body, "Idempotency-Key", "k1")
		want(t, gone, 404, "TICKET_NOT_FOUND")
		if !strings.Contains(gone.raw, "send a new key") {
			t.Fatalf("the key's ticket gone: %s", gone.raw)
		}
		// a new key queues (the create limit's second)
		want(t, e.do("POST", path, carol, body, "Idempotency-Key", "k2"), 201, "")
	})
}
