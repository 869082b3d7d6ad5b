package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/realsync/realsync"
	"github.com/realsync/realsync/api"
	"github.com/realsync/realsync/internal/eventschema"
	"github.com/realsync/realsync/internal/rediskeys"
	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/internal/storetest"
	"github.com/realsync/realsync/internal/wait"
	"github.com/realsync/realsync/lobby"
	"github.com/realsync/realsync/players"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/sse"
	"github.com/realsync/realsync/store"
	"github.com/realsync/realsync/store/streamtokens"
	"github.com/realsync/realsync/store/userlog"
)

// playerEnvs starts n API instances on backend b sharing one key prefix
// (as n realsyncd processes on one Redis), with the session policy given.
// The embedded backend's instances share one in-process store, each with a
// hub of its own.
func playerEnvs(t *testing.T, b redistest.Backend, policy players.Policy, n int) []*env {
	t.Helper()
	return playerEnvsWith(t, b, n, func(c *store.Config) { c.SessionPolicy = policy })
}

// playerEnvsWith is playerEnvs with the store's configuration changed by
// mut (from the replace policy and 8 streams per user).
func playerEnvsWith(t *testing.T, b redistest.Backend, n int, mut func(*store.Config)) []*env {
	t.Helper()
	return playerEnvsHub(t, b, n, mut, nil)
}

// playerEnvsHub is playerEnvsWith with the hub of instance i configured
// by hub (when not nil) after the defaults.
func playerEnvsHub(t *testing.T, b redistest.Backend, n int, mut func(*store.Config), hub func(i int, c *sse.Config)) []*env {
	t.Helper()
	prefix := redistest.Prefix(t)
	auth := &api.Auth{Secret: []byte("test-secret"), GuestEnabled: true}
	var shared *store.Store
	var out []*env
	for i := range n {
		st := shared
		if st == nil {
			cfg := store.Config{RedisURL: b.URL, ClusterAddrs: b.ClusterAddrs,
				Prefix: prefix, Shards: 4, SessionPolicy: players.PolicyReplace, Quotas: store.Quotas{StreamsPerUser: 8}}
			mut(&cfg)
			st = storetest.Open(t, cfg)
			if b.Name == "embedded" {
				shared = st
			}
		}
		log := slog.New(slog.DiscardHandler)
		hc := sse.Config{Source: st, Lobby: st.Listing(), Users: st.Sessions(), Feed: st.Feed, RoomJSON: api.RoomJSON, Log: log}
		if hub != nil {
			hub(i, &hc)
		}
		hub := sse.NewHub(hc)
		rs := rooms.New(rooms.Config{Store: st, Notices: players.Notices{Inbox: st.Sessions()}})
		h := api.NewHandler(api.Config{Rooms: rs, Lobby: lobby.NewService(st.Listing()), Events: hub,
			Players: players.NewService(st.Sessions()), Direct: players.NewDirect(st.Sessions(), rs), Auth: auth, Ready: st.Ping,
			Spec: realsync.OpenAPI, Log: log, StreamTokens: streamtokens.New(st.Base())})
		srv := httptest.NewServer(h)
		t.Cleanup(func() { hub.Close(); srv.Close() })
		out = append(out, &env{t: t, url: srv.URL, store: st})
	}
	return out
}

// userChecker validates the personal stream's events against openapi.yaml.
var userChecker = func() *eventschema.Checker {
	c, err := eventschema.NewChecker(realsync.OpenAPI)
	if err != nil {
		panic(err)
	}
	return c
}()

// checkUserEvent fails unless f's data is a UserEvent of the spec whose
// type is the frame's event.
func checkUserEvent(t *testing.T, f sseFrame) {
	t.Helper()
	data, _ := json.Marshal(f.data)
	if err := userChecker.User(data); err != nil || f.data["type"] != f.event {
		t.Errorf("%s event %s: %v", f.event, data, err)
	}
}

// me opens token's personal stream on platform through e.
func (e *env) me(token, platform string, hdr ...string) *stream {
	e.t.Helper()
	return e.open("/v1/me/events?platform="+platform, append([]string{"Authorization", "Bearer " + token}, hdr...)...)
}

// ends reads what is left of the stream and fails unless it ends within
// 10 s; it returns the events read before the end.
func (s *stream) ends() []string {
	s.t.Helper()
	timer := time.AfterFunc(10*time.Second, s.close)
	defer timer.Stop()
	rest, err := io.ReadAll(s.rd)
	if !timer.Stop() {
		s.t.Fatalf("stream still open after 10 s")
	}
	if err != nil {
		s.t.Fatalf("stream: %v", err)
	}
	var evs []string
	for _, line := range strings.Split(string(rest), "\n") {
		if ev, ok := strings.CutPrefix(line, "event: "); ok {
			evs = append(evs, ev)
		}
	}
	return evs
}

// presence reads uid's status through GET /v1/presence.
func (e *env) presence(token, uid string) map[string]any {
	e.t.Helper()
	r := e.do("GET", "/v1/presence?userIds="+uid, token, nil)
	want(e.t, r, 200, "")
	return r.body["users"].([]any)[0].(map[string]any)
}

func platformsOf(m map[string]any) string {
	var ps []string
	for _, p := range m["platforms"].([]any) {
		ps = append(ps, p.(string))
	}
	return strings.Join(ps, ",")
}

// One user online on two platforms at once through two instances; a
// second login on one platform, through the other instance, replaces the
// first: the old stream's last event is session_replaced (naming it; no
// id: not logged, its seq the log's position), then it ends; the other
// platform's stream goes on.
func TestMeStreamReplacedAcrossInstances(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		es := playerEnvs(t, b, players.PolicyReplace, 2)
		a, bb := es[0], es[1]
		alice, aliceID := a.guest("alice")
		pc := a.me(alice, "pc")
		snap := pc.next()
		checkUserEvent(t, snap)
		if snap.event != "snapshot" || snap.id == "" || snap.data["platform"] != "pc" || snap.data["userId"] != aliceID || snap.data["resync"] != false {
			t.Fatalf("first event %+v", snap)
		}
		mobile := a.me(alice, "mobile")
		mobile.next()
		if p := bb.presence(alice, aliceID); p["online"] != true || platformsOf(p) != "pc,mobile" {
			t.Fatalf("presence with two platforms: %v", p)
		}
		pc2 := bb.me(alice, "pc")
		if f := pc2.next(); f.event != "snapshot" || f.data["session"] == snap.data["session"] {
			t.Fatalf("new pc session %+v", f)
		}
		f := pc.next()
		checkUserEvent(t, f)
		if f.event != "session_replaced" || f.data["session"] != snap.data["session"] || f.data["by"] == "" || f.id != "" ||
			f.data["seq"] != snap.data["seq"] {
			t.Fatalf("old pc stream got %+v", f)
		}
		if rest := pc.ends(); len(rest) != 0 {
			t.Errorf("events after session_replaced: %v", rest)
		}
		if p := a.presence(alice, aliceID); platformsOf(p) != "pc,mobile" {
			t.Errorf("presence after the replacement: %v", p)
		}
		// the mobile stream saw nothing of it and is still open
		mobile.close()
		pc2.close()
		wait.Until(t, "offline", func() bool { return a.presence(alice, aliceID)["online"] == false })
	})
}

// reject-new: a second session of a platform is 409 SESSION_EXISTS, with
// a Retry-After of the first one's lease's time left, and the first goes
// on; allow-multiple: both are open.
func TestMeStreamPolicies(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		rj := playerEnvs(t, b, players.PolicyRejectNew, 2)
		alice, aliceID := rj[0].guest("alice")
		first := rj[0].me(alice, "console")
		first.next()
		_, res := rj[1].tryOpen("/v1/me/events?platform=console", "Authorization", "Bearer "+alice)
		body, _ := io.ReadAll(res.Body)
		if res.StatusCode != 409 || !strings.Contains(string(body), `"code":"SESSION_EXISTS"`) {
			t.Fatalf("second console session: %d %s", res.StatusCode, body)
		}
		// the first one's lease's time left, rounded up (the presence TTL: 15 s)
		if n, err := strconv.Atoi(res.Header.Get("Retry-After")); err != nil || n < 1 || n > 15 {
			t.Errorf("second console session: Retry-After %q, want 1..15 (s)", res.Header.Get("Retry-After"))
		}
		if p := rj[1].presence(alice, aliceID); platformsOf(p) != "console" {
			t.Errorf("presence %v", p)
		}
		other := rj[1].me(alice, "web")
		other.next()

		am := playerEnvs(t, b, players.PolicyAllowMultiple, 2)
		bob, bobID := am[0].guest("bob")
		s1, s2 := am[0].me(bob, "web"), am[1].me(bob, "web")
		if a, b := s1.next(), s2.next(); a.event != "snapshot" || b.event != "snapshot" {
			t.Fatalf("first events %v %v", a, b)
		}
		s1.close()
		time.Sleep(50 * time.Millisecond)
		if p := am[0].presence(bob, bobID); platformsOf(p) != "web" {
			t.Errorf("one of two web sessions closed: %v", p)
		}
	})
}

// A follower's stream gets the current status of each user it starts
// following (through another instance's PUT), then only changes: a second
// login replacing the first on the same platform changes nothing and
// publishes nothing.
func TestMeFollowPresence(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		es := playerEnvs(t, b, players.PolicyReplace, 2)
		a, bb := es[0], es[1]
		alice, aliceID := a.guest("alice")
		carol, carolID := a.guest("carol")
		bob, _ := a.guest("bob")
		watch := a.me(bob, "web")
		watch.next()
		cs := a.me(carol, "mobile")
		cs.next()
		r := bb.do("PUT", "/v1/me/following", bob, map[string]any{"userIds": []string{carolID, aliceID, aliceID}})
		want(t, r, 200, "")
		if ids := r.body["userIds"].([]any); len(ids) != 2 {
			t.Fatalf("following %v", ids)
		}
		got := map[string]sseFrame{}
		for range 2 {
			f := watch.next()
			checkUserEvent(t, f)
			if f.event != "presence" || f.id != "" {
				t.Fatalf("event %+v", f)
			}
			got[f.data["userId"].(string)] = f
		}
		if got[aliceID].data["online"] != false || got[aliceID].data["version"] != 0.0 ||
			got[carolID].data["online"] != true || fmt.Sprint(got[carolID].data["platforms"]) != "[mobile]" {
			t.Fatalf("current statuses %v", got)
		}
		pc := bb.me(alice, "pc")
		pc.next()
		f := watch.next()
		if f.event != "presence" || f.data["userId"] != aliceID || fmt.Sprint(f.data["platforms"]) != "[pc]" {
			t.Fatalf("alice online: %+v", f)
		}
		v1 := f.data["version"].(float64)
		pc2 := a.me(alice, "pc") // replaces pc: no change
		pc2.next()
		pc.ends()
		cs.close() // carol offline: the next event
		f = watch.next()
		if f.data["userId"] != carolID || f.data["online"] != false {
			t.Fatalf("after a replacement and carol's close: %+v", f)
		}
		pc2.close()
		f = watch.next()
		if f.data["userId"] != aliceID || f.data["online"] != false || f.data["version"].(float64) <= v1 {
			t.Fatalf("alice offline: %+v", f)
		}
		// unfollowed: no more of carol, once the stream has sent the
		// newly followed dave's status (the following and carol's
		// status reach it apart: on a Cluster by different nodes)
		_, daveID := a.guest("dave")
		want(t, bb.do("PUT", "/v1/me/following", bob, map[string]any{"userIds": []string{aliceID, daveID}}), 200, "")
		if f := watch.next(); f.data["userId"] != daveID || f.data["online"] != false {
			t.Fatalf("after following dave: %+v", f)
		}
		c2 := a.me(carol, "pc")
		c2.next()
		al := a.me(alice, "console")
		al.next()
		if f := watch.next(); f.data["userId"] != aliceID || f.data["online"] != true {
			t.Fatalf("after unfollowing carol: %+v", f)
		}
		if b.Name == "standalone" { // classic Pub/Sub: one PUBSUB CHANNELS sees all
			subscribed := func(uid string) int {
				chs, err := a.store.Client().PubSubChannels(context.Background(), "*:st:"+uid).Result()
				if err != nil {
					t.Fatal(err)
				}
				return len(chs)
			}
			if subscribed(carolID) != 0 || subscribed(aliceID) != 1 {
				t.Errorf("status channels subscribed: carol %d (unfollowed), alice %d", subscribed(carolID), subscribed(aliceID))
			}
			watch.close() // its end drops its subscriptions
			wait.Until(t, "the follower's subscriptions gone", func() bool { return subscribed(aliceID) == 0 })
		}
	})
}

// While a followed user's sessions come and go on two instances, the
// follower unfollows and follows again through both: no status the stream
// shows is older than one it showed before (versions never go down: an
// offline status keeps the version of going offline), and the last it
// shows is the one GET /v1/presence reads.
func TestMeFollowUnderConcurrentChanges(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		es := playerEnvs(t, b, players.PolicyReplace, 2)
		alice, aliceID := es[0].guest("alice")
		bob, _ := es[0].guest("bob")
		watch := es[1].me(bob, "web")
		watch.next()
		frames := make(chan sseFrame, 1000)
		go func() {
			defer close(frames)
			for {
				f, err := watch.read()
				if err != nil {
					return
				}
				frames <- f
			}
		}()
		var wg sync.WaitGroup
		wg.Add(1)
		go func() { // alice's sessions come and go
			defer wg.Done()
			platforms := []string{"pc", "console", "mobile"}
			var open []*stream
			for i := range 12 {
				s, res := es[i%2].tryOpen("/v1/me/events?platform="+platforms[i%3], "Authorization", "Bearer "+alice)
				if res.StatusCode == 200 {
					s.rd.ReadString('\n') // the retry line: the session is open
				}
				open = append(open, s)
				if i%3 == 2 {
					open[0].close()
					open = open[1:]
				}
			}
		}()
		for i := range 6 {
			ids := []string{aliceID}
			if i%2 == 1 {
				ids = []string{}
			}
			want(t, es[i%2].do("PUT", "/v1/me/following", bob, map[string]any{"userIds": ids}), 200, "")
			time.Sleep(10 * time.Millisecond)
		}
		want(t, es[0].do("PUT", "/v1/me/following", bob, map[string]any{"userIds": []string{aliceID}}), 200, "")
		wg.Wait()
		var last sseFrame
		var lastV float64 = -1
		n := 0
		deadline := time.After(10 * time.Second)
		for {
			cur := es[0].presence(bob, aliceID)
			if last.data != nil && last.data["version"] == cur["version"] && fmt.Sprint(last.data["platforms"]) == fmt.Sprint(cur["platforms"]) {
				break
			}
			select {
			case f, ok := <-frames:
				if !ok {
					t.Fatal("stream ended")
				}
				if f.event != "presence" || f.data["userId"] != aliceID {
					t.Fatalf("event %+v", f)
				}
				v := f.data["version"].(float64)
				if v < lastV {
					t.Fatalf("status of version %v after %v: %+v", v, lastV, f)
				}
				last, lastV, n = f, max(lastV, v), n+1
			case <-deadline:
				t.Fatalf("last status shown %v, GET reads %v", last.data, cur)
			}
		}
		t.Logf("%d presence events", n)
	})
}

// A personal stream resumes with Last-Event-ID: the logged events after
// it (a replacement of another session logs none), then resumed; an id of another history, or
// of another write (the message's tag at 0), or one not of the server's
// form, gets a snapshot with resync true, its id its position's. A stream
// token for the personal stream opens it; one for another stream does not.
func TestMeStreamResume(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		e := playerEnvs(t, b, players.PolicyReplace, 1)[0]
		alice, aliceID := e.guest("alice")
		web := e.me(alice, "web")
		snap := web.next()
		web.close()
		// closed on the server too: a resume that replaced it would log
		// its session_replaced
		e.sessionGone(alice, aliceID, "web")
		for range 2 { // a replacement logs nothing
			s := e.me(alice, "pc")
			s.next()
		}
		bob, _ := e.guest("bob")
		want(t, e.do("POST", "/v1/users/"+aliceID+"/messages", bob, map[string]any{"type": "chat", "data": "hi"}), 202, "")
		r := e.do("POST", "/v1/me/stream-token", alice, nil)
		want(t, r, 201, "")
		tok := r.body["token"].(string)
		// the header wins over the query parameter ("x" alone: a snapshot)
		res := e.open("/v1/me/events?platform=web&lastEventId=x&token="+tok, "Last-Event-ID", snap.id)
		msg := res.next()
		if msg.event != "message" || msg.data["seq"] != 1.0 {
			t.Fatalf("resume from %s: %+v, want the message", snap.id, msg)
		}
		f := res.next()
		checkUserEvent(t, f)
		if f.event != "resumed" || f.data["seq"] != 1.0 {
			t.Fatalf("resume from %s: %+v", snap.id, f)
		}
		// the snapshot's id is its position's (web had the message):
		// the message's, the tag of its write. The resume records it
		// after writing it (Delivered): once its session is gone, so
		// the next opening does not race the record (it read 0 so
		// once, under -race on a loaded machine)
		res.close()
		e.sessionGone(alice, aliceID, "web")
		seq, _, _ := strings.Cut(snap.id, "-")
		for _, id := range []string{seq + "-other", "7", "x", snap.id[:len(seq)+1] + strings.TrimPrefix(msg.id, "1-")} {
			tok := e.do("POST", "/v1/me/stream-token", alice, nil).body["token"].(string) // one opening each
			s := e.open("/v1/me/events?platform=web&token="+tok, "Last-Event-ID", id)
			if f := s.next(); f.event != "snapshot" || f.data["resync"] != true || f.id != msg.id {
				t.Errorf("resume from %q: %+v", id, f)
			}
			s.close()
		}
		lobbyTok := e.streamToken(alice, "/v1/lobby/events")
		_, resp := e.tryOpen("/v1/me/events?platform=web&token=" + lobbyTok)
		if resp.StatusCode != 401 {
			t.Errorf("a lobby stream token opened the personal stream: %d", resp.StatusCode)
		}
	})
}

// Bad input is a precise problem and changes nothing: the platform
// (missing, unknown), the ids of GET /v1/presence (none, empty, 101), the
// following (501 ids, a bad id, no userIds); an API key has no personal
// stream.
func TestMePlayersBadInput(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		e := playerEnvs(t, b, players.PolicyReplace, 1)[0]
		alice, aliceID := e.guest("alice")
		for _, p := range []string{"", "?platform=", "?platform=tv", "?platform=PC", "?platform=pc&platform=web"} {
			r := e.do("GET", "/v1/me/events"+p, alice, nil)
			want(t, r, 400, "INVALID_PLATFORM")
			if !strings.Contains(r.body["detail"].(string), "pc, console, mobile, web") {
				t.Errorf("detail %q", r.body["detail"])
			}
			if twice := strings.Contains(r.body["detail"].(string), "more than once"); twice != strings.Contains(p, "&") {
				t.Errorf("%s: detail %q", p, r.body["detail"])
			}
		}
		if p := e.presence(alice, aliceID); p["online"] != false {
			t.Errorf("a refused stream made alice online: %v", p)
		}
		many := make([]string, 101)
		for i := range many {
			many[i] = fmt.Sprintf("u%d", i)
		}
		for _, q := range []string{"", "?userIds=", "?userIds=a,,b", "?userIds=" + strings.Join(many, ","), "?userIds=a&userIds=b"} {
			r := e.do("GET", "/v1/presence"+q, alice, nil)
			want(t, r, 400, "INVALID_USER_IDS")
			if twice := strings.Contains(r.body["detail"].(string), "more than once"); twice != strings.Contains(q, "&") {
				t.Errorf("%s: detail %q", q, r.body["detail"])
			}
		}
		r := e.do("GET", "/v1/presence?userIds="+strings.Join(many[:100], ","), alice, nil)
		want(t, r, 200, "")
		if n := len(r.body["users"].([]any)); n != 100 {
			t.Errorf("100 ids: %d statuses", n)
		}
		want(t, e.do("PUT", "/v1/me/following", alice, map[string]any{"userIds": []string{"keep"}}), 200, "")
		tooMany := make([]string, 501)
		for i := range tooMany {
			tooMany[i] = fmt.Sprintf("u%d", i)
		}
		for _, body := range []any{map[string]any{"userIds": tooMany}, map[string]any{"userIds": []string{"a b"}},
			map[string]any{"userIds": []string{""}}} {
			want(t, e.do("PUT", "/v1/me/following", alice, body), 400, "INVALID_USER_IDS")
		}
		want(t, e.do("PUT", "/v1/me/following", alice, map[string]any{}), 422, "VALIDATION_FAILED")
		want(t, e.do("PUT", "/v1/me/following", alice, `{"userIds": "x"}`), 400, "MALFORMED_REQUEST")
		if got, err := e.store.Sessions().Following(context.Background(), aliceID); err != nil || len(got) != 1 || got[0] != "keep" {
			t.Errorf("following after refused changes: %v %v", got, err)
		}
		r = e.do("PUT", "/v1/me/following", alice, map[string]any{"userIds": tooMany[:500]})
		want(t, r, 200, "")
		// the cap counts distinct ids: duplicates are dropped first
		copies := make([]string, 600)
		for i := range copies {
			copies[i] = "u1"
		}
		r = e.do("PUT", "/v1/me/following", alice, map[string]any{"userIds": copies})
		want(t, r, 200, "")
		if ids := r.body["userIds"].([]any); len(ids) != 1 || ids[0] != "u1" {
			t.Errorf("600 copies of u1: following %v", ids)
		}
		r = e.do("PUT", "/v1/me/following", alice, map[string]any{"userIds": append(tooMany[:499:499], tooMany[0], tooMany[1])})
		want(t, r, 200, "")
		if n := len(r.body["userIds"].([]any)); n != 499 {
			t.Errorf("499 distinct ids and 2 repeats: following %d", n)
		}
		// 501 distinct among repeats is still too many, and so are
		// more ids sent than players.MaxFollowingSent, repeats or not
		r = e.do("PUT", "/v1/me/following", alice, map[string]any{"userIds": append(slices.Clone(tooMany), tooMany[:100]...)})
		want(t, r, 400, "INVALID_USER_IDS")
		if !strings.Contains(r.body["detail"].(string), "501 distinct ids") {
			t.Errorf("detail %q", r.body["detail"])
		}
		huge := make([]string, players.MaxFollowingSent+1)
		for i := range huge {
			huge[i] = "u1"
		}
		want(t, e.do("PUT", "/v1/me/following", alice, map[string]any{"userIds": huge}), 400, "INVALID_USER_IDS")
	})
}

// The sessions' metrics: realsync_sessions{platform} counts the open
// sessions of the instance, realsync_sessions_replaced_total the
// replacements, and the personal streams count as kind "me".
func TestMeStreamMetrics(t *testing.T) {
	e := newEnv(t, redistest.Backends(t)[0], true)
	alice, _ := e.guest("alice")
	s1 := e.me(alice, "mobile")
	s1.next()
	s2 := e.me(alice, "mobile")
	s2.next()
	s1.ends()
	m := e.scrape()
	if v := m.value("realsync_sessions", "platform", "mobile"); v != 1 {
		t.Errorf("realsync_sessions{mobile} %v, want 1", v)
	}
	if v := m.value("realsync_sessions", "platform", "pc"); v != 0 {
		t.Errorf("realsync_sessions{pc} %v, want 0", v)
	}
	if v := m.value("realsync_sessions_replaced_total", "platform", "mobile"); v != 1 {
		t.Errorf("realsync_sessions_replaced_total{mobile} %v, want 1", v)
	}
	if v := m.value("realsync_sse_stream_ends_total", "kind", "me", "reason", "replaced"); v != 1 {
		t.Errorf("ends{me,replaced} %v, want 1", v)
	}
	if v := m.value("realsync_sse_opens_total", "kind", "me", "start", "fresh"); v != 2 {
		t.Errorf("opens{me,fresh} %v, want 2", v)
	}
	s2.close()
	wait.Until(t, "the session's end", func() bool { return e.scrape().value("realsync_sessions", "platform", "mobile") == 0 })
}

// A session replaced while its instance's Pub/Sub connection was cut
// still ends with session_replaced: whichever comes first, the message
// (when the connection was back in time), the resubscription's catch-up
// or the next lease renewal's (it finds the lease gone), which read the
// session's tombstone.
func TestMeStreamReplacedWhileFeedCut(t *testing.T) {
	b := redistest.Backends(t)[0] // standalone: CLIENT KILL TYPE pubsub reaches every subscriber
	es := playerEnvs(t, b, players.PolicyReplace, 2)
	alice, _ := es[0].guest("alice")
	old := es[0].me(alice, "console")
	first := old.next()
	if err := es[0].store.Client().Do(context.Background(), "CLIENT", "KILL", "TYPE", "pubsub").Err(); err != nil {
		t.Fatal(err)
	}
	repl := es[1].me(alice, "console")
	repl.next()
	f := old.next()
	if f.event != "session_replaced" || f.data["session"] != first.data["session"] {
		t.Fatalf("old session got %+v", f)
	}
	old.ends()
}

// A platform whose offline inbox overflowed (the personal log's cap
// dropped what it was not delivered) opens its next stream with a
// snapshot saying resync, the rest of its inbox pending after it; the
// stream after that, with nothing dropped since, does not: the first
// moved the platform's position once it wrote its snapshot, with the
// rest of the inbox or, when all of it had expired too, none.
func TestMeStreamSaysWhenItsInboxOverflowed(t *testing.T) {
	for _, tc := range []struct {
		name    string
		age     time.Duration // of the messages
		pending int
	}{{"fresh", 0, userlog.MinMaxLen}, {"expired", userlog.DefaultTTL + time.Hour, 0}} {
		for _, b := range redistest.Backends(t) {
			t.Run(tc.name+"/"+b.Name, func(t *testing.T) { testInboxOverflow(t, b, tc.age, tc.pending) })
		}
	}
}

func testInboxOverflow(t *testing.T, b redistest.Backend, age time.Duration, pending int) {
	{
		{
			e := playerEnvsWith(t, b, 1, func(c *store.Config) { c.Offline.MaxLen = userlog.MinMaxLen })[0]
			alice, aliceID := e.guest("alice")
			mobile := e.me(alice, "mobile")
			if f := mobile.next(); f.event != "snapshot" || f.data["resync"] != false {
				t.Fatalf("first open %+v", f)
			}
			mobile.close()
			e.sessionGone(alice, aliceID, "mobile")
			ctx := context.Background()
			for i := range userlog.MinMaxLen + 3 {
				if _, err := e.store.UserLogs().Send(ctx, aliceID, fmt.Appendf(nil, `{"type":"message","userId":%q,"ts":%q,"n":%d}`,
					aliceID, time.Now().Add(-age).UTC().Format(time.RFC3339Nano), i)); err != nil {
					t.Fatal(err)
				}
			}
			mobile = e.me(alice, "mobile")
			f := mobile.next()
			checkUserEvent(t, f)
			if f.event != "snapshot" || f.data["resync"] != true || f.data["pending"] != float64(pending) {
				t.Fatalf("after 3 messages were dropped: %+v, want resync and %d pending", f, pending)
			}
			// read to the end of the opening: a client gone before it was
			// written is told again
			for i := range pending {
				if f := mobile.next(); f.data["n"] != float64(i+3) {
					t.Fatalf("pending event %d: %+v, want n %d", i, f, i+3)
				}
			}
			mobile.close()
			e.sessionGone(alice, aliceID, "mobile")
			mobile = e.me(alice, "mobile")
			if f := mobile.next(); f.event != "snapshot" || f.data["resync"] != false {
				t.Errorf("the next open, nothing dropped since: %+v", f)
			}
		}
	}
}

// Events past REALSYNC_OFFLINE_TTL are not sent, and their loss is told:
// a session whose inbox holds one after the last it may send (the events'
// times out of their order, as a room's close stored before a message
// logged first) opens with a snapshot saying resync and stays open, its
// position past the lost one; the platform's next session, given a new
// event, says nothing of it again (before, the stream's catch-up met the
// lost event, ended gap, and each session after said resync).
func TestMeStreamTellsOfExpiredEvents(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		e := playerEnvsWith(t, b, 1, func(*store.Config) {})[0]
		alice, aliceID := e.guest("alice")
		ctx := context.Background()
		send := func(n int, age time.Duration) {
			if _, err := e.store.UserLogs().Send(ctx, aliceID, fmt.Appendf(nil, `{"type":"message","userId":%q,"ts":%q,"n":%d}`,
				aliceID, time.Now().Add(-age).UTC().Format(time.RFC3339Nano), n)); err != nil {
				t.Fatal(err)
			}
		}
		send(1, 0)
		send(2, userlog.DefaultTTL+time.Hour)
		pc := e.me(alice, "pc")
		f := pc.next()
		checkUserEvent(t, f)
		if f.event != "snapshot" || f.data["resync"] != true || f.data["pending"] != float64(1) {
			t.Fatalf("an inbox with an expired event: %+v, want resync and 1 pending", f)
		}
		if f := pc.next(); f.data["n"] != float64(1) {
			t.Fatalf("pending %+v, want n 1", f)
		}
		send(3, 0)
		if f := pc.next(); f.data["n"] != float64(3) {
			t.Fatalf("the stream goes on with %+v, want n 3", f)
		}
		pc.close()
		e.sessionGone(alice, aliceID, "pc")
		send(4, 0)
		pc = e.me(alice, "pc")
		if f := pc.next(); f.event != "snapshot" || f.data["resync"] != false || f.data["pending"] != float64(1) {
			t.Fatalf("the next session: %+v, want no resync and 1 pending", f)
		}
		if f := pc.next(); f.data["n"] != float64(4) {
			t.Fatalf("pending %+v, want n 4", f)
		}
	})
}

// Strangers writing while a user is away cannot push out of the user's
// capped log what the users they follow sent (a tester's find: 1 003
// messages from 30 accounts took a friend's 3 earlier ones): the
// messages and invites of senders the user does not follow, which no
// platform of the user was delivered, hold at most half of it, and past
// that are 409 INBOX_FULL, a problem that sends nothing; the friend still
// sends, and once a session of the user was delivered them, strangers do
// again.
func TestStrangersCannotPushAFriendsMessagesOut(t *testing.T) {
	share := userlog.StrangersShare(userlog.MinMaxLen)
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		e := playerEnvsWith(t, b, 1, func(c *store.Config) { c.Offline.MaxLen = userlog.MinMaxLen })[0]
		alice, aliceID := e.guest("alice")
		carol, carolID := e.guest("carol")
		want(t, e.do("PUT", "/v1/me/following", alice, map[string]any{"userIds": []string{carolID}}), 200, "")
		msg := func(n int) map[string]any { return map[string]any{"type": "chat", "data": n} }
		for i := range 3 {
			want(t, e.do("POST", "/v1/users/"+aliceID+"/messages", carol, msg(i)), 202, "")
		}
		var strangers []string
		for i := range 5 {
			tok, _ := e.guest(fmt.Sprint("mallory-", i))
			strangers = append(strangers, tok)
		}
		sent := 0
		for i := range 3 * share {
			switch r := e.do("POST", "/v1/users/"+aliceID+"/messages", strangers[i%5], msg(100+i)); r.status {
			case 202:
				sent++
			default:
				want(t, r, 409, "INBOX_FULL")
			}
		}
		if sent != share {
			t.Fatalf("%d strangers' messages sent, want %d", sent, share)
		}
		room := e.create(strangers[0], arena)["id"].(string)
		want(t, e.do("POST", "/v1/rooms/"+room+"/invites", strangers[0], map[string]any{"userId": aliceID}), 409, "INBOX_FULL")
		want(t, e.do("POST", "/v1/users/"+aliceID+"/messages", carol, msg(3)), 202, "")
		// alice is back: the friend's messages first, then the strangers'
		// and the friend's last
		pc := e.me(alice, "pc")
		if f := pc.next(); f.event != "snapshot" || f.data["pending"] != float64(3+share+1) {
			t.Fatalf("alice's opening: %+v, want a snapshot with %d pending", f, 3+share+1)
		}
		for i := range 3 + share + 1 {
			f := pc.next()
			from, _ := f.data["from"].(map[string]any)
			if isCarol := from["userId"] == carolID; isCarol != (i < 3 || i == 3+share) {
				t.Fatalf("pending event %d from %v", i, from["userId"])
			}
		}
		// delivered: strangers send again
		wait.Within(t, 10*time.Second, "the strangers' messages delivered", func() bool {
			return e.do("POST", "/v1/users/"+aliceID+"/messages", strangers[1], msg(0)).status == 202
		})
		pc.close()
	})
}

// A guest's following is kept as long as its identity, a day after its
// last PUT or personal stream open; any other user's for 30 days.
func TestGuestFollowingKeptADay(t *testing.T) {
	e := newEnv(t, redistestEmbedded, true)
	guest, guestID := e.guest("alice")
	member, _ := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"sub": "u-member", "exp": time.Now().Add(time.Hour).Unix()}).SignedString([]byte("test-secret"))
	for _, c := range []struct {
		token, uid string
		min, max   time.Duration
	}{
		{guest, guestID, 23 * time.Hour, 24 * time.Hour},
		{member, "u-member", 29 * 24 * time.Hour, 30 * 24 * time.Hour},
	} {
		want(t, e.do("PUT", "/v1/me/following", c.token, map[string]any{"userIds": []string{"u-x"}}), 200, "")
		keys, err := e.store.Client().Keys(context.Background(), "*"+e.prefix+"*:follow:"+c.uid).Result()
		if err != nil || len(keys) != 1 {
			t.Fatalf("%s's following keys: %v %v", c.uid, keys, err)
		}
		ttl := e.store.Client().PTTL(context.Background(), keys[0]).Val()
		if ttl <= c.min || ttl > c.max {
			t.Errorf("%s's following expires in %s, want (%s, %s]", c.uid, ttl, c.min, c.max)
		}
		// a personal stream's open keeps it as long again
		e.store.Client().PExpire(context.Background(), keys[0], time.Minute)
		s := e.me(c.token, "pc")
		s.next()
		s.close()
		if ttl := e.store.Client().PTTL(context.Background(), keys[0]).Val(); ttl <= c.min || ttl > c.max {
			t.Errorf("%s's following expires in %s after a stream opened, want (%s, %s]", c.uid, ttl, c.min, c.max)
		}
	}
}

// TestMeParty: PUT /v1/me/party puts the caller in one leader's party at
// a time, kept players.PartyTTL (its key's expiry too) and renewed by
// joining again; GET reads it, 404 PARTY_NOT_FOUND in none; DELETE leaves
// it and removes its key (204 in none as well); a leader id that is not a
// user id, an API key's or the caller's own is 422 naming leaderUserId and
// changes nothing.
func TestMeParty(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		e := newEnv(t, b, true)
		ctx := context.Background()
		alice, aliceID := e.guest("alice")
		partyKeys := func() []string {
			t.Helper()
			keys, err := rediskeys.Scan(ctx, e.store.Client(), "*"+e.prefix+"*:party:*")
			if err != nil {
				t.Fatal(err)
			}
			return keys
		}
		want(t, e.do("GET", "/v1/me/party", alice, nil), 404, "PARTY_NOT_FOUND")
		want(t, e.do("DELETE", "/v1/me/party", alice, nil), 204, "")
		join := func(leader string) time.Time {
			t.Helper()
			before := time.Now()
			r := e.do("PUT", "/v1/me/party", alice, map[string]any{"leaderUserId": leader})
			want(t, r, 200, "")
			exp, err := time.Parse(time.RFC3339Nano, r.body["expiresAt"].(string))
			// a join refused by a party of the same millisecond asks 1 ms
			// past it (a user's parties never share an expiry): at most
			// a few ms past now + PartyTTL
			if r.body["leaderUserId"] != leader || err != nil ||
				exp.Before(before.Add(players.PartyTTL-time.Second)) || exp.After(time.Now().Add(players.PartyTTL+10*time.Millisecond)) {
				t.Fatalf("joined %s: %v (%v)", leader, r.body, err)
			}
			g := e.do("GET", "/v1/me/party", alice, nil)
			want(t, g, 200, "")
			if g.body["leaderUserId"] != leader || g.body["expiresAt"] != r.body["expiresAt"] {
				t.Fatalf("read %v after joining %v", g.body, r.body)
			}
			keys := partyKeys()
			if len(keys) != 1 {
				t.Fatalf("party keys %v", keys)
			}
			if ttl := e.store.Client().PTTL(ctx, keys[0]).Val(); ttl <= players.PartyTTL-time.Minute || ttl > players.PartyTTL {
				t.Fatalf("the party's key expires in %s, want about %s", ttl, players.PartyTTL)
			}
			return exp
		}
		bob, bobID := e.guest("bob")
		carol, carolID := e.guest("carol")
		lists := func(leader string, members ...string) {
			t.Helper()
			r := e.do("GET", "/v1/me/party/members", leader, nil)
			want(t, r, 200, "")
			ms, _ := r.body["members"].([]any)
			got := make([]string, len(ms))
			for i, m := range ms {
				m := m.(map[string]any)
				got[i], _ = m["userId"].(string)
				if g := e.do("GET", "/v1/me/party", alice, nil); g.body["leaderUserId"] == nil || m["expiresAt"] != g.body["expiresAt"] {
					t.Fatalf("listed %v; the member's party: %v", m, g.body)
				}
			}
			if !slices.Equal(got, members) {
				t.Fatalf("members %s, want %v", r.raw, members)
			}
		}
		lists(bob)
		join(bobID)
		lists(bob, aliceID)
		e.store.Client().PExpire(ctx, partyKeys()[0], time.Minute)
		join(bobID) // renewed
		lists(bob, aliceID)
		join(carolID)
		lists(bob)
		lists(carol, aliceID)
		for _, c := range []struct {
			body   any
			status int
			code   string
		}{
			{map[string]any{}, 422, "VALIDATION_FAILED"},
			{map[string]any{"leaderUserId": ""}, 422, "VALIDATION_FAILED"},
			{map[string]any{"leaderUserId": "a b"}, 422, "VALIDATION_FAILED"},
			{map[string]any{"leaderUserId": strings.Repeat("x", 129)}, 422, "VALIDATION_FAILED"},
			{map[string]any{"leaderUserId": "key:ops"}, 422, "VALIDATION_FAILED"},
			{map[string]any{"leaderUserId": aliceID}, 422, "VALIDATION_FAILED"},
			{map[string]any{"leaderUserId": 7}, 400, "MALFORMED_REQUEST"},
			{map[string]any{"leaderUserId": "u-bob", "extra": 1}, 422, "VALIDATION_FAILED"},
		} {
			r := e.do("PUT", "/v1/me/party", alice, c.body)
			want(t, r, c.status, c.code)
			field := "leaderUserId"
			if _, ok := c.body.(map[string]any)["extra"]; ok {
				field = "extra"
			}
			if c.status == 422 && !strings.Contains(r.raw, `"field":"`+field+`"`) {
				t.Errorf("%v: %s", c.body, r.raw)
			}
		}
		if g := e.do("GET", "/v1/me/party", alice, nil); g.body["leaderUserId"] != carolID {
			t.Fatalf("party after refused joins: %v", g.body)
		}
		lists(carol, aliceID)
		want(t, e.do("DELETE", "/v1/me/party", alice, nil), 204, "")
		want(t, e.do("GET", "/v1/me/party", alice, nil), 404, "PARTY_NOT_FOUND")
		lists(carol)
		// the left party's expiry is kept without a leader until then
		// (a join meanwhile takes a later one)
		if keys := partyKeys(); len(keys) != 1 {
			t.Fatalf("party keys after leaving: %v", keys)
		} else if v, ttl := e.store.Client().Get(ctx, keys[0]).Val(), e.store.Client().PTTL(ctx, keys[0]).Val(); strings.Contains(v, " ") || ttl <= players.PartyTTL-time.Minute || ttl > players.PartyTTL {
			t.Fatalf("the left party's key holds %q for %s", v, ttl)
		}
		want(t, e.do("DELETE", "/v1/me/party", alice, nil), 204, "")
		if keys, err := rediskeys.Scan(ctx, e.store.Client(), "*"+e.prefix+"*:partymembers:*"); err != nil || len(keys) != 0 {
			t.Fatalf("party members' lists left after the last member left: %v %v", keys, err)
		}
	})
}
