package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/realsync/realsync"
	"github.com/realsync/realsync/api"
	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/store"
)

// keyEnv is an env with API keys: one per scope and one with all of them.
type keyEnv struct {
	*env
	read, write, admin, all string
}

// newKeyEnv starts the API with the keys on backend b, with the store's
// quotas q when given.
func newKeyEnv(t *testing.T, b redistest.Backend, q ...store.Quotas) *keyEnv {
	t.Helper()
	ke := &keyEnv{}
	var lines []string
	for _, k := range []struct {
		out    *string
		id     string
		scopes rooms.Scope
	}{{&ke.read, "reader", rooms.ScopeRead}, {&ke.write, "writer", rooms.ScopeWrite}, {&ke.admin, "admin", rooms.ScopeAdmin},
		{&ke.all, "gs-1", rooms.ScopeRead | rooms.ScopeWrite | rooms.ScopeAdmin}} {
		key, rec, err := api.NewAPIKey(k.id, k.scopes)
		if err != nil {
			t.Fatal(err)
		}
		*k.out = key
		lines = append(lines, rec.Line())
	}
	path := filepath.Join(t.TempDir(), "keys")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	keys, err := api.LoadAPIKeys(path, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var quotas store.Quotas
	if len(q) > 0 {
		quotas = q[0]
	}
	ke.env = newEnvStore(t, b, quotas, &api.Auth{Secret: []byte("test-secret"), GuestEnabled: true},
		func(c *api.Config, _ *store.Store, _ string) { c.APIKeys = keys })
	return ke
}

func eachKeyBackend(t *testing.T, f func(t *testing.T, e *keyEnv)) {
	for _, b := range redistest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) { f(t, newKeyEnv(t, b)) })
	}
}

// key sends the API key as X-API-Key (the other way, as a bearer token, is
// e.do's token).
func (e *keyEnv) key(method, path, key string, body any) resp {
	e.t.Helper()
	return e.do(method, path, "", body, "X-API-Key", key)
}

// Each scope opens exactly its routes, on any room, private ones included;
// player-only routes refuse every key; credentials are checked first.
func TestAPIKeyScopes(t *testing.T) {
	eachKeyBackend(t, func(t *testing.T, e *keyEnv) {
		alice, _ := e.guest("alice")
		bob, bobID := e.guest("bob")
		room := e.create(alice, map[string]any{"name": "Den", "mode": "battle", "region": "eu", "maxPlayers": 4, "visibility": "private"})
		id, code := room["id"].(string), room["inviteCode"].(string)
		want(t, e.do("POST", "/v1/rooms/join-by-code", bob, map[string]any{"inviteCode": code}), 200, "")
		want(t, e.do("POST", "/v1/rooms/"+id+"/messages", alice, map[string]any{"type": "dm", "data": 1, "to": []int{2}}), 202, "")

		// credentials
		want(t, e.key("GET", "/v1/rooms/"+id, "rsk_unknown", nil), 401, "UNAUTHENTICATED")
		want(t, e.do("GET", "/v1/rooms/"+id, "rsk_unknown", nil), 401, "UNAUTHENTICATED")
		want(t, e.do("GET", "/v1/rooms/"+id, alice, nil, "X-API-Key", e.read), 401, "UNAUTHENTICATED")
		// a key in a stream's URL, where a stream token goes: refused, saying
		// where it goes and that it leaked, however the key stands
		st := e.streamToken(alice, "/v1/rooms/"+id)
		for _, q := range []string{"access_token=" + e.read, "token=" + e.read, "token=rsk_unknown",
			"token=x&token=" + e.read, "token=" + st + "&token=" + e.read, "access_token=x&access_token=" + e.read} {
			r := e.do("GET", "/v1/rooms/"+id+"/events?"+q, "", nil)
			want(t, r, 401, "UNAUTHENTICATED")
			if d, _ := r.body["detail"].(string); !strings.Contains(d, "X-API-Key header") || !strings.Contains(d, "rotate this key") {
				t.Fatalf("?%s: %s", q, r.raw)
			}
		}

		// rooms:read, as X-API-Key and as a bearer token alike
		for _, r := range []resp{e.key("GET", "/v1/rooms/"+id, e.read, nil), e.do("GET", "/v1/rooms/"+id, e.read, nil)} {
			want(t, r, 200, "")
			if r.body["inviteCode"] != code || len(r.body["players"].([]any)) != 2 {
				t.Fatalf("private room as the server: %s", r.raw)
			}
			if strings.Contains(r.raw, bobID) {
				t.Fatal("a user id shows")
			}
		}
		want(t, e.key("GET", "/v1/rooms/"+id+"/state", e.read, nil), 200, "")
		msgs := e.key("GET", "/v1/rooms/"+id+"/messages", e.read, nil)
		want(t, msgs, 200, "")
		if n := len(msgs.body["messages"].([]any)); n != 1 {
			t.Fatalf("the server sees %d messages, want the one to player 2: %s", n, msgs.raw)
		}
		want(t, e.key("GET", "/v1/rooms", e.read, nil), 200, "")
		want(t, e.key("GET", "/v1/lobby/stats", e.read, nil), 200, "")
		for _, c := range []struct{ method, path string }{
			{"PATCH", "/v1/rooms/" + id + "/state"}, {"POST", "/v1/rooms/" + id + "/messages"},
			{"PATCH", "/v1/rooms/" + id}, {"DELETE", "/v1/rooms/" + id}, {"DELETE", "/v1/rooms/" + id + "/players/2"},
		} {
			r := e.key(c.method, c.path, e.read, map[string]any{})
			want(t, r, 403, "SCOPE_REQUIRED")
			if !strings.Contains(r.body["detail"].(string), "rooms:") {
				t.Errorf("%s %s: the detail names no scope: %s", c.method, c.path, r.raw)
			}
		}

		// rooms:write
		want(t, e.do("PATCH", "/v1/rooms/"+id+"/state", "", map[string]any{"phase": "boss"}, "X-API-Key", e.write), 200, "")
		want(t, e.key("POST", "/v1/rooms/"+id+"/messages", e.write, map[string]any{"type": "hint", "data": 1, "to": []int{2}}), 202, "")
		want(t, e.key("POST", "/v1/rooms/"+id+"/messages", e.write, map[string]any{"type": "hint", "data": 1, "to": []int{7}}), 422, "VALIDATION_FAILED")
		upd := e.key("PATCH", "/v1/rooms/"+id, e.write, map[string]any{"locked": true})
		want(t, upd, 200, "")
		if upd.body["locked"] != true {
			t.Fatalf("update: %s", upd.raw)
		}
		for _, path := range []string{"/v1/rooms/" + id, "/v1/rooms/" + id + "/state", "/v1/rooms/" + id + "/messages", "/v1/rooms", "/v1/lobby/stats"} {
			want(t, e.key("GET", path, e.write, nil), 403, "SCOPE_REQUIRED")
		}
		want(t, e.key("DELETE", "/v1/rooms/"+id, e.write, nil), 403, "SCOPE_REQUIRED")

		// player tokens never act as the server
		want(t, e.do("PATCH", "/v1/rooms/"+id+"/state", bob, map[string]any{"phase": "x"}), 403, "STATE_KEY_FORBIDDEN")
		want(t, e.do("DELETE", "/v1/rooms/"+id+"/players/1", bob, nil), 403, "NOT_OWNER")
		want(t, e.do("DELETE", "/v1/rooms/"+id, bob, nil), 403, "NOT_OWNER")
		carol, _ := e.guest("carol")
		want(t, e.do("GET", "/v1/rooms/"+id, carol, nil), 404, "ROOM_NOT_FOUND")

		// player-only routes refuse every key, even one with every scope
		for _, c := range []struct {
			method, path string
			body         any
		}{
			{"POST", "/v1/rooms", map[string]any{"name": "x", "mode": "battle", "region": "eu"}},
			{"POST", "/v1/rooms/" + id + "/join", nil}, {"POST", "/v1/rooms/" + id + "/leave", nil},
			{"POST", "/v1/rooms/join-by-code", map[string]any{"inviteCode": code}},
			{"POST", "/v1/matchmaking/quick-join", map[string]any{"mode": "battle"}}, {"GET", "/v1/me/rooms", nil},
		} {
			r := e.key(c.method, c.path, e.all, c.body)
			want(t, r, 403, "SCOPE_REQUIRED")
			if !strings.Contains(r.body["detail"].(string), "player token") {
				t.Errorf("%s %s: %s", c.method, c.path, r.raw)
			}
		}

		// rooms:admin
		want(t, e.key("GET", "/v1/rooms/"+id, e.admin, nil), 403, "SCOPE_REQUIRED")
		want(t, e.key("DELETE", "/v1/rooms/"+id+"/players/1", e.admin, nil), 204, "") // even the owner
		want(t, e.key("DELETE", "/v1/rooms/"+id, e.admin, nil), 204, "")
		want(t, e.key("GET", "/v1/rooms/"+id, e.read, nil), 404, "ROOM_NOT_FOUND")

		// the access log names the key, never a user
		if !strings.Contains(e.logs.String(), `"user":"key:reader"`) {
			t.Error("no access line with user key:reader")
		}
	})
}

// The server's stream sees everything, messages to others included, with
// no presence of its own; its writes reach the members' streams as player 0.
func TestServerStreamAndWrites(t *testing.T) {
	eachKeyBackend(t, func(t *testing.T, e *keyEnv) {
		alice, _ := e.guest("alice")
		bob, _ := e.guest("bob")
		room := e.create(alice, map[string]any{"name": "Den", "mode": "battle", "region": "eu", "maxPlayers": 4, "visibility": "private"})
		id := room["id"].(string)
		want(t, e.do("POST", "/v1/rooms/join-by-code", bob, map[string]any{"inviteCode": room["inviteCode"]}), 200, "")

		srv := e.open("/v1/rooms/"+id+"/events", "X-API-Key", e.read)
		snap := srv.next()
		if snap.event != "snapshot" || snap.data["room"].(map[string]any)["inviteCode"] != room["inviteCode"] {
			t.Fatalf("server snapshot: %+v", snap)
		}
		want(t, e.key("GET", "/v1/rooms/"+id+"/events", e.write, nil), 403, "SCOPE_REQUIRED")
		mine := e.open("/v1/rooms/"+id+"/events", "Authorization", "Bearer "+alice)
		mine.next() // snapshot
		// alice's stream announces her; nothing announces the server
		if f := srv.next(); f.event != "player_connected" || f.data["playerId"].(float64) != 1 {
			t.Fatalf("server stream: %+v, want alice's player_connected", f)
		}
		want(t, e.do("POST", "/v1/rooms/"+id+"/messages", alice, map[string]any{"type": "dm", "data": 1, "to": []int{2}}), 202, "")
		if f := srv.next(); f.event != "message" {
			t.Fatalf("server stream: %+v, want alice's message to bob", f)
		}
		want(t, e.do("PATCH", "/v1/rooms/"+id+"/state", e.write, map[string]any{"boss": 1}), 200, "")
		want(t, e.key("POST", "/v1/rooms/"+id+"/messages", e.write, map[string]any{"type": "hint", "data": 2, "to": []int{2}}), 202, "")
		want(t, e.key("POST", "/v1/rooms/"+id+"/messages", e.write, map[string]any{"type": "all", "data": 3}), 202, "")
		for _, s := range []*stream{srv, mine} {
			var got []string
			for len(got) == 0 || got[len(got)-1] != "message all" {
				f := s.next()
				switch f.event {
				case "state":
					got = append(got, "state by "+fmtNum(f.data["by"]))
				case "message":
					m := f.data["message"].(map[string]any)
					got = append(got, "message "+m["type"].(string)+" from "+fmtNum(m["from"]))
					if m["type"] == "all" {
						got[len(got)-1] = "message all"
					}
				default:
					got = append(got, f.event)
				}
			}
			want := "message dm from 1,state by 0,message all" // alice sent the dm; the hint is bob's
			if s == srv {
				want = "state by 0,message hint from 0,message all"
			}
			if strings.Join(got, ",") != want {
				t.Errorf("stream saw %v, want %s", got, want)
			}
		}
		members := e.key("GET", "/v1/rooms/"+id, e.read, nil).body["players"].([]any)
		for _, p := range members {
			if p := p.(map[string]any); p["playerId"].(float64) == 2 && p["connected"] == true {
				t.Fatal("bob shows connected")
			}
		}
		if n, _ := e.store.Client().ZCard(context.Background(), e.store.RoomKeys(id)[0]+":presence").Result(); n != 1 {
			t.Fatalf("%d presence leases, want alice's only", n)
		}
	})
}

func fmtNum(v any) string {
	f, _ := v.(float64)
	return strconv.FormatFloat(f, 'f', -1, 64)
}

// Kick with ban over HTTP: by the owner or a rooms:admin key; rejoin,
// join-by-code BANNED; quick-join never places the user there; the ban is
// never shown; a bad ban value is 422.
// The server's streams (an API key's) hold no place among a user's open
// streams: a dedicated server may watch any number of rooms and the lobby,
// while a player stays held to REALSYNC_MAX_STREAMS_PER_USER.
func TestServerStreamsHoldNoPlace(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		e := newKeyEnv(t, b, store.Quotas{StreamsPerUser: 1})
		alice, _ := e.guest("alice")
		id := e.create(alice, map[string]any{"name": "Den", "mode": "battle", "region": "eu"})["id"].(string)
		for range 3 {
			e.open("/v1/rooms/"+id+"/events", "X-API-Key", e.read).next()
			e.open("/v1/lobby/events", "X-API-Key", e.read).next()
		}
		e.open("/v1/rooms/"+id+"/events", "Authorization", "Bearer "+alice).next()
		r := e.do("GET", "/v1/lobby/events", alice, nil)
		want(t, r, 429, "STREAM_LIMIT")
		if got := r.header.Get("Retry-After"); got != "5" {
			t.Errorf("STREAM_LIMIT Retry-After %q, want 5", got)
		}
	})
}

// Two Authorization (or X-API-Key) headers are refused, whichever comes
// first: which one a server uses would depend on the proxies on the way.
func TestOneCredentialHeader(t *testing.T) {
	e := newKeyEnv(t, redistestEmbedded)
	alice, _ := e.guest("alice")
	for _, tc := range []struct {
		name   string
		header string
		values []string
	}{
		{"PlayerThenJunk", "Authorization", []string{"Bearer " + alice, "Bearer junk"}},
		{"JunkThenPlayer", "Authorization", []string{"Bearer junk", "Bearer " + alice}},
		{"PlayerTwice", "Authorization", []string{"Bearer " + alice, "Bearer " + alice}},
		{"TwoKeys", "X-API-Key", []string{e.read, e.all}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest("GET", e.url+"/v1/lobby/stats", nil)
			for _, v := range tc.values {
				req.Header.Add(tc.header, v)
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			var p struct{ Code string }
			json.NewDecoder(res.Body).Decode(&p)
			res.Body.Close()
			if res.StatusCode != 401 || p.Code != "UNAUTHENTICATED" {
				t.Fatalf("%d %s, want 401 UNAUTHENTICATED", res.StatusCode, p.Code)
			}
		})
	}
}

func TestBanOverHTTP(t *testing.T) {
	eachKeyBackend(t, func(t *testing.T, e *keyEnv) {
		alice, _ := e.guest("alice")
		bob, bobID := e.guest("bob")
		pub := e.create(alice, arena)["id"].(string)
		want(t, e.do("POST", "/v1/rooms/"+pub+"/join", bob, nil), 200, "")
		for _, q := range []string{"maybe", "1", "t", "TRUE", "0", "F", "true&ban=true"} {
			want(t, e.do("DELETE", "/v1/rooms/"+pub+"/players/2?ban="+q, alice, nil), 422, "VALIDATION_FAILED")
		}
		want(t, e.do("DELETE", "/v1/rooms/"+pub+"/players/2?ban=true", bob, nil), 403, "NOT_OWNER")
		want(t, e.do("DELETE", "/v1/rooms/"+pub+"/players/2?ban=true", alice, nil), 204, "")
		want(t, e.do("POST", "/v1/rooms/"+pub+"/join", bob, nil), 403, "BANNED")
		want(t, e.do("POST", "/v1/matchmaking/quick-join", bob, map[string]any{"mode": "battle", "regions": []string{"eu"}}), 404, "NO_MATCH")
		q := e.do("POST", "/v1/matchmaking/quick-join", bob, map[string]any{"mode": "battle", "regions": []string{"eu"},
			"create": map[string]any{"name": "Mine", "maxPlayers": 2}})
		want(t, q, 201, "")
		if q.body["room"].(map[string]any)["id"] == pub {
			t.Fatal("quick-join placed bob in the room that banned him")
		}
		for _, r := range []resp{e.do("GET", "/v1/rooms/"+pub, alice, nil), e.key("GET", "/v1/rooms/"+pub, e.read, nil)} {
			if strings.Contains(r.raw, bobID) || strings.Contains(r.raw, "ban") {
				t.Fatalf("the ban shows: %s", r.raw)
			}
		}

		room := e.create(alice, map[string]any{"name": "Den", "mode": "battle", "region": "eu", "visibility": "private"})
		priv, code := room["id"].(string), room["inviteCode"]
		want(t, e.do("POST", "/v1/rooms/join-by-code", bob, map[string]any{"inviteCode": code}), 200, "")
		want(t, e.key("DELETE", "/v1/rooms/"+priv+"/players/2?ban=true", e.write, nil), 403, "SCOPE_REQUIRED")
		want(t, e.key("DELETE", "/v1/rooms/"+priv+"/players/2?ban=true", e.admin, nil), 204, "")
		want(t, e.do("POST", "/v1/rooms/join-by-code", bob, map[string]any{"inviteCode": code}), 403, "BANNED")
		want(t, e.do("POST", "/v1/rooms/"+priv+"/join", bob, nil), 404, "ROOM_NOT_FOUND")
	})
}

// Every operation of openapi.yaml that names x-api-key-scope is in the
// server's table with that scope, and no other route is: the contract and
// the code agree on which routes take a key.
func TestKeyScopesMatchSpec(t *testing.T) {
	pathRe := regexp.MustCompile(`^  (/\S*):$`)
	opRe := regexp.MustCompile(`^    (get|put|post|patch|delete):$`)
	scopeRe := regexp.MustCompile(`^      x-api-key-scope: (\S+)$`)
	spec := map[string]string{}
	var path, op string
	sc := bufio.NewScanner(strings.NewReader(string(realsync.OpenAPI)))
	for sc.Scan() {
		l := sc.Text()
		if m := pathRe.FindStringSubmatch(l); m != nil {
			path, op = m[1], ""
		} else if m := opRe.FindStringSubmatch(l); m != nil && path != "" {
			op = strings.ToUpper(m[1])
		} else if m := scopeRe.FindStringSubmatch(l); m != nil && op != "" {
			spec[op+" "+path] = m[1]
		} else if l == "components:" {
			break
		}
	}
	code := api.KeyRouteScopes()
	if len(spec) < 12 {
		t.Fatalf("only %d operations with x-api-key-scope read from openapi.yaml", len(spec))
	}
	for r, s := range spec {
		if code[r] != s {
			t.Errorf("%s: openapi.yaml says %s, the server %q", r, s, code[r])
		}
	}
	for r := range code {
		if _, ok := spec[r]; !ok {
			t.Errorf("%s takes a key but openapi.yaml has no x-api-key-scope for it", r)
		}
	}
}

// An event stream takes one credential: a stream token in the URL beside
// any header credential (an Authorization header, garbage or another
// user's valid token; an X-API-Key, valid or not) is refused, 401
// UNAUTHENTICATED as two headers are, and counts on the address's auth
// limit. It opened as the URL's user, or as the key's, whichever the header
// was (a proxy adding a header changed who the stream was opened as).
// Either credential alone opens the stream.
func TestStreamTakesOneCredential(t *testing.T) {
	e := newKeyEnv(t, redistestEmbedded)
	alice, _ := e.guest("alice")
	bob, _ := e.guest("bob")
	id := e.create(alice, map[string]any{"name": "r", "mode": "m", "region": "r"})["id"].(string)
	me := e.do("POST", "/v1/me/stream-token", alice, nil)
	want(t, me, 201, "")
	streams := map[string]string{
		"room":  "/v1/rooms/" + id + "/events?token=" + e.streamToken(alice, "/v1/rooms/"+id),
		"lobby": "/v1/lobby/events?token=" + e.streamToken(alice, "/v1/lobby/events"),
		"me":    "/v1/me/events?platform=web&token=" + me.body["token"].(string),
	}
	status := func(t *testing.T, path string, hdr ...string) (int, string) {
		t.Helper()
		s, res := e.tryOpen(path, hdr...)
		defer s.close()
		var p struct{ Code string }
		if res.StatusCode != 200 {
			json.NewDecoder(res.Body).Decode(&p)
		}
		return res.StatusCode, p.Code
	}
	for name, path := range streams {
		t.Run(name, func(t *testing.T) {
			for _, hdr := range [][]string{
				{"Authorization", "Bearer garbage"},
				{"Authorization", "Bearer " + bob},
				{"Authorization", "Bearer " + alice},
				{"Authorization", "Basic YTpi"},
				{"X-API-Key", e.all},
				{"X-API-Key", "rsk_not-a-key"},
			} {
				if got, code := status(t, path, hdr...); got != 401 || code != "UNAUTHENTICATED" {
					t.Errorf("?token= and %s: %.20s…: %d %s, want 401 UNAUTHENTICATED", hdr[0], hdr[1], got, code)
				}
			}
			if got, _ := status(t, path); got != 200 {
				t.Errorf("the stream token alone: %d, want 200", got)
			}
		})
	}
	if got, _ := status(t, "/v1/lobby/events", "Authorization", "Bearer "+alice); got != 200 {
		t.Errorf("the Authorization header alone: %d, want 200", got)
	}
	if got, _ := status(t, "/v1/lobby/events", "X-API-Key", e.all); got != 200 {
		t.Errorf("the X-API-Key alone: %d, want 200", got)
	}

	t.Run("counted on auth", func(t *testing.T) {
		e := limitedEnv(t, redistestEmbedded, "auth=5/h")
		alice, _ := e.guest("alice") // counts on auth
		path := "/v1/lobby/events?token=" + e.streamToken(alice, "/v1/lobby/events")
		for range 4 {
			s, res := e.tryOpen(path, "Authorization", "Bearer garbage")
			s.close()
			if res.StatusCode != 401 {
				t.Fatalf("?token= and Authorization: %d, want 401", res.StatusCode)
			}
		}
		s, res := e.tryOpen(path, "Authorization", "Bearer garbage")
		s.close()
		if res.StatusCode != 429 {
			t.Fatalf("the 5th refusal from one address (a guest token first): %d, want 429 RATE_LIMITED (auth.ip=5/h)", res.StatusCode)
		}
	})
}
