package api_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/api"
	"github.com/realsync/realsync/internal/idempotency"
	"github.com/realsync/realsync/internal/rediskeys"
	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/store"
	idemstore "github.com/realsync/realsync/store/idempotency"
)

// idemKeys counts the Idempotency-Key records of the store under test.
func (e *env) idemKeys() []string {
	e.t.Helper()
	keys, err := rediskeys.Scan(context.Background(), e.store.Client(), "*"+e.prefix+"*:idem:*")
	if err != nil {
		e.t.Fatal(err)
	}
	return keys
}

// A create sent again with its Idempotency-Key gets the first answer
// (replayed, no second room); the key with another body or route is
// refused; another user's same key is theirs; an error answer frees the
// key; a quick-join's replay is its first answer (201 created), not what
// running it again would say (200, already a member); every record
// expires within 24 hours.
func TestIdempotencyKey(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		alice, _ := e.guest("alice")
		bob, _ := e.guest("bob")
		first := e.do("POST", "/v1/rooms", alice, arena, "Idempotency-Key", "create-1")
		want(t, first, 201, "")
		if first.header.Get("Idempotent-Replayed") != "" {
			t.Fatal("a first answer marked replayed")
		}
		again := e.do("POST", "/v1/rooms", alice, arena, "Idempotency-Key", "create-1")
		want(t, again, 201, "")
		if again.raw != first.raw || again.header.Get("Location") != first.header.Get("Location") ||
			again.header.Get("Idempotent-Replayed") != "true" || again.header.Get("Content-Type") != first.header.Get("Content-Type") {
			t.Fatalf("replay %s %v, want %s %v replayed", again.raw, again.header, first.raw, first.header)
		}
		other := map[string]any{"name": "Other", "mode": "battle", "region": "eu", "maxPlayers": 2}
		want(t, e.do("POST", "/v1/rooms", alice, other, "Idempotency-Key", "create-1"), 422, "IDEMPOTENCY_KEY_REUSED")
		want(t, e.do("POST", "/v1/matchmaking/quick-join", alice, arena, "Idempotency-Key", "create-1"), 422, "IDEMPOTENCY_KEY_REUSED")
		want(t, e.do("POST", "/v1/rooms", bob, arena, "Idempotency-Key", "create-1"), 201, "") // bob's own key
		mine := e.do("GET", "/v1/me/rooms", alice, nil)
		if n := len(mine.body["rooms"].([]any)); n != 1 {
			t.Fatalf("alice is in %d rooms, want 1: %s", n, mine.raw)
		}
		// the records gone (an error answer, a 503 after the room was
		// made, frees the key): the room's shard knows the key
		for _, k := range e.idemKeys() {
			if err := e.store.Client().Del(context.Background(), k).Err(); err != nil {
				t.Fatal(err)
			}
		}
		found := e.do("POST", "/v1/rooms", alice, arena, "Idempotency-Key", "create-1")
		want(t, found, 201, "")
		if found.header.Get("Location") != first.header.Get("Location") || found.header.Get("Idempotent-Replayed") != "" {
			t.Fatalf("sent again, the record gone: %s %v, want the room at %s", found.raw, found.header, first.header.Get("Location"))
		}
		if mine := e.do("GET", "/v1/me/rooms", alice, nil); len(mine.body["rooms"].([]any)) != 1 {
			t.Fatalf("alice is in %s, want 1 room", mine.raw)
		}
		want(t, e.do("POST", "/v1/rooms", bob, arena, "Idempotency-Key", "create-1"), 201, "") // bob's, found again

		// an error frees the key: the request changed nothing
		bad := map[string]any{"name": "Bad", "mode": "battle", "region": "eu", "maxPlayers": 0}
		want(t, e.do("POST", "/v1/rooms", alice, bad, "Idempotency-Key", "create-2"), 422, "VALIDATION_FAILED")
		want(t, e.do("POST", "/v1/rooms", alice, other, "Idempotency-Key", "create-2"), 201, "")

		// quick-join: the replay is the first answer
		carol, _ := e.guest("carol")
		qj := map[string]any{"mode": "duel", "regions": []string{"eu"}, "create": map[string]any{"name": "Duel", "maxPlayers": 2}}
		q1 := e.do("POST", "/v1/matchmaking/quick-join", carol, qj, "Idempotency-Key", "qj-1")
		want(t, q1, 201, "")
		q2 := e.do("POST", "/v1/matchmaking/quick-join", carol, qj, "Idempotency-Key", "qj-1")
		if q2.status != 201 || q2.raw != q1.raw || q2.header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("quick-join replay %d %s, want 201 %s", q2.status, q2.raw, q1.raw)
		}
		want(t, e.do("POST", "/v1/matchmaking/quick-join", carol, qj), 200, "") // run again: a member

		keys := e.idemKeys()
		if len(keys) != 4 { // alice's create-1 and create-2, bob's create-1, carol's qj-1
			t.Fatalf("%d records, want 4: %v", len(keys), keys)
		}
		for _, k := range keys {
			ttl, err := e.store.Client().PTTL(context.Background(), k).Result()
			if err != nil || ttl <= idempotency.TTL-time.Hour || ttl > idempotency.TTL {
				t.Fatalf("record %s expires in %v (%v), want within 24 h", k, ttl, err)
			}
		}
	})
}

// A room message (and a direct message) sent with an Idempotency-Key is
// sent once: its replay is the first answer; and where the key's record is gone (an error answer
// frees it: a 503 after the message was sent), the room itself knows the
// key (the recipient's inbox) and answers the first version (time)
// without sending again, or 422
// IDEMPOTENCY_KEY_REUSED for another message.
func TestMessageIdempotencyKey(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		alice, _ := e.guest("alice")
		created := e.do("POST", "/v1/rooms", alice, arena)
		want(t, created, 201, "")
		path := "/v1/rooms/" + created.body["room"].(map[string]any)["id"].(string) + "/messages"
		gg := map[string]any{"type": "chat", "data": "gg"}
		first := e.do("POST", path, alice, gg, "Idempotency-Key", "msg-1")
		want(t, first, 202, "")
		again := e.do("POST", path, alice, gg, "Idempotency-Key", "msg-1")
		if again.status != 202 || again.raw != first.raw || again.header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("replay %d %s %v, want 202 %s replayed", again.status, again.raw, again.header, first.raw)
		}
		// the key on another room is another request
		other := "/v1/rooms/" + e.create(alice, arena)["id"].(string) + "/messages"
		want(t, e.do("POST", other, alice, gg, "Idempotency-Key", "msg-1"), 422, "IDEMPOTENCY_KEY_REUSED")
		// the records gone, as after an error answer
		if keys := e.idemKeys(); len(keys) != 1 || e.store.Client().Del(context.Background(), keys...).Err() != nil {
			t.Fatalf("records %v, want the message's", keys)
		}
		room := e.do("POST", path, alice, gg, "Idempotency-Key", "msg-1")
		if room.status != 202 || room.raw != first.raw || room.header.Get("Idempotent-Replayed") != "" {
			t.Fatalf("sent again, the record gone: %d %s %v, want 202 %s", room.status, room.raw, room.header, first.raw)
		}
		e.store.Client().Del(context.Background(), e.idemKeys()...)
		want(t, e.do("POST", path, alice, map[string]any{"type": "chat", "data": "GG"}, "Idempotency-Key", "msg-1"), 422, "IDEMPOTENCY_KEY_REUSED")
		history := e.do("GET", path, alice, nil)
		if n := len(history.body["messages"].([]any)); n != 1 {
			t.Fatalf("%d messages, want 1: %s", n, history.raw)
		}

		// a direct message alike, its inbox knowing the key
		_, bobID := e.guest("bob")
		dm := "/v1/users/" + bobID + "/messages"
		first = e.do("POST", dm, alice, gg, "Idempotency-Key", "dm-1")
		want(t, first, 202, "")
		if again := e.do("POST", dm, alice, gg, "Idempotency-Key", "dm-1"); again.raw != first.raw || again.header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("direct message replay %d %s, want %s replayed", again.status, again.raw, first.raw)
		}
		_, carolID := e.guest("carol") // the key to another user is another request
		want(t, e.do("POST", "/v1/users/"+carolID+"/messages", alice, gg, "Idempotency-Key", "dm-1"), 422, "IDEMPOTENCY_KEY_REUSED")
		e.store.Client().Del(context.Background(), e.idemKeys()...)
		logged := func() int64 {
			return e.store.Client().XLen(context.Background(), e.store.UserLogs().KeysOf(bobID).Log).Val()
		}
		if inbox := e.do("POST", dm, alice, gg, "Idempotency-Key", "dm-1"); inbox.status != 202 || inbox.raw != first.raw ||
			inbox.header.Get("Idempotent-Replayed") != "" || logged() != 1 {
			t.Fatalf("direct message sent again, the record gone: %d %s, %d logged; want 202 %s, 1", inbox.status, inbox.raw, logged(), first.raw)
		}
		e.store.Client().Del(context.Background(), e.idemKeys()...)
		want(t, e.do("POST", dm, alice, map[string]any{"type": "chat", "data": "GG"}, "Idempotency-Key", "dm-1"), 422, "IDEMPOTENCY_KEY_REUSED")
		if n := logged(); n != 1 {
			t.Fatalf("bob's log holds %d events, want the one message", n)
		}
	})
}

// An invite sent with an Idempotency-Key is delivered once (a tester's
// find: the header was ignored, and an invite retried after a lost answer
// reached the invitee twice): its replay is the first answer; where the
// key's record is gone (an error answer frees it: a 503 after the invite
// was sent), the invitee's inbox knows the key and answers the first
// invite's ts without sending again; the key with an invite to another
// room is 422 IDEMPOTENCY_KEY_REUSED. The invitee's stream then gets the
// one invite. Without a key, each send is another invite.
func TestInviteIdempotencyKey(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		alice, _ := e.guest("alice")
		bob, bobID := e.guest("bob")
		room := e.create(alice, arena)["id"].(string)
		path := "/v1/rooms/" + room + "/invites"
		invite := map[string]any{"userId": bobID}
		logged := func() int64 {
			return e.store.Client().XLen(context.Background(), e.store.UserLogs().KeysOf(bobID).Log).Val()
		}
		first := e.do("POST", path, alice, invite, "Idempotency-Key", "inv-1")
		want(t, first, 202, "")
		again := e.do("POST", path, alice, invite, "Idempotency-Key", "inv-1")
		if again.status != 202 || again.raw != first.raw || again.header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("replay %d %s %v, want 202 %s replayed", again.status, again.raw, again.header, first.raw)
		}
		if n := logged(); n != 1 {
			t.Fatalf("bob's log holds %d events after a replayed invite, want 1", n)
		}
		// the records gone, as after an error answer: the inbox knows the key
		e.store.Client().Del(context.Background(), e.idemKeys()...)
		inbox := e.do("POST", path, alice, invite, "Idempotency-Key", "inv-1")
		if inbox.status != 202 || inbox.raw != first.raw || inbox.header.Get("Idempotent-Replayed") != "" || logged() != 1 {
			t.Fatalf("invite sent again, the record gone: %d %s, %d logged; want 202 %s, 1", inbox.status, inbox.raw, logged(), first.raw)
		}
		e.store.Client().Del(context.Background(), e.idemKeys()...)
		other := "/v1/rooms/" + e.create(alice, arena)["id"].(string) + "/invites"
		want(t, e.do("POST", other, alice, invite, "Idempotency-Key", "inv-1"), 422, "IDEMPOTENCY_KEY_REUSED")
		if n := logged(); n != 1 {
			t.Fatalf("bob's log holds %d events, want the one invite", n)
		}
		s := e.me(bob, "pc")
		_, evs := opening(t, s)
		s.close()
		if got := texts(evs); len(got) != 1 || got[0] != "invite" || evs[0].data["roomId"] != room {
			t.Fatalf("bob's stream got %v %v, want the one invite to %s", got, evs, room)
		}
		// without a key, each send is an invite
		want(t, e.do("POST", path, alice, invite), 202, "")
		want(t, e.do("POST", path, alice, invite), 202, "")
		if n := logged(); n != 3 {
			t.Fatalf("bob's log holds %d events, want 3", n)
		}
	})
}

// A key that is not 1..255 visible ASCII characters is refused naming
// the header, and nothing is created or recorded.
func TestIdempotencyKeyForm(t *testing.T) {
	e := newEnv(t, redistestEmbedded, true)
	alice, _ := e.guest("alice")
	for _, k := range []string{strings.Repeat("k", 256), "with space", "tab\tkey", "caf\u00e9"} {
		r := e.do("POST", "/v1/rooms", alice, arena, "Idempotency-Key", k)
		want(t, r, 422, "VALIDATION_FAILED")
		if !strings.Contains(r.raw, `"field":"Idempotency-Key"`) {
			t.Fatalf("%q: %s does not name the header", k, r.raw)
		}
	}
	want(t, e.do("POST", "/v1/rooms", alice, arena, "Idempotency-Key", strings.Repeat("k", 255)), 201, "")
	if mine := e.do("GET", "/v1/me/rooms", alice, nil); len(mine.body["rooms"].([]any)) != 1 {
		t.Fatalf("rooms after refused keys: %s", mine.raw)
	}
	if n := len(e.idemKeys()); n != 1 {
		t.Fatalf("%d records, want 1", n)
	}
}

// Many copies of one request with one key at once create one room: each
// answer is that room's 201 (run or replayed) or 409
// IDEMPOTENCY_KEY_IN_USE with Retry-After while the first runs.
func TestIdempotencyKeyConcurrent(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		alice, _ := e.guest("alice")
		const n = 24
		answers := make([]resp, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() { answers[i] = e.do("POST", "/v1/rooms", alice, arena, "Idempotency-Key", "race") })
		}
		wg.Wait()
		created := ""
		for _, a := range answers {
			switch a.status {
			case 201:
				if created != "" && a.raw != created {
					t.Fatalf("two different rooms: %s and %s", created, a.raw)
				}
				created = a.raw
			case 409:
				want(t, a, 409, "IDEMPOTENCY_KEY_IN_USE")
				if a.header.Get("Retry-After") == "" {
					t.Fatal("409 without Retry-After")
				}
			default:
				t.Fatalf("answer %d %s", a.status, a.raw)
			}
		}
		if created == "" {
			t.Fatal("no answer created the room")
		}
		if mine := e.do("GET", "/v1/me/rooms", alice, nil); len(mine.body["rooms"].([]any)) != 1 {
			t.Fatalf("rooms: %s", mine.raw)
		}
	})
}

// The answers kept for one user's keys hold a budget (an abuse tester's
// find: one account's keyed quick-joins kept 40 KB each, 6.5 GB a day): a
// new key past it is 429 IDEMPOTENCY_KEYS_LIMITED with a Retry-After until
// the oldest expires, and nothing is done; a key already answered is
// replayed all the same; another user has a budget of their own; the
// budget's keys expire with the answers; an answer past its TTL leaves
// the budget.
func TestIdempotencyKeysBudget(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		e := newEnv(t, b, true, func(c *api.Config, st *store.Store, _ string) {
			c.Idempotency = idemstore.New(st.Base()).WithBudget(4000)
		})
		alice, _ := e.guest("alice")
		bob, _ := e.guest("bob")
		create := func(token, key string) resp {
			return e.do("POST", "/v1/rooms", token, map[string]any{"name": "Arena " + key, "mode": "battle", "region": "eu"},
				"Idempotency-Key", key)
		}
		first := create(alice, "k1")
		want(t, first, 201, "")
		n := 1
		for ; n < 10; n++ { // each answer about 800 bytes, 1 800 counted
			if r := create(alice, fmt.Sprintf("k%d", n+1)); r.status != 201 {
				want(t, r, 429, "IDEMPOTENCY_KEYS_LIMITED")
				secs, err := strconv.Atoi(r.header.Get("Retry-After"))
				if err != nil || secs < 23*3600 || secs > 24*3600 {
					t.Fatalf("Retry-After %q, want until the oldest answer expires (about 24 h)", r.header.Get("Retry-After"))
				}
				break
			}
		}
		if n < 2 || n > 3 {
			t.Fatalf("%d keyed creates kept within 4 000 bytes, want 2 or 3", n)
		}
		if rooms := e.do("GET", "/v1/me/rooms", alice, nil).body["rooms"].([]any); len(rooms) != n {
			t.Fatalf("alice is in %d rooms, want %d: the refused key did nothing", len(rooms), n)
		}
		if again := create(alice, "k1"); again.status != 201 || again.raw != first.raw || again.header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("a kept answer past the budget: %d %s, want it replayed", again.status, again.raw)
		}
		want(t, create(bob, "k1"), 201, "")

		ctx := context.Background()
		kept, err := rediskeys.Scan(ctx, e.store.Client(), "*"+e.prefix+"*:idemq:*")
		if err != nil || len(kept) != 4 { // alice's and bob's entries and bytes
			t.Fatalf("budget keys %v (%v), want 4", kept, err)
		}
		for _, k := range kept {
			if ttl, err := e.store.Client().PTTL(ctx, k).Result(); err != nil || ttl <= idempotency.TTL-time.Hour || ttl > idempotency.TTL {
				t.Fatalf("%s expires in %v (%v), want within 24 h", k, ttl, err)
			}
		}
		// alice's answers recorded a TTL ago: out of the budget
		for _, k := range kept {
			if typ, _ := e.store.Client().Type(ctx, k).Result(); typ != "zset" {
				continue
			}
			ms, _ := e.store.Client().ZRange(ctx, k, 0, -1).Result()
			for _, m := range ms {
				e.store.Client().ZAddXX(ctx, k, redis.Z{Score: float64(time.Now().Add(-idempotency.TTL - time.Minute).UnixMilli()), Member: m})
			}
		}
		want(t, create(alice, "k-later"), 201, "")
		// a memory policy that evicts took the entries, not their
		// count: counted afresh, not over the budget for 24 h
		for _, k := range kept {
			if strings.HasSuffix(k, ":n") {
				e.store.Client().Set(ctx, k, 1_000_000, time.Hour)
			} else {
				e.store.Client().Del(ctx, k)
			}
		}
		want(t, create(alice, "k-evicted"), 201, "")
	})
}
