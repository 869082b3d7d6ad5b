package api_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/realsync/realsync"
	"github.com/realsync/realsync/api"
	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/internal/storetest"
	"github.com/realsync/realsync/lobby"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/store"
	"github.com/realsync/realsync/store/webhooks"
)

// deadEnv is an API with the admin token whose store writes the webhook
// outbox, and a dispatcher whose endpoint "ep" fails every try while down
// (one try before the dead letters).
type deadEnv struct {
	*env
	d    *webhooks.Dispatcher
	q    *webhooks.DeadLetters // the API's
	mu   sync.Mutex
	down bool
	got  []webhooks.Delivery // tries, in order
}

func newDeadEnv(t *testing.T, b redistest.Backend) *deadEnv {
	t.Helper()
	de := &deadEnv{down: true}
	// the API's store writes the outbox (one store: the embedded backend
	// is a store of its own per Open)
	st := storetest.Open(t, store.Config{RedisURL: b.URL, ClusterAddrs: b.ClusterAddrs,
		Prefix: redistest.Prefix(t), Shards: 4, WebhookOutboxLen: 1000})
	de.q = webhooks.NewDeadLetters(st.Base(), webhooks.Config{})
	h := api.NewHandler(api.Config{Rooms: rooms.NewService(st), Lobby: lobby.NewService(st.Listing()),
		Auth:  &api.Auth{Secret: []byte("test-secret"), GuestEnabled: true},
		Ready: st.Ping, Spec: realsync.OpenAPI, AdminToken: adminToken, Instances: st.Fleet().Instances, DeadLetters: de.q,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	de.env = &env{t: t, url: srv.URL, store: st}
	var err error
	de.d, err = webhooks.New(st.Base(), webhooks.Config{Endpoints: []webhooks.Endpoint{{ID: "ep", Events: []string{"*"}}},
		Consumer: "test", MaxAttempts: 1, Send: func(_ context.Context, d webhooks.Delivery) error {
			de.mu.Lock()
			defer de.mu.Unlock()
			de.got = append(de.got, d)
			if de.down {
				return errors.New("ep answered 503")
			}
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	// the events: a room created, joined, left, closed
	ctx := context.Background()
	alice, bob := rooms.User{ID: "u-alice", Name: "alice"}, rooms.User{ID: "u-bob", Name: "bob"}
	j, err := st.Create(ctx, alice, rooms.NewRoom{Name: "Arena", Mode: "battle", Region: "eu", MaxPlayers: 4,
		Visibility: rooms.Public, State: rooms.State{}, StatePolicy: rooms.PolicyOwner})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Join(ctx, bob, j.Room.ID); err != nil {
		t.Fatal(err)
	}
	if err := st.Leave(ctx, bob, j.Room.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Delete(ctx, alice, j.Room.ID); err != nil {
		t.Fatal(err)
	}
	de.drain(t)
	return de
}

// drain steps the dispatcher until a step handles nothing.
func (de *deadEnv) drain(t *testing.T) {
	t.Helper()
	for range 50 {
		n, err := de.d.Step(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
	}
	t.Fatal("the dispatcher never ran dry")
}

// first lists every dead letter (list) and returns them with the first's id.
func (de *deadEnv) first(t *testing.T) (all []map[string]any, id string) {
	t.Helper()
	if all = de.list(t, 100); len(all) == 0 {
		t.Fatal("no dead letter")
	}
	return all, all[0]["id"].(string)
}

// list pages through every dead letter over HTTP, limit at a time.
func (de *deadEnv) list(t *testing.T, limit int) []map[string]any {
	t.Helper()
	var all []map[string]any
	for cursor, pages := "", 0; ; pages++ {
		if pages > 100 {
			t.Fatal("paging never ends")
		}
		path := fmt.Sprintf("/v1/admin/webhooks/dead-letters?limit=%d", limit)
		if cursor != "" {
			path += "&cursor=" + cursor
		}
		r := de.do("GET", path, adminToken, nil)
		if r.status != 200 {
			t.Fatalf("GET %s: %d %s", path, r.status, r.raw)
		}
		page, _ := r.body["deadLetters"].([]any)
		if len(page) > limit {
			t.Fatalf("page of %d for limit %d", len(page), limit)
		}
		for _, p := range page {
			all = append(all, p.(map[string]any))
		}
		next, ok := r.body["nextCursor"].(string)
		if !ok {
			if r.body["nextCursor"] != nil {
				t.Fatalf("nextCursor %v", r.body["nextCursor"])
			}
			return all
		}
		cursor = next
	}
}

// The dead letters are listed over HTTP with every field, paged one at a
// time or all at once alike; one is replayed (202), leaves the list at
// once, cannot be replayed twice (404 DEAD_LETTER_NOT_FOUND), and is
// delivered again with the same webhook-id and its retry count reset.
func TestWebhookDeadLettersOverHTTP(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		de := newDeadEnv(t, b)
		all := de.list(t, 100)
		if len(all) < 4 || len(all) != len(de.got) {
			t.Fatalf("%d dead letters after %d failed tries: %v", len(all), len(de.got), all)
		}
		types := map[string]bool{}
		for _, l := range all {
			ev, _ := l["event"].(map[string]any)
			if l["endpoint"] != "ep" || l["attempts"] != float64(1) || l["lastError"] != "ep answered 503" ||
				ev == nil || ev["type"] != l["type"] || l["failedAt"] == "" || l["messageId"] == "" {
				t.Fatalf("dead letter %v", l)
			}
			types[l["type"].(string)] = true
		}
		for _, want := range []string{"player_joined", "player_left", "room_closed"} {
			if !types[want] {
				t.Fatalf("no %s among the dead letters %v", want, types)
			}
		}
		one := de.list(t, 1)
		if len(one) != len(all) {
			t.Fatalf("paged one at a time: %d dead letters, at once %d", len(one), len(all))
		}
		for i := range one {
			if one[i]["id"] != all[i]["id"] {
				t.Fatalf("page order differs at %d: %v vs %v", i, one[i]["id"], all[i]["id"])
			}
		}

		id, msg := all[0]["id"].(string), all[0]["messageId"].(string)
		de.mu.Lock()
		de.down, de.got = false, nil
		de.mu.Unlock()
		// an id not as the server wrote it is no dead letter's: 404,
		// and nothing is replayed
		sh, entry, _ := strings.Cut(id, ".")
		ms, seq, _ := strings.Cut(entry, "-")
		for _, bad := range []string{"+" + id, "0" + id, "00" + id, sh + ".0" + entry, sh + ".+" + entry,
			sh + "." + ms + "-0" + seq, sh + "." + ms + "-+" + seq, sh + "." + ms, ""} {
			if r := de.do("POST", "/v1/admin/webhooks/dead-letters/"+bad+"/replay", adminToken, nil); r.status != 404 || r.code() != "DEAD_LETTER_NOT_FOUND" {
				t.Fatalf("replay of %q (dead letter %q): %d %s, want 404 DEAD_LETTER_NOT_FOUND", bad, id, r.status, r.raw)
			}
		}
		if left := de.list(t, 100); len(left) != len(all) {
			t.Fatalf("%d dead letters after replays of ids not as written, want %d", len(left), len(all))
		}
		if r := de.do("POST", "/v1/admin/webhooks/dead-letters/"+id+"/replay", adminToken, nil); r.status != 202 {
			t.Fatalf("replay: %d %s", r.status, r.raw)
		}
		if r := de.do("POST", "/v1/admin/webhooks/dead-letters/"+id+"/replay", adminToken, nil); r.status != 404 || r.code() != "DEAD_LETTER_NOT_FOUND" {
			t.Fatalf("second replay: %d %s", r.status, r.raw)
		}
		if left := de.list(t, 100); len(left) != len(all)-1 {
			t.Fatalf("%d dead letters after one replay, want %d", len(left), len(all)-1)
		}
		de.drain(t)
		if len(de.got) != 1 || de.got[0].MessageID != msg || de.got[0].RetryCount != 0 || de.got[0].Endpoint != "ep" {
			t.Fatalf("tries after the replay: %+v, want one of %s with retry count 0", de.got, msg)
		}
		if left := de.list(t, 100); len(left) != len(all)-1 {
			t.Fatalf("%d dead letters after the replayed one was delivered, want %d", len(left), len(all)-1)
		}
	})
}

// A replay of a dead letter whose endpoint's backlog in its shard is at
// the bound (the default 10 000, written as the counts would have it) is
// 409 WEBHOOK_BACKLOG_FULL, a problem saying so, and the letter stays
// listed; once the backlog is below the bound it is replayed (202).
func TestWebhookReplayOfAFullBacklogOverHTTP(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		de := newDeadEnv(t, b)
		all, id := de.first(t)
		sh, _, _ := strings.Cut(id, ".")
		n, _ := strconv.Atoi(sh)
		backlog := de.store.Base().Tag(n) + ":webhooks:backlog"
		ctx := context.Background()
		if err := de.store.Client().HSet(ctx, backlog, "ep", 10000).Err(); err != nil {
			t.Fatal(err)
		}
		r := de.do("POST", "/v1/admin/webhooks/dead-letters/"+id+"/replay", adminToken, nil)
		want := fmt.Sprintf(`Endpoint "ep" has 10000 deliveries pending or retrying in shard %d, its bound REALSYNC_WEBHOOK_MAX_BACKLOG (10000): replay dead letter %s once it has caught up.`, n, id)
		if detail, _ := r.body["detail"].(string); r.status != 409 || r.code() != "WEBHOOK_BACKLOG_FULL" ||
			detail != want || r.body["title"] != "Webhook endpoint's backlog full" {
			t.Fatalf("replay at the bound: %d %s, want 409 WEBHOOK_BACKLOG_FULL, detail %q", r.status, r.raw, want)
		}
		if left := de.list(t, 100); fmt.Sprint(left) != fmt.Sprint(all) {
			t.Fatalf("a refused replay changed the dead letters: %v, was %v", left, all)
		}
		if err := de.store.Client().HSet(ctx, backlog, "ep", 9999).Err(); err != nil {
			t.Fatal(err)
		}
		if r := de.do("POST", "/v1/admin/webhooks/dead-letters/"+id+"/replay", adminToken, nil); r.status != 202 {
			t.Fatalf("replay below the bound: %d %s", r.status, r.raw)
		}
		if err := de.store.Client().HIncrBy(ctx, backlog, "ep", -9999).Err(); err != nil { // the hand-written count gone
			t.Fatal(err)
		}
	})
}

// A replay of a dead letter whose endpoint ("ep") the endpoints file no
// longer names is 409 WEBHOOK_ENDPOINT_REMOVED, a problem naming it, and
// the letter stays listed as it was; once "ep" is back in the file it is
// replayed (202).
func TestWebhookReplayOfARemovedEndpointsLetterOverHTTP(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		de := newDeadEnv(t, b)
		all, id := de.first(t)
		de.q.SetEndpoints([]string{"other"}) // the file reloaded without ep
		r := de.do("POST", "/v1/admin/webhooks/dead-letters/"+id+"/replay", adminToken, nil)
		want := fmt.Sprintf(`Endpoint "ep" of dead letter %s is not in the endpoints file: its tries would all fail ("no longer configured"); add the endpoint back to replay it.`, id)
		if detail, _ := r.body["detail"].(string); r.status != 409 || r.code() != "WEBHOOK_ENDPOINT_REMOVED" ||
			detail != want || r.body["title"] != "Webhook endpoint no longer configured" {
			t.Fatalf("replay of a removed endpoint's letter: %d %s, want 409 WEBHOOK_ENDPOINT_REMOVED, detail %q", r.status, r.raw, want)
		}
		if left := de.list(t, 100); fmt.Sprint(left) != fmt.Sprint(all) {
			t.Fatalf("a refused replay changed the dead letters: %v, was %v", left, all)
		}
		de.q.SetEndpoints([]string{"other", "ep"})
		if r := de.do("POST", "/v1/admin/webhooks/dead-letters/"+id+"/replay", adminToken, nil); r.status != 202 {
			t.Fatalf("replay once ep is back: %d %s", r.status, r.raw)
		}
	})
}

// Bad input: limits and cursors not as the server wrote them are 422
// naming the field; a replay of an id that is no dead letter is 404
// DEAD_LETTER_NOT_FOUND; without a queue wired the routes do not exist.
func TestWebhookDeadLettersBadInput(t *testing.T) {
	b := redistest.Backends(t)[0]
	de := newDeadEnv(t, b)
	tests := []struct {
		name, method, path string
		status             int
		code, field        string
	}{
		{"LimitZero", "GET", "/v1/admin/webhooks/dead-letters?limit=0", 422, "VALIDATION_FAILED", "limit"},
		{"LimitTooLarge", "GET", "/v1/admin/webhooks/dead-letters?limit=101", 422, "VALIDATION_FAILED", "limit"},
		{"LimitLeadingZero", "GET", "/v1/admin/webhooks/dead-letters?limit=020", 422, "VALIDATION_FAILED", "limit"},
		{"LimitNotANumber", "GET", "/v1/admin/webhooks/dead-letters?limit=x", 422, "VALIDATION_FAILED", "limit"},
		{"CursorGarbage", "GET", "/v1/admin/webhooks/dead-letters?cursor=garbage", 422, "VALIDATION_FAILED", "cursor"},
		{"CursorUnknownShard", "GET", "/v1/admin/webhooks/dead-letters?cursor=4.1-0", 422, "VALIDATION_FAILED", "cursor"},
		{"CursorTooLong", "GET", "/v1/admin/webhooks/dead-letters?cursor=" + strings.Repeat("1", 65), 422, "VALIDATION_FAILED", "cursor"},
		{"ReplayUnknown", "POST", "/v1/admin/webhooks/dead-letters/0.1-0/replay", 404, "DEAD_LETTER_NOT_FOUND", ""},
		{"ReplayGarbage", "POST", "/v1/admin/webhooks/dead-letters/nope/replay", 404, "DEAD_LETTER_NOT_FOUND", ""},
		{"ReplayUnknownShard", "POST", "/v1/admin/webhooks/dead-letters/9.1-0/replay", 404, "DEAD_LETTER_NOT_FOUND", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			de.t = t
			r := de.do(tc.method, tc.path, adminToken, nil)
			if r.status != tc.status || r.code() != tc.code {
				t.Fatalf("%s %s: %d %s, want %d %s", tc.method, tc.path, r.status, r.raw, tc.status, tc.code)
			}
			if tc.field != "" {
				errs, _ := r.body["errors"].([]any)
				if len(errs) != 1 || errs[0].(map[string]any)["field"] != tc.field {
					t.Fatalf("errors %v, want one naming %s", r.body["errors"], tc.field)
				}
			}
		})
	}
	t.Run("NoQueue", func(t *testing.T) {
		e := newEnv(t, b, true, func(c *api.Config, st *store.Store, _ string) {
			c.AdminToken, c.Instances = adminToken, st.Fleet().Instances
		})
		for _, p := range []string{"GET /v1/admin/webhooks/dead-letters", "POST /v1/admin/webhooks/dead-letters/0.1-0/replay"} {
			var m, path string
			fmt.Sscan(p, &m, &path)
			if r := e.do(m, path, adminToken, nil); r.status != 404 || r.code() != "NOT_FOUND" {
				t.Fatalf("%s without a queue: %d %s", p, r.status, r.raw)
			}
		}
	})
}
