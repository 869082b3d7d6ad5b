package api_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/realsync/realsync/api"
	"github.com/realsync/realsync/internal/limits"
	"github.com/realsync/realsync/internal/rediskeys"
	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/sse"
	"github.com/realsync/realsync/store"
	"github.com/realsync/realsync/store/ratelimit"
)

// useKeys are the stream token uses the store under test holds.
func (e *env) useKeys() []string {
	e.t.Helper()
	keys, err := rediskeys.Scan(context.Background(), e.store.Client(), "*"+e.prefix+"*:stu:*")
	if err != nil {
		e.t.Fatal(err)
	}
	return keys
}

// refused opens path's stream (with headers hdr, name then value) and
// fails unless it is refused with status and code; one that opens is
// closed at once, where e.do would wait for its end. It returns the
// refusal.
func (e *env) refused(path string, status int, code string, hdr ...string) resp {
	e.t.Helper()
	s, res := e.tryOpen(path, hdr...)
	defer s.close()
	if res.StatusCode == 200 {
		shown, _, _ := strings.Cut(path, "token=")
		e.t.Errorf("%s… opened, want %d %s", shown, status, code)
		return resp{status: 200}
	}
	raw, _ := io.ReadAll(res.Body)
	r := resp{status: res.StatusCode, header: res.Header, raw: string(raw)}
	json.Unmarshal(raw, &r.body)
	want(e.t, r, status, code)
	return r
}

// A stream token opens its stream once. The find behind it (a tester's):
// a personal stream's URL replayed opened a session of every platform,
// ending the user's own. Now a second opening is 401 on any platform, and
// the user's one session stays; openings of one token at once open one
// stream; a refused opening leaves its token unused; each use is one key
// in the user's slot, expiring 15 s after the token (the leeway any
// instance may still accept it in, on clocks up to a leeway apart), and
// nothing else is written; each refusal for a used token is counted. A
// token without an id (an older instance's, during a rolling upgrade)
// opens its stream as often as asked.
func TestStreamTokenOpensOnce(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		alice, aliceID := e.guest("alice")
		bob, _ := e.guest("bob")
		if n := len(e.useKeys()); n != 0 {
			t.Fatalf("%d uses before any opening", n)
		}

		r := e.do("POST", "/v1/me/stream-token", alice, nil)
		want(t, r, 201, "")
		tok := r.body["token"].(string)
		s := e.open("/v1/me/events?platform=pc&token=" + tok)
		defer s.close()
		for _, p := range []string{"pc", "console", "mobile", "web"} {
			e.refused("/v1/me/events?platform="+p+"&token="+tok, 401, "UNAUTHENTICATED")
		}
		if got := platformsOf(e.presence(alice, aliceID)); got != "pc" {
			t.Errorf("alice online on %q after her stream URL was replayed, want pc alone", got)
		}

		// 8 openings of one token at once: one stream.
		room := e.create(alice, map[string]any{"name": "r", "mode": "m", "region": "r"})["id"].(string)
		path := "/v1/rooms/" + room + "/events?token=" + e.streamToken(alice, "/v1/rooms/"+room)
		statuses := make(chan int, 8)
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				req, _ := http.NewRequestWithContext(ctx, "GET", e.url+path, nil)
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					statuses <- 0
					return
				}
				res.Body.Close()
				statuses <- res.StatusCode
			})
		}
		wg.Wait()
		close(statuses)
		count := map[int]int{}
		for s := range statuses {
			count[s]++
		}
		if count[200] != 1 || count[401] != 7 {
			t.Errorf("8 openings of one token at once answered %v, want one 200 and seven 401", count)
		}

		m := e.do("GET", "/metrics", "", nil).raw
		for _, line := range []string{`realsync_sse_token_reuses_total{kind="me"} 4`, `realsync_sse_token_reuses_total{kind="room"} 7`,
			`realsync_sse_token_reuses_total{kind="lobby"} 0`} {
			if !strings.Contains(m, line+"\n") {
				t.Errorf("metrics lack %s", line)
			}
		}

		// A refused opening uses nothing: bob left the room, and is
		// refused as often as he asks; back in it, his token opens.
		want(t, e.do("POST", "/v1/rooms/"+room+"/join", bob, nil), 200, "")
		bobPath := "/v1/rooms/" + room + "/events?token=" + e.streamToken(bob, "/v1/rooms/"+room)
		want(t, e.do("POST", "/v1/rooms/"+room+"/leave", bob, nil), 204, "")
		for range 2 {
			e.refused(bobPath, 403, "NOT_A_MEMBER")
		}
		if n := len(e.useKeys()); n != 2 {
			t.Errorf("%d uses after bob's refused openings, want 2", n)
		}
		want(t, e.do("POST", "/v1/rooms/"+room+"/join", bob, nil), 200, "")
		b := e.open(bobPath)
		b.close()
		keys := e.useKeys()
		if len(keys) != 3 {
			t.Fatalf("uses %v, want the three tokens that opened a stream", keys)
		}
		for _, k := range keys {
			ttl, err := e.store.Client().PTTL(context.Background(), k).Result()
			if err != nil || ttl <= 60*time.Second || ttl > 76*time.Second {
				t.Errorf("use %s kept %v (%v), want the token's 60 s and 15 s (its leeway, and as much for each of two clocks off)", k, ttl, err)
			}
		}

		// A token of an older instance, without an id.
		old := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"sub": aliceID, "name": "alice", "scope": "room:" + room,
			"pexp": time.Now().Add(time.Hour).Unix(), "aud": []string{"realsync:stream"},
			"exp": time.Now().Add(time.Minute).Unix(), "iat": time.Now().Unix()})
		old.Header["typ"], old.Header["kid"] = "rs-stream+jwt", "realsync-stream"
		oldTok, err := old.SignedString([]byte("test-secret"))
		if err != nil {
			t.Fatal(err)
		}
		for range 2 {
			s := e.open("/v1/rooms/" + room + "/events?token=" + oldTok)
			if f := s.next(); f.event != "snapshot" {
				t.Fatalf("first event %+v", f)
			}
			s.close()
		}
		if n := len(e.useKeys()); n != 3 {
			t.Errorf("%d uses, want 3 still: a token without an id records none", n)
		}
	})
}

// followingFails is a UserSource whose next Following fails as a lost
// store would.
type followingFails struct {
	sse.UserSource
	fail atomic.Bool
}

func (f *followingFails) Following(ctx context.Context, user string) ([]string, error) {
	if f.fail.Swap(false) {
		return nil, rooms.ErrUnavailable
	}
	return f.UserSource.Following(ctx, user)
}

// An opening that fails after it changed something keeps its token used
// (a reviewer's find): a personal stream's opening that replaced the
// user's own session and then lost the store is answered 200 with a
// retry, and its URL replayed is 401, not a second session.
func TestStreamTokenKeptUsedByAFailedOpening(t *testing.T) {
	users := &followingFails{}
	e := newEnv(t, redistestEmbedded, true, func(c *api.Config, st *store.Store, _ string) {
		users.UserSource = st.Sessions()
		hub := sse.NewHub(sse.Config{Source: st, Lobby: st.Listing(), Users: users, Feed: st.Feed, RoomJSON: api.RoomJSON,
			Log: slog.New(slog.DiscardHandler)})
		t.Cleanup(hub.Close)
		c.Events = hub
	})
	alice, _ := e.guest("alice")
	own := e.me(alice, "pc")
	path := "/v1/me/events?platform=pc&token=" + e.do("POST", "/v1/me/stream-token", alice, nil).body["token"].(string)
	users.fail.Store(true)
	s, res := e.tryOpen(path)
	rest, _ := io.ReadAll(s.rd)
	if res.StatusCode != 200 || !strings.Contains(string(rest), "store unavailable") {
		t.Fatalf("the opening that lost the store answered %d %q, want 200 with a retry", res.StatusCode, rest)
	}
	if evs := own.ends(); len(evs) == 0 || evs[len(evs)-1] != "session_replaced" {
		t.Fatalf("alice's own session ended with %v, want session_replaced (the opening changed something)", evs)
	}
	e.refused(path, 401, "UNAUTHENTICATED")
}

// A used URL replayed is refused before it is charged to its user's rate
// limits (a tester's find: a URL found in a log, replayed for its
// minute, spent the user's stream limit, and the user's own next token
// and reconnect were refused 429).
func TestUsedStreamTokenSpendsNoUserLimit(t *testing.T) {
	set, err := limits.Parse("stream=4/m")
	if err != nil {
		t.Fatal(err)
	}
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		e := newEnv(t, b, true, func(c *api.Config, st *store.Store, prefix string) {
			c.RateLimiter = ratelimit.New(ratelimit.Config{Client: st.Client(), Prefix: prefix, RoomTag: st.RoomTag})
			c.RateLimits = set
		})
		alice, _ := e.guest("alice")
		path := "/v1/me/events?platform=pc&token=" + e.do("POST", "/v1/me/stream-token", alice, nil).body["token"].(string) // 1 of 4
		s := e.open(path)                                                                                                   // 2 of 4
		defer s.close()
		for range 10 {
			e.refused(path, 401, "UNAUTHENTICATED")
		}
		r := e.do("POST", "/v1/me/stream-token", alice, nil) // 3 of 4
		want(t, r, 201, "")
		e.open("/v1/me/events?platform=web&token=" + r.body["token"].(string)).close() // 4 of 4
		want(t, e.do("POST", "/v1/me/stream-token", alice, nil), 429, "RATE_LIMITED")  // the limit holds
	})
}
