package api_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/realsync/realsync/api"
	"github.com/realsync/realsync/internal/limits"
	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/matchmaking"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/store"
	"github.com/realsync/realsync/store/ratelimit"
	"github.com/realsync/realsync/store/tickets"
)

// limitedEnv is the API on backend b with the limits of spec
// (REALSYNC_RATE_LIMITS grammar) over the defaults; mut, when given,
// changes its configuration further.
func limitedEnv(t *testing.T, b redistest.Backend, spec string, mut ...func(c *api.Config, st *store.Store, prefix string)) *env {
	t.Helper()
	set, err := limits.Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	return newEnv(t, b, true, append([]func(*api.Config, *store.Store, string){func(c *api.Config, st *store.Store, prefix string) {
		c.RateLimiter = ratelimit.New(ratelimit.Config{Client: st.Client(), Prefix: prefix,
			RoomTag: st.RoomTag})
		c.RateLimits = set
	}}, mut...)...)
}

var retryAfterRe = regexp.MustCompile(`^[1-9][0-9]*$`)

// want429 checks a refusal's whole shape: status, code, problem+json,
// Retry-After (whole seconds ≥ 1, at most max), and the RateLimit headers
// naming the refusing policy with r=0.
func want429(t *testing.T, r resp, code, policy string, q, w, maxRetry int) {
	t.Helper()
	want(t, r, 429, code)
	ra := r.header.Get("Retry-After")
	if !retryAfterRe.MatchString(ra) {
		t.Fatalf("Retry-After %q", ra)
	}
	if n, _ := strconv.Atoi(ra); n > maxRetry {
		t.Fatalf("Retry-After %d, want ≤ %d", n, maxRetry)
	}
	wantPolicy := `"` + policy + `";q=` + strconv.Itoa(q) + ";w=" + strconv.Itoa(w)
	if p := r.header.Get("RateLimit-Policy"); !strings.Contains(p, wantPolicy) {
		t.Fatalf("RateLimit-Policy %q, want it to hold %s", p, wantPolicy)
	}
	if s := r.header.Get("RateLimit"); !regexp.MustCompile(`"` + regexp.QuoteMeta(policy) + `";r=0;t=[1-9][0-9]*`).MatchString(s) {
		t.Fatalf("RateLimit %q, want %q with r=0", s, policy)
	}
	if r.body["status"] != float64(429) || r.body["detail"] == "" || !strings.Contains(r.body["detail"].(string), "retry in "+ra+" s") {
		t.Fatalf("problem %v", r.body)
	}
}

func TestRateLimitPerUser(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		e := limitedEnv(t, b, "create=3/h")
		alice, _ := e.guest("alice")
		for i := range 3 {
			r := e.do("POST", "/v1/rooms", alice, arena)
			want(t, r, 201, "")
			if got, wantRL := r.header.Get("RateLimit"), `"create.user";r=`+strconv.Itoa(2-i)+";t="; !strings.HasPrefix(got, wantRL) {
				t.Fatalf("create %d: RateLimit %q, want it to start %s", i+1, got, wantRL)
			}
			if p := r.header.Get("RateLimit-Policy"); p != `"create.user";q=3;w=3600, "create.ip";q=60;w=30` {
				t.Fatalf("RateLimit-Policy %q", p)
			}
		}
		want429(t, e.do("POST", "/v1/rooms", alice, arena), "RATE_LIMITED", "create.user", 3, 3600, 1200)
		// another user from the same address has a budget of its own
		bob, _ := e.guest("bob")
		want(t, e.do("POST", "/v1/rooms", bob, arena), 201, "")
		// other classes are not touched
		want(t, e.do("GET", "/v1/rooms", alice, nil), 200, "")
		if v := e.scrape().value("realsync_rate_limited_total", "class", "create", "scope", "user"); v != 1 {
			t.Fatalf("realsync_rate_limited_total{create,user} = %v, want 1", v)
		}
	})
}

// Several users behind one address share its budget.
func TestRateLimitPerAddress(t *testing.T) {
	e := limitedEnv(t, redistest.Backend{Name: "standalone", URL: redistest.StandaloneURL(t)}, "read.ip=4/h")
	tokens := []string{}
	for _, n := range []string{"a", "b", "c"} {
		tok, _ := e.guest(n)
		tokens = append(tokens, tok)
	}
	for i := range 4 {
		want(t, e.do("GET", "/v1/lobby/stats", tokens[i%3], nil), 200, "")
	}
	want429(t, e.do("GET", "/v1/lobby/stats", tokens[1], nil), "RATE_LIMITED", "read.ip", 4, 3600, 900)
	if v := e.scrape().value("realsync_rate_limited_total", "class", "read", "scope", "ip"); v != 1 {
		t.Fatalf("metric = %v", v)
	}
}

// Requests without a valid token count on the address's auth limit: a
// token guesser gets 429, and so does the guest route from that address.
func TestRateLimitUnauthenticated(t *testing.T) {
	e := limitedEnv(t, redistestEmbedded, "auth=3/h")
	want(t, e.do("GET", "/v1/rooms", "", nil), 401, "UNAUTHENTICATED")
	want(t, e.do("GET", "/v1/rooms", "not-a-jwt", nil), 401, "UNAUTHENTICATED")
	e.guest("alice")
	want429(t, e.do("GET", "/v1/rooms", "forged.jwt.token", nil), "RATE_LIMITED", "auth.ip", 3, 3600, 1200)
	want429(t, e.do("POST", "/v1/auth/guest", "", map[string]any{}), "RATE_LIMITED", "auth.ip", 3, 3600, 1200)
}

// A user's inbox is rate limited as a room: direct messages to one user
// share the messages cap (a sender at most half of it), and invites count
// on the room's.
func TestDirectMessageRateLimit(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		e := limitedEnv(t, b, "messages=4/h")
		alice, _ := e.guest("alice")
		carol, _ := e.guest("carol")
		_, bobID := e.guest("bob")
		_, danID := e.guest("dan")
		msg := map[string]any{"type": "chat", "data": "hi"}
		for range 2 {
			want(t, e.do("POST", "/v1/users/"+bobID+"/messages", alice, msg), 202, "")
		}
		want429(t, e.do("POST", "/v1/users/"+bobID+"/messages", alice, msg), "ROOM_RATE_LIMITED", "messages.room", 4, 3600, 1800)
		want(t, e.do("POST", "/v1/users/"+danID+"/messages", alice, msg), 202, "") // another inbox
		for range 2 {
			want(t, e.do("POST", "/v1/users/"+bobID+"/messages", carol, msg), 202, "")
		}
		want429(t, e.do("POST", "/v1/users/"+bobID+"/messages", carol, msg), "ROOM_RATE_LIMITED", "messages.room", 4, 3600, 1800)
		// another spelling of bob's id is bob's inbox
		spelled := fmt.Sprintf("%%%02X", bobID[0]) + bobID[1:]
		want429(t, e.do("POST", "/v1/users/"+spelled+"/messages", carol, msg), "ROOM_RATE_LIMITED", "messages.room", 4, 3600, 1800)
		// invites count on the room and on the recipient's inbox
		_, erinID := e.guest("erin")
		_, frankID := e.guest("frank")
		id := e.create(alice, arena)["id"].(string)
		for range 2 {
			want(t, e.do("POST", "/v1/rooms/"+id+"/invites", alice, map[string]any{"userId": erinID}), 202, "")
		}
		want429(t, e.do("POST", "/v1/rooms/"+id+"/invites", alice, map[string]any{"userId": frankID}), "ROOM_RATE_LIMITED", "messages.room", 4, 3600, 1800)
		gus, _ := e.guest("gus")
		g := e.create(gus, arena)["id"].(string)
		want429(t, e.do("POST", "/v1/rooms/"+g+"/invites", gus, map[string]any{"userId": bobID}), "ROOM_RATE_LIMITED", "messages.room", 4, 3600, 1800)
		want(t, e.do("POST", "/v1/rooms/"+g+"/invites", gus, map[string]any{"userId": frankID}), 202, "")
	})
}

// A user's inbox keeps a share for the users they follow: strangers who
// used up the inbox's rate (4 an hour here, 2 from one sender) leave it
// whole for them, messages, invites and party tickets alike, each
// followed sender at most half of it too. Unfollowed, a sender counts
// with the strangers again. (Before, 20 accounts on each of 3 addresses
// kept a friend's messages refused half the time.)
func TestInboxKeepsAShareForFollowedSenders(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		e := limitedEnv(t, b, "messages=4/h")
		bob, bobID := e.guest("bob")
		carol, carolID := e.guest("carol")
		dan, danID := e.guest("dan")
		want(t, e.do("PUT", "/v1/me/following", bob, map[string]any{"userIds": []string{carolID, danID}}), 200, "")
		msg := map[string]any{"type": "chat", "data": "hi"}
		r := fillInboxFromStrangers(t, e, bobID, msg)
		if d, _ := r.body["detail"].(string); !strings.Contains(d, "to this user (a sender") {
			t.Fatalf("a stranger refused: %q, want it to name the user's inbox", d)
		}
		// carol, followed: a message and an invite; dan, followed: a party ticket
		want(t, e.do("POST", "/v1/users/"+bobID+"/messages", carol, msg), 202, "")
		room := e.create(carol, arena)["id"].(string)
		want(t, e.do("POST", "/v1/rooms/"+room+"/invites", carol, map[string]any{"userId": bobID}), 202, "")
		r = e.do("POST", "/v1/users/"+bobID+"/messages", carol, msg)
		want429(t, r, "ROOM_RATE_LIMITED", "messages.room", 4, 3600, 1800)
		if d, _ := r.body["detail"].(string); !strings.Contains(d, "from the users they follow") {
			t.Fatalf("a followed sender past half the share: %q, want it to name the share", d)
		}
		want(t, e.do("POST", "/v1/matchmaking/tickets", dan, map[string]any{"mode": "duel", "regions": []string{"eu"}, "partyUserIds": []string{bobID}}), 201, "")
		// unfollowed, dan counts with the strangers: refused
		want(t, e.do("PUT", "/v1/me/following", bob, map[string]any{"userIds": []string{carolID}}), 200, "")
		want429(t, e.do("POST", "/v1/users/"+bobID+"/messages", dan, msg), "ROOM_RATE_LIMITED", "messages.room", 4, 3600, 1800)
	})
}

// Direct messages and invites are counted on the sender's own "direct"
// limit, a chat's pace: what they send stays in other users' personal
// logs for REALSYNC_OFFLINE_TTL whether read or not, so the sender's
// write budget (20/s) let one player fill Redis by messaging made-up
// user ids (a tester: 24 a second from one guest, 5.6 KB of Redis each,
// kept 7 days). Other writes keep their own budget.
func TestDirectLimitPerSender(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		e := limitedEnv(t, b, "direct=3/h")
		alice, _ := e.guest("alice")
		msg := map[string]any{"type": "chat", "data": "hi"}
		id := e.create(alice, arena)["id"].(string)
		for i := range 3 { // each to another, made-up, inbox
			path := fmt.Sprintf("/v1/users/nobody-%d/messages", i)
			if i == 2 {
				want(t, e.do("POST", "/v1/rooms/"+id+"/invites", alice, map[string]any{"userId": "nobody-2"}), 202, "")
				continue
			}
			want(t, e.do("POST", path, alice, msg), 202, "")
		}
		want429(t, e.do("POST", "/v1/users/nobody-3/messages", alice, msg), "RATE_LIMITED", "direct.user", 3, 3600, 1200)
		want429(t, e.do("POST", "/v1/rooms/"+id+"/invites", alice, map[string]any{"userId": "nobody-4"}), "RATE_LIMITED", "direct.user", 3, 3600, 1200)
		// the room's own writes are not touched
		want(t, e.do("POST", "/v1/rooms/"+id+"/messages", alice, msg), 202, "")
		bob, _ := e.guest("bob")
		want(t, e.do("POST", "/v1/users/nobody-3/messages", bob, msg), 202, "")
		if v := e.scrape().value("realsync_rate_limited_total", "class", "direct", "scope", "user"); v != 2 {
			t.Fatalf("realsync_rate_limited_total{direct,user} = %v, want 2", v)
		}
	})
}

// writeKey makes an API key gs-1 of scope rooms:write: the key, and the
// keys file that holds it, loaded.
func writeKey(t *testing.T) (string, *api.APIKeys) {
	t.Helper()
	key, rec, err := api.NewAPIKey("gs-1", rooms.ScopeWrite)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "keys")
	if err := os.WriteFile(path, []byte(rec.Line()), 0o600); err != nil {
		t.Fatal(err)
	}
	keys, err := api.LoadAPIKeys(path, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return key, keys
}

// A game's server (an API key) notifies and invites players at a server's
// pace: its direct messages count on its write limits, not direct's.
func TestDirectLimitSparesAPIKeys(t *testing.T) {
	key, keys := writeKey(t)
	e := limitedEnv(t, redistestEmbedded, "direct=2/h,write=4/h", func(c *api.Config, _ *store.Store, _ string) {
		c.APIKeys = keys
	})
	msg := map[string]any{"type": "notice", "data": "hi"}
	for i := range 4 {
		r := e.do("POST", fmt.Sprintf("/v1/users/p-%d/messages", i), "", msg, "X-API-Key", key)
		want(t, r, 202, "")
		if p := r.header.Get("RateLimit-Policy"); !strings.Contains(p, `"write.user";q=4`) || strings.Contains(p, "direct") {
			t.Fatalf("an API key's message counted on %q, want write.user only", p)
		}
	}
	want429(t, e.do("POST", "/v1/users/p-4/messages", "", msg, "X-API-Key", key), "RATE_LIMITED", "write.user", 4, 3600, 900)
}

// A game's server (an API key) is no stranger to a user's inbox: strangers
// who used up the others' share of it leave the server's notices through
// (a tester's find: 3 of 82 of the server's messages were 429 during a
// flood). It counts, at most half, on the share of the senders the user
// follows.
func TestInboxSparesAPIKeysFromStrangers(t *testing.T) {
	key, keys := writeKey(t)
	e := limitedEnv(t, redistestEmbedded, "messages=4/h", func(c *api.Config, _ *store.Store, _ string) { c.APIKeys = keys })
	_, bobID := e.guest("bob")
	msg := map[string]any{"type": "chat", "data": "hi"}
	fillInboxFromStrangers(t, e, bobID, msg)
	for range 2 {
		want(t, e.do("POST", "/v1/users/"+bobID+"/messages", "", msg, "X-API-Key", key), 202, "")
	}
	want429(t, e.do("POST", "/v1/users/"+bobID+"/messages", "", msg, "X-API-Key", key), "ROOM_RATE_LIMITED", "messages.room", 4, 3600, 1800)
}

// A room's message cap is shared by its members; one member gets at most
// half of it, and its refused messages do not use up the others' part.
func TestRoomRateLimit(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		e := limitedEnv(t, b, "messages=6/h")
		alice, _ := e.guest("alice")
		bob, _ := e.guest("bob")
		id := e.create(alice, arena)["id"].(string)
		want(t, e.do("POST", "/v1/rooms/"+id+"/join", bob, nil), 200, "")
		msg := map[string]any{"type": "chat", "data": "hi"}
		for range 3 {
			want(t, e.do("POST", "/v1/rooms/"+id+"/messages", alice, msg), 202, "")
		}
		for range 5 {
			want429(t, e.do("POST", "/v1/rooms/"+id+"/messages", alice, msg), "ROOM_RATE_LIMITED", "messages.room", 6, 3600, 1200)
		}
		for range 3 {
			want(t, e.do("POST", "/v1/rooms/"+id+"/messages", bob, msg), 202, "")
		}
		want429(t, e.do("POST", "/v1/rooms/"+id+"/messages", bob, msg), "ROOM_RATE_LIMITED", "messages.room", 6, 3600, 1200)
		// state patches have a cap of their own
		r := e.do("PATCH", "/v1/rooms/"+id+"/state", alice, `{"a":1}`, "Content-Type", "application/merge-patch+json")
		want(t, r, 200, "")
		if v := e.scrape().value("realsync_rate_limited_total", "class", "messages", "scope", "room"); v != 6 {
			t.Fatalf("metric = %v, want 6", v)
		}
	})
}

// Requests refused otherwise take nothing from a room's (or an inbox's)
// budget: strangers' messages, patches and invites (403 NOT_A_MEMBER in a
// public room, 404 in a private one) and malformed ones leave the members
// their whole share, and the invited user's inbox its whole budget.
func TestRoomRateLimitSparedByRefusals(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		e := limitedEnv(t, b, "messages=6/h,patches=6/h")
		alice, _ := e.guest("alice")
		bob, bobID := e.guest("bob")
		pub := e.create(alice, arena)["id"].(string)
		priv := e.create(alice, map[string]any{"name": "Secret", "mode": "battle", "region": "eu", "maxPlayers": 4, "visibility": "private"})["id"].(string)
		msg := map[string]any{"type": "chat", "data": "hi"}
		patch := func(room, token string) resp {
			return e.do("PATCH", "/v1/rooms/"+room+"/state", token, `{"a":1}`, "Content-Type", "application/merge-patch+json")
		}
		for i := range 3 {
			stranger, _ := e.guest(fmt.Sprint("stranger", i))
			for range 4 {
				want(t, e.do("POST", "/v1/rooms/"+pub+"/messages", stranger, msg), 403, "NOT_A_MEMBER")
				want(t, e.do("POST", "/v1/rooms/"+priv+"/messages", stranger, msg), 404, "ROOM_NOT_FOUND")
				want(t, patch(pub, stranger), 403, "NOT_A_MEMBER")
				want(t, patch(priv, stranger), 404, "ROOM_NOT_FOUND")
				want(t, e.do("POST", "/v1/rooms/"+pub+"/invites", stranger, map[string]any{"userId": bobID}), 403, "NOT_A_MEMBER")
			}
		}
		want(t, e.do("POST", "/v1/rooms/"+pub+"/messages", alice, map[string]any{"type": "chat"}), 422, "VALIDATION_FAILED")
		for range 3 { // a malformed If-Match, answered by the handler
			want(t, e.do("PATCH", "/v1/rooms/"+pub+"/state", alice, `{"a":1}`, "Content-Type", "application/merge-patch+json", "If-Match", "1"), 422, "VALIDATION_FAILED")
		}
		// malformed headers, answered before the route's middlewares
		for i := range 3 {
			stranger, _ := e.guest(fmt.Sprint("header", i))
			for range 3 {
				r := e.do("POST", "/v1/rooms/"+pub+"/messages", stranger, msg, "Idempotency-Key", "a", "Idempotency-Key", "b")
				if r.status != 400 && r.status != 422 {
					t.Fatalf("two Idempotency-Keys: %d %s", r.status, r.raw)
				}
				r = e.do("PATCH", "/v1/rooms/"+pub+"/state", stranger, `{"a":1}`, "Content-Type", "application/merge-patch+json", "If-Match", `"1"`, "If-Match", `"2"`)
				if r.status != 400 && r.status != 422 {
					t.Fatalf("two If-Matches: %d %s", r.status, r.raw)
				}
			}
		}
		// every member's share is whole: half the room's 6
		for _, room := range []string{pub, priv} {
			for range 3 {
				want(t, e.do("POST", "/v1/rooms/"+room+"/messages", alice, msg), 202, "")
				want(t, patch(room, alice), 200, "")
			}
			want429(t, e.do("POST", "/v1/rooms/"+room+"/messages", alice, msg), "ROOM_RATE_LIMITED", "messages.room", 6, 3600, 1200)
		}
		want(t, e.do("POST", "/v1/rooms/"+pub+"/join", bob, nil), 200, "")
		for range 3 {
			want(t, e.do("POST", "/v1/rooms/"+pub+"/messages", bob, msg), 202, "")
		}
		// bob's inbox: the strangers' 12 refused invites took none of it
		carol, _ := e.guest("carol")
		dan, _ := e.guest("dan")
		for _, from := range []string{carol, dan} {
			for range 3 {
				want(t, e.do("POST", "/v1/users/"+bobID+"/messages", from, msg), 202, "")
			}
		}
	})
}

// Stream opens per user per minute: STREAM_OPENS_LIMITED, for the room's
// and the lobby's streams alike.
func TestStreamOpensLimited(t *testing.T) {
	e := limitedEnv(t, redistestEmbedded, "opens=3/h")
	alice, _ := e.guest("alice")
	id := e.create(alice, arena)["id"].(string)
	for _, p := range []string{"/v1/lobby/events", "/v1/rooms/" + id + "/events", "/v1/lobby/events"} {
		e.open(p, "Authorization", "Bearer "+alice).close()
	}
	for _, p := range []string{"/v1/lobby/events", "/v1/rooms/" + id + "/events"} {
		want429(t, e.do("GET", p, alice, nil), "STREAM_OPENS_LIMITED", "opens.user", 3, 3600, 1200)
	}
	bob, _ := e.guest("bob")
	e.open("/v1/lobby/events", "Authorization", "Bearer "+bob).close()
}

// A stream open refused by another limit (the stream class's) takes
// nothing from the opens: each refusal shows the opens' budget whole but
// for its own take, handed back after (a tester's find: 30 refused opens
// used up the opens' burst, and the next opens waited on it).
func TestStreamOpenRefusedElsewhereKeepsTheOpens(t *testing.T) {
	e := limitedEnv(t, redistestEmbedded, "opens=3/h,stream.user=2/h")
	alice, _ := e.guest("alice")
	id := e.create(alice, arena)["id"].(string)
	for range 2 {
		want(t, e.do("POST", "/v1/rooms/"+id+"/stream-token", alice, nil), 201, "")
	}
	for i := range 4 {
		r := e.do("GET", "/v1/rooms/"+id+"/events", alice, nil)
		want(t, r, 429, "RATE_LIMITED")
		if got := r.header.Get("RateLimit"); !strings.Contains(got, `"opens.user";r=2;`) {
			t.Fatalf("refused open %d: RateLimit %q, want the opens at 2 (3 less this one's take, the others' handed back)", i+1, got)
		}
	}
}

// Only wrong invite codes count as guesses: a right code never uses the
// budget; once it is used, even a right code waits.
func TestCodeGuessesLimited(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		e := limitedEnv(t, b, "guess=2/h")
		alice, _ := e.guest("alice")
		bob, _ := e.guest("bob")
		code := e.create(alice, map[string]any{"name": "Secret", "mode": "battle", "region": "eu", "maxPlayers": 4, "visibility": "private"})["inviteCode"].(string)
		for range 4 {
			want(t, e.do("POST", "/v1/rooms/join-by-code", bob, map[string]any{"inviteCode": code}), 200, "")
		}
		for range 2 {
			want(t, e.do("POST", "/v1/rooms/join-by-code", bob, map[string]any{"inviteCode": "ZZZZZZ"}), 404, "ROOM_NOT_FOUND")
		}
		want429(t, e.do("POST", "/v1/rooms/join-by-code", bob, map[string]any{"inviteCode": "ZZZZZZ"}), "CODE_GUESSES_LIMITED", "guess.user", 2, 3600, 1800)
		want429(t, e.do("POST", "/v1/rooms/join-by-code", bob, map[string]any{"inviteCode": code}), "CODE_GUESSES_LIMITED", "guess.user", 2, 3600, 1800)
		// the address' guesses: 2 wrong ones so far of its 30 (the refused
		// ones were handed back)
		carol, _ := e.guest("carol")
		want(t, e.do("POST", "/v1/rooms/join-by-code", carol, map[string]any{"inviteCode": "ZZZZZZ"}), 404, "ROOM_NOT_FOUND")
		if s := e.do("POST", "/v1/rooms/join-by-code", carol, map[string]any{"inviteCode": "ZZZZZZ"}).header.Get("RateLimit"); !strings.Contains(s, `"guess.ip";r=26;`) {
			t.Fatalf("RateLimit %q, want guess.ip r=26 (30 less 4 wrong codes)", s)
		}
	})
}

// Guest accounts made from one address are limited on their own (every
// per-user bound is per account); a guest's refresh is not one.
func TestGuestsLimited(t *testing.T) {
	e := limitedEnv(t, redistestEmbedded, "guests=2/h")
	alice, _ := e.guest("alice")
	e.guest("bob")
	want429(t, e.do("POST", "/v1/auth/guest", "", map[string]any{"name": "carol"}), "GUESTS_LIMITED", "guests.ip", 2, 3600, 1800)
	r := e.do("POST", "/v1/auth/refresh", alice, nil)
	want(t, r, 201, "")
	if p := r.header.Get("RateLimit-Policy"); strings.Contains(p, "guests") {
		t.Fatalf("a refresh counted on the guests limit: %s", p)
	}
	if v := e.scrape().value("realsync_rate_limited_total", "class", "guests", "scope", "ip"); v != 1 {
		t.Fatalf("realsync_rate_limited_total{guests,ip} = %v, want 1", v)
	}
}

// A ticket's party counts as the leader's invites to each member (a match
// writes match_found to every member's personal log): each member on the
// leader's direct limit and on the member's inbox, made-up ids too; a
// refused ticket is not queued.
func TestPartyCountsAsInvites(t *testing.T) {
	e := limitedEnv(t, redistestEmbedded, "direct=2/h,messages=4/h")
	path := "/v1/matchmaking/tickets"
	ticket := func(tok string, party ...string) resp {
		t.Helper()
		return e.do("POST", path, tok, map[string]any{"mode": "duel", "regions": []string{"eu"}, "partyUserIds": append([]string{}, party...)})
	}
	queued := func(tok string, party ...string) {
		t.Helper()
		r := ticket(tok, party...)
		want(t, r, 201, "")
		want(t, e.do("DELETE", r.header.Get("Location"), tok, nil), 204, "")
	}
	alice, _ := e.guest("alice")
	queued(alice, "made-up-1")
	queued(alice, "made-up-2")
	want429(t, ticket(alice, "made-up-3"), "RATE_LIMITED", "direct.user", 2, 3600, 1800)
	queued(alice) // not queued, not claimed: a ticket of her own still may be
	// bob's inbox takes 4 an hour, 2 from one sender: two senders' tickets
	// naming him take it all, and then a third sender's ticket or message
	_, bobID := e.guest("bob")
	for _, name := range []string{"carol", "dave"} {
		tok, _ := e.guest(name)
		queued(tok, bobID)
		queued(tok, bobID)
	}
	erin, _ := e.guest("erin")
	if r := ticket(erin, bobID); r.status != 429 || r.code() != "ROOM_RATE_LIMITED" {
		t.Fatalf("a fifth ticket naming bob: %d %s", r.status, r.raw)
	}
	want(t, e.do("POST", "/v1/users/"+bobID+"/messages", erin, map[string]any{"type": "chat", "data": map[string]any{"text": "hi"}}), 429, "ROOM_RATE_LIMITED")
}

// A party larger than the leader's direct burst still queues (its first
// burst of members counted on direct, every member on their inbox), and
// a party refused takes nothing from the leader's direct limit: waiting
// and sending it again gets through once there is room for it.
func TestPartyPastTheDirectBurst(t *testing.T) {
	rules, err := matchmaking.ParseRules([]byte("modes:\n  big: {minPlayers: 2, maxPlayers: 8}\n"))
	if err != nil {
		t.Fatal(err)
	}
	e := limitedEnv(t, redistestEmbedded, "direct=3/h", func(c *api.Config, st *store.Store, _ string) {
		c.Tickets = mustTickets(t, matchmaking.Config{Queue: tickets.New(st.Base(), st.UserLogs(), st.Renewals()), Rules: rules})
	})
	ticket := func(tok string, party ...string) resp {
		return e.do("POST", "/v1/matchmaking/tickets", tok, map[string]any{"mode": "big", "regions": []string{"eu"}, "partyUserIds": party})
	}
	// carol's party of 4, past her burst of 3, queues
	carol, _ := e.guest("carol")
	r := ticket(carol, "m1", "m2", "m3", "m4")
	want(t, r, 201, "")
	wantRouteHeaders(t, r, "join")
	// alice has 1 of 3 left: her party of 2 takes it for its first member,
	// is refused on the second, and gives it back
	alice, _ := e.guest("alice")
	_, bobID := e.guest("bob")
	msg := map[string]any{"type": "chat", "data": map[string]any{"text": "hi"}}
	for range 2 {
		want(t, e.do("POST", "/v1/users/"+bobID+"/messages", alice, msg), 202, "")
	}
	want429(t, ticket(alice, "m5", "m6"), "RATE_LIMITED", "direct.user", 3, 3600, 1200)
	want(t, e.do("POST", "/v1/users/"+bobID+"/messages", alice, msg), 202, "")
	want429(t, e.do("POST", "/v1/users/"+bobID+"/messages", alice, msg), "RATE_LIMITED", "direct.user", 3, 3600, 1200)
}

// A quick-join that offers to create its room counts on create too, as a
// POST /v1/rooms does: past the limit it is 429 and creates nothing, while
// a quick-join without create is counted on join alone. The count is
// given back when it joined a room, or was refused (422), so quick-joins
// that only join never use up the creates.
func TestQuickJoinCreatesCountOnCreate(t *testing.T) {
	e := limitedEnv(t, redistestEmbedded, "create=2/h")
	path := "/v1/matchmaking/quick-join"
	quick := func(tok string, create map[string]any, hdr ...string) resp {
		body := map[string]any{"mode": "battle", "regions": []string{"eu"}}
		if create != nil {
			body["create"] = create
		}
		return e.do("POST", path, tok, body, hdr...)
	}
	mine := map[string]any{"name": "Mine", "maxPlayers": 4}
	alice, _ := e.guest("alice")
	for i := range 2 {
		var hdr []string
		if i == 1 { // the answer recorded, then sent: the same headers
			hdr = []string{"Idempotency-Key", "qj-1"}
		}
		r := quick(alice, mine, hdr...)
		want(t, r, 201, "")
		wantRouteHeaders(t, r, "join")
		want(t, e.do("DELETE", "/v1/rooms/"+r.body["room"].(map[string]any)["id"].(string), alice, nil), 204, "")
	}
	want429(t, quick(alice, mine), "RATE_LIMITED", "create.user", 2, 3600, 1800)
	want(t, e.do("POST", "/v1/rooms", alice, arena), 429, "RATE_LIMITED")
	if r := e.do("GET", "/v1/me/rooms", alice, nil); len(r.body["rooms"].([]any)) != 0 {
		t.Fatalf("alice is in rooms after a refused quick-join: %s", r.raw)
	}
	want(t, quick(alice, nil), 404, "NO_MATCH") // join only: not counted on create

	// bob's quick-joins that join carol's room, and one refused, give
	// their counts back: his two creates are still his
	carol, _ := e.guest("carol")
	want(t, quick(carol, map[string]any{"name": "Open", "maxPlayers": 8}), 201, "")
	bob, _ := e.guest("bob")
	for range 3 {
		want(t, quick(bob, mine), 200, "")
	}
	want(t, quick(bob, map[string]any{"name": "Bad", "maxPlayers": 0}), 422, "VALIDATION_FAILED")
	for range 2 {
		want(t, e.do("POST", "/v1/rooms", bob, arena), 201, "")
	}
	want429(t, e.do("POST", "/v1/rooms", bob, arena), "RATE_LIMITED", "create.user", 2, 3600, 1800)
}

// A matchmaking ticket counts on create too (its match may make a room
// its leader owns: a party ticket of a made-up id is a whole match of 2):
// past the limit it is 429 and nothing is queued; a ticket refused (its
// party refused, or 409 once counted) gives the count back, and its
// party's direct counts too; one not valid (422) counts on neither.
func TestTicketsCountOnCreate(t *testing.T) {
	e := limitedEnv(t, redistestEmbedded, "create=2/h,direct=1/h")
	ticket := func(tok string, regions []string, party ...string) resp {
		return e.do("POST", "/v1/matchmaking/tickets", tok, map[string]any{"mode": "duel", "regions": regions, "partyUserIds": append([]string{}, party...)})
	}
	alice, _ := e.guest("alice")
	want(t, ticket(alice, []string{"EU!"}), 422, "VALIDATION_FAILED") // given back
	r := ticket(alice, []string{"eu"}, "made-up-1")                   // takes alice's one direct count
	want(t, r, 201, "")
	wantRouteHeaders(t, r, "join")
	want(t, e.do("DELETE", r.header.Get("Location"), alice, nil), 204, "")
	for range 3 { // her party refused: each create count given back
		want429(t, ticket(alice, []string{"eu"}, "made-up-2"), "RATE_LIMITED", "direct.user", 1, 3600, 3600)
	}
	r = ticket(alice, []string{"eu"})
	want(t, r, 201, "")
	want(t, e.do("DELETE", r.header.Get("Location"), alice, nil), 204, "")
	want429(t, ticket(alice, []string{"eu"}), "RATE_LIMITED", "create.user", 2, 3600, 1800)

	// bob's party ticket refused TICKET_ACTIVE hands back his one direct
	// count: once his solo ticket is cancelled, it queues
	bob, _ := e.guest("bob")
	solo := ticket(bob, []string{"eu"})
	want(t, solo, 201, "")
	want(t, ticket(bob, []string{"eu"}, "made-up-4"), 409, "TICKET_ACTIVE")
	want(t, e.do("DELETE", solo.header.Get("Location"), bob, nil), 204, "")
	want(t, ticket(bob, []string{"eu"}, "made-up-4"), 201, "")
}

// wantRouteHeaders checks r carries one RateLimit-Policy and one RateLimit
// header, both of the route's limit class alone (a handler's further
// counts are not the ones sent).
func wantRouteHeaders(t *testing.T, r resp, class string) {
	t.Helper()
	for _, h := range []string{"RateLimit-Policy", "RateLimit"} {
		v := r.header.Values(h)
		if len(v) != 1 || !strings.HasPrefix(v[0], `"`+class+`.user"`) || strings.Count(v[0], `"`) != 4 {
			t.Fatalf("%s %q, want one of %s.user and %s.ip alone", h, v, class, class)
		}
	}
}

// REALSYNC_RATE_LIMITS=off: no limit, no header.
func TestRateLimitsOff(t *testing.T) {
	e := limitedEnv(t, redistestEmbedded, "off")
	alice, _ := e.guest("alice")
	for range 30 {
		r := e.do("POST", "/v1/rooms", alice, arena)
		want(t, r, 201, "")
		if r.header.Get("RateLimit") != "" || r.header.Get("RateLimit-Policy") != "" {
			t.Fatalf("headers with limits off: %v", r.header)
		}
	}
}

// fillInboxFromStrangers sends msg to user to from two strangers, twice
// each, filling its inbox's strangers' bucket (messages=4/h), and returns
// a third stranger's send, checked refused 429 ROOM_RATE_LIMITED.
func fillInboxFromStrangers(t *testing.T, e *env, to string, msg map[string]any) resp {
	t.Helper()
	for _, name := range []string{"mallory", "trudy"} {
		tok, _ := e.guest(name)
		for range 2 {
			want(t, e.do("POST", "/v1/users/"+to+"/messages", tok, msg), 202, "")
		}
	}
	eve, _ := e.guest("eve")
	r := e.do("POST", "/v1/users/"+to+"/messages", eve, msg)
	want429(t, r, "ROOM_RATE_LIMITED", "messages.room", 4, 3600, 1800)
	return r
}
