package api_test

import (
	"io"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/realsync/realsync/api"
	"github.com/realsync/realsync/store"
)

// Stream tokens: members only, one stream each, never a bearer token,
// one opening each, no way around membership.
func TestStreamTokens(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		alice, aliceID := e.guest("alice")
		bob, _ := e.guest("bob")
		eve, _ := e.guest("eve")
		pub := e.create(alice, map[string]any{"name": "r", "mode": "m", "region": "r"})["id"].(string)
		priv := e.create(alice, map[string]any{"name": "r", "mode": "m", "region": "r", "visibility": "private"})["id"].(string)
		want(t, e.do("POST", "/v1/rooms/"+pub+"/join", bob, nil), 200, "")

		r := e.do("POST", "/v1/rooms/"+pub+"/stream-token", alice, nil)
		want(t, r, 201, "")
		exp, err := time.Parse(time.RFC3339, r.body["expiresAt"].(string))
		if err != nil || time.Until(exp) > api.StreamTokenTTL || time.Until(exp) < api.StreamTokenTTL-5*time.Second {
			t.Errorf("expiresAt %v (%v)", r.body["expiresAt"], err)
		}
		if r.header.Get("Cache-Control") != "no-store" {
			t.Errorf("Cache-Control %q", r.header.Get("Cache-Control"))
		}
		pubToken := r.body["token"].(string)
		lobbyToken := e.streamToken(eve, "/v1/lobby/events")
		bobToken := e.streamToken(bob, "/v1/rooms/"+pub)

		refusals := []struct {
			name   string
			method string
			path   string
			bearer string
			status int
			code   string
		}{
			{"NoToken", "POST", "/v1/rooms/" + pub + "/stream-token", "", 401, "UNAUTHENTICATED"},
			{"NonMember", "POST", "/v1/rooms/" + pub + "/stream-token", eve, 403, "NOT_A_MEMBER"},
			{"NonMemberPrivate", "POST", "/v1/rooms/" + priv + "/stream-token", eve, 404, "ROOM_NOT_FOUND"},
			{"UnknownRoom", "POST", "/v1/rooms/00nothing0000000/stream-token", alice, 404, "ROOM_NOT_FOUND"},
			{"BadRoomID", "POST", "/v1/rooms/a.b/stream-token", alice, 404, "ROOM_NOT_FOUND"},
			{"LobbyNoToken", "POST", "/v1/lobby/stream-token", "", 401, "UNAUTHENTICATED"},
			{"AnotherRoom", "GET", "/v1/rooms/" + priv + "/events?token=" + pubToken, "", 401, "STREAM_TOKEN_REQUIRED"},
			{"RoomTokenOnLobby", "GET", "/v1/lobby/events?token=" + pubToken, "", 401, "STREAM_TOKEN_REQUIRED"},
			{"LobbyTokenOnRoom", "GET", "/v1/rooms/" + pub + "/events?token=" + lobbyToken, "", 401, "STREAM_TOKEN_REQUIRED"},
			{"AsBearer", "GET", "/v1/rooms/" + pub, pubToken, 401, "STREAM_TOKEN_REQUIRED"},
			{"AsBearerOnItsStream", "GET", "/v1/rooms/" + pub + "/events", pubToken, 401, "STREAM_TOKEN_REQUIRED"},
			{"AsBearerForAnother", "POST", "/v1/rooms/" + pub + "/stream-token", pubToken, 401, "STREAM_TOKEN_REQUIRED"},
			{"AsBearerToRefresh", "POST", "/v1/auth/refresh", lobbyToken, 401, "STREAM_TOKEN_REQUIRED"},
			{"RepeatedToken", "GET", "/v1/rooms/" + pub + "/events?token=" + pubToken + "&token=" + pubToken, "", 401, "UNAUTHENTICATED"},
			{"Tampered", "GET", "/v1/rooms/" + pub + "/events?token=" + tampered(pubToken), "", 401, "UNAUTHENTICATED"},
			{"RefreshNoToken", "POST", "/v1/auth/refresh", "", 401, "UNAUTHENTICATED"},
		}
		for _, c := range refusals {
			t.Run(c.name, func(t *testing.T) {
				var r resp
				if c.method == "GET" && strings.Contains(c.path, "/events") { // one that opens must not hang the test
					var hdr []string
					if c.bearer != "" {
						hdr = []string{"Authorization", "Bearer " + c.bearer}
					}
					r = e.refused(c.path, c.status, c.code, hdr...)
				} else {
					r = e.do(c.method, c.path, c.bearer, nil)
					want(t, r, c.status, c.code)
				}
				if c.status == 401 && r.header.Get("WWW-Authenticate") == "" {
					t.Error("401 without WWW-Authenticate")
				}
			})
		}
		if r := e.do("GET", "/v1/rooms/"+pub+"/events?token="+pubToken+"&token="+bobToken, "", nil); !strings.Contains(r.body["detail"].(string), "2 token parameters") {
			t.Errorf("the refusal of a repeated token does not say what is wrong: %s", r.raw)
		}
		if r := e.do("GET", "/v1/rooms/"+pub+"/events?access_token="+alice, "", nil); !strings.Contains(r.body["detail"].(string), "stream-token") {
			t.Errorf("the refusal of an identity token in the URL does not say what to do: %s", r.raw)
		}
		// each stream's refusal names the route of its own stream tokens,
		// and no other's, whether the token came as access_token or token
		routes := map[string]string{"/v1/rooms/" + pub + "/events": "POST /v1/rooms/{roomId}/stream-token",
			"/v1/lobby/events": "POST /v1/lobby/stream-token", "/v1/me/events?platform=pc": "POST /v1/me/stream-token"}
		for path, route := range routes {
			sep := "?"
			if strings.Contains(path, "?") {
				sep = "&"
			}
			for _, param := range []string{"access_token", "token"} {
				r := e.do("GET", path+sep+param+"="+alice, "", nil)
				want(t, r, 401, "STREAM_TOKEN_REQUIRED")
				d, _ := r.body["detail"].(string)
				for _, other := range routes {
					if strings.Contains(d, other) != (other == route) {
						t.Errorf("%s with an identity token as %s: detail %q, want it to name %s only", path, param, d, route)
					}
				}
			}
		}

		// A token opens its stream once: a reconnect with it, or its URL
		// replayed, is refused, while the stream is open and after.
		s := e.open("/v1/rooms/" + pub + "/events?token=" + pubToken)
		if f := s.next(); f.event != "snapshot" {
			t.Fatalf("first event %+v", f)
		}
		r = e.refused("/v1/rooms/"+pub+"/events?token="+pubToken, 401, "UNAUTHENTICATED")
		if d, _ := r.body["detail"].(string); !strings.Contains(d, "opens one stream, once") {
			t.Errorf("the refusal of a used stream token does not say why: %s", r.raw)
		}
		s.close()
		e.refused("/v1/rooms/"+pub+"/events?token="+pubToken, 401, "UNAUTHENTICATED")
		lobby := e.open("/v1/lobby/events?token=" + lobbyToken)
		if f := lobby.next(); f.event != "rooms" {
			t.Fatalf("lobby's first event %+v", f)
		}
		e.refused("/v1/lobby/events?token="+lobbyToken, 401, "UNAUTHENTICATED")
		// A stream token is no way around membership: kicked, bob's is
		// refused; a refusal does not use it, so it is refused the same
		// way when asked again (a client reading why its EventSource was
		// refused asks the same URL).
		want(t, e.do("DELETE", "/v1/rooms/"+pub+"/players/2", alice, nil), 204, "")
		for range 2 {
			e.refused("/v1/rooms/"+pub+"/events?token="+bobToken, 403, "NOT_A_MEMBER")
		}

		// Refresh keeps the user.
		r = e.do("POST", "/v1/auth/refresh", alice, nil)
		want(t, r, 201, "")
		if r.body["userId"] != aliceID || r.body["name"] != "alice" {
			t.Errorf("refreshed %v", r.body)
		}
		want(t, e.do("GET", "/v1/rooms/"+priv, r.body["token"].(string), nil), 200, "")
	})
}

// A stream ends before its identity token expires, with a token_expiring
// event; the client refreshes, fetches a stream token and resumes with
// Last-Event-ID, missing nothing. The server's clock is moved, not waited
// for: a token expiring in 40 s is checked 39 s later.
func TestStreamEndsBeforeTokenExpiry(t *testing.T) {
	var clock atomic.Int64
	clock.Store(time.Now().UnixNano())
	now := func() time.Time { return time.Unix(0, clock.Load()) }
	auth := &api.Auth{Secret: []byte("test-secret"), GuestEnabled: true, Leeway: 30 * time.Second, Now: now}
	// a lifetime, which the token's end comes before
	e := newEnvAuth(t, redistestEmbedded, auth, func(c *api.Config, _ *store.Store, _ string) { c.StreamLifetime = time.Hour })
	alice, aliceID := e.guest("alice")
	id := e.create(alice, map[string]any{"name": "r", "mode": "m", "region": "r", "statePolicy": "open"})["id"].(string)
	exp := now().Add(40 * time.Second).Truncate(time.Second)
	short := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.RegisteredClaims{Subject: aliceID,
		ExpiresAt: jwt.NewNumericDate(exp), IssuedAt: jwt.NewNumericDate(now())})
	short.Header["kid"] = "realsync"
	shortToken, err := short.SignedString(auth.Secret)
	if err != nil {
		t.Fatal(err)
	}
	clock.Add(int64(39 * time.Second)) // 1 s left: the stream ends within 0.5 s

	s := e.open("/v1/rooms/" + id + "/events?token=" + e.streamToken(shortToken, "/v1/rooms/"+id))
	lobby := e.open("/v1/lobby/events", "Authorization", "Bearer "+shortToken) // header: the same end
	last := s.next()                                                           // the last event before the end: the client resumes after it
	if last.event != "snapshot" {
		t.Fatalf("first event %+v", last)
	}
	for _, st := range []*stream{s, lobby} {
		f := st.next()
		for f.event != "token_expiring" && f.id != "" || f.event == "rooms" {
			if st == s {
				last = f
			}
			f = st.next()
		}
		if f.event != "token_expiring" || f.id != "" || f.data["expiresAt"] != exp.UTC().Format("2006-01-02T15:04:05Z") {
			t.Fatalf("want token_expiring without id, got %+v", f)
		}
		if _, err := io.ReadAll(st.rd); err != nil {
			t.Fatalf("the stream did not end cleanly: %v", err)
		}
	}
	if now().After(exp) {
		t.Fatal("the clock passed the expiry")
	}
	// Meanwhile, a change the client has not seen.
	want(t, e.do("PATCH", "/v1/rooms/"+id+"/state", alice, map[string]any{"b": 2}), 200, "")
	r := e.do("POST", "/v1/auth/refresh", shortToken, nil)
	want(t, r, 201, "")
	fresh := r.body["token"].(string)
	resumed := e.open("/v1/rooms/"+id+"/events?token="+e.streamToken(fresh, "/v1/rooms/"+id), "Last-Event-ID", last.id)
	// what happened between, in order: the stream's own presence
	// change, the patch
	for v := last.version() + 1; ; v++ {
		f := resumed.next()
		if f.version() != v {
			t.Fatalf("resumed with %+v, want version %d (after %s)", f, v, last.id)
		}
		if set, _ := f.data["set"].(map[string]any); f.event == "state" && set["b"] == 2.0 {
			break
		}
	}
	// Once the token has expired, it is refused, stream token or not.
	clock.Add(int64(32 * time.Second))
	want(t, e.do("POST", "/v1/rooms/"+id+"/stream-token", shortToken, nil), 401, "UNAUTHENTICATED")
}

// A player's stream ends at its lifetime (REALSYNC_SSE_MAX_LIFETIME: at a
// random time in its upper half) when that comes before its token's
// expiry: its last frame a short retry (0.5–2 s), no token_expiring, the
// end counted as "lifetime"; HTTP/1.1 room streams (taken over by the hub)
// and lobby and personal streams (left to their handler) alike. (A token expiring
// first still ends its stream with token_expiring:
// TestStreamEndsBeforeTokenExpiry.)
func TestStreamEndsAtItsLifetime(t *testing.T) {
	e := newEnv(t, redistestEmbedded, true, func(c *api.Config, _ *store.Store, _ string) { c.StreamLifetime = 2 * time.Second })
	alice, _ := e.guest("alice")
	id := e.create(alice, map[string]any{"name": "r", "mode": "m", "region": "r"})["id"].(string)
	began := time.Now()
	streams := []*stream{
		e.open("/v1/rooms/" + id + "/events?token=" + e.streamToken(alice, "/v1/rooms/"+id)),
		e.open("/v1/lobby/events", "Authorization", "Bearer "+alice),
		e.me(alice, "pc"),
	}
	for i, s := range streams {
		timer := time.AfterFunc(10*time.Second, s.close)
		rest, err := io.ReadAll(s.rd)
		if !timer.Stop() || err != nil {
			t.Fatalf("stream %d did not end by itself within 10 s: %v", i, err)
		}
		lines := strings.Split(strings.TrimRight(string(rest), "\n"), "\n")
		last := lines[len(lines)-1]
		ms, err := strconv.Atoi(strings.TrimPrefix(last, "retry: "))
		if err != nil || ms < 500 || ms > 2000 || strings.Contains(string(rest), "token_expiring") {
			t.Errorf("stream %d ended with %q (%q), want a retry of 0.5–2 s and no token_expiring", i, last, rest)
		}
	}
	if d := time.Since(began); d < time.Second {
		t.Errorf("the streams ended after %v, before half their lifetime", d)
	}
	m := e.do("GET", "/metrics", "", nil).raw
	for _, kind := range []string{"room", "lobby", "me"} {
		if line := `realsync_sse_stream_ends_total{kind="` + kind + `",reason="lifetime"} 1`; !strings.Contains(m, line+"\n") {
			t.Errorf("metrics lack %s", line)
		}
	}
}

// tampered is token with a character of its signature changed: one whose
// 6 bits all count (the last character's lowest 2 are padding, so a
// token whose last two characters were replaced by "xx" still verified
// once in about a thousand runs, and its stream opened).
func tampered(token string) string {
	i := len(token) - 10
	c := byte('A')
	if token[i] == c {
		c = 'B'
	}
	return token[:i] + string(c) + token[i+1:]
}
