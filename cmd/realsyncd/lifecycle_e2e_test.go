package main

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/internal/redistest"
)

// Rooms abandoned in every way a client can (walked away from, finished,
// a stream dropped, private, quick-joined) are closed by the janitor with
// short timeouts, and then nothing of them is left in Redis but closed logs
// on their way out (with a TTL), their members' notices and holdings
// markers ("in no room"), expiring, and the deployment's fixed keys.
func TestAbandonedRoomsLeaveNothing(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	prefix := redistest.Prefix(t)
	url := redistest.StandaloneURL(t)
	r := redis.NewClient(mustParse(t, url))
	defer r.Close()
	// the finished room must outlast the call after its finish (409
	// ROOM_FINISHED, not yet closed), and the rooms their calls before
	// (a join, the finish): 500 ms of retention did not on a loaded
	// machine, nor would 1.2 s and 1.5 s of idle timeout a stall of the
	// machine; 4 s, still before the idle timeout, costs nothing as the
	// walked-away room's 6 s decide the wait
	in := start(t, bin, "REALSYNC_REDIS_URL="+url, "REALSYNC_KEY_PREFIX="+prefix,
		"REALSYNC_ROOM_IDLE_TIMEOUT=6s", "REALSYNC_FINISHED_RETENTION=4s",
		"REALSYNC_DISCONNECT_GRACE=300ms", "REALSYNC_PRESENCE_TTL=600ms", "REALSYNC_OFFLINE_TTL=1m")
	alice, bob := guest(t, in, "alice"), guest(t, in, "bob")
	room := func(token string, extra map[string]any) string {
		body := map[string]any{"name": "r", "mode": "battle", "region": "eu"}
		for k, v := range extra {
			body[k] = v
		}
		status, res := call(t, "POST", in.url+"/v1/rooms", token, body)
		if status != 201 {
			t.Fatalf("create: %d %v", status, res)
		}
		return res["room"].(map[string]any)["id"].(string)
	}
	// walked away from
	room(alice, nil)
	// finished
	fin := room(alice, map[string]any{"mode": "duel"})
	call(t, "POST", in.url+"/v1/rooms/"+fin+"/join", bob, nil)
	if status, res := call(t, "PATCH", in.url+"/v1/rooms/"+fin, alice, map[string]any{"status": "finished"}); status != 200 {
		t.Fatalf("finish: %d %v", status, res)
	}
	if status, res := call(t, "PATCH", in.url+"/v1/rooms/"+fin+"/state", bob, map[string]any{"player_2_x": 1}); status != 409 || res["code"] != "ROOM_FINISHED" {
		t.Fatalf("patch of a finished room: %d %v", status, res)
	}
	// private, with a stream that drops
	priv := room(bob, map[string]any{"visibility": "private"})
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", in.url+"/v1/rooms/"+priv+"/events", nil)
	req.Header.Set("Authorization", "Bearer "+bob)
	if res, err := http.DefaultClient.Do(req); err != nil || res.StatusCode != 200 {
		t.Fatalf("stream: %v %v", res, err)
	}
	time.Sleep(200 * time.Millisecond)
	cancel()
	// quick-joined
	if status, res := call(t, "POST", in.url+"/v1/matchmaking/quick-join", bob,
		map[string]any{"mode": "ffa", "regions": []string{"eu"}, "create": map[string]any{"name": "q"}}); status != 201 {
		t.Fatalf("quick-join: %d %v", status, res)
	}

	left := func() (kept []string, logs int) {
		keys, err := r.Keys(context.Background(), "*"+prefix+"*").Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			switch {
			case strings.HasSuffix(k, ":meta"), strings.HasSuffix(k, ":clock"), strings.HasSuffix(k, ":janitor"),
				strings.Contains(k, ":instances}"): // the running instance's registration
			case strings.Contains(k, ":ulog"), strings.Contains(k, ":ubody:"): // the members' room_closed notices, expiring
				if ttl := r.PTTL(context.Background(), k).Val(); ttl <= 0 || ttl > time.Minute {
					t.Fatalf("personal log %s has TTL %v, want REALSYNC_OFFLINE_TTL (1m) at most", k, ttl)
				}
			case strings.Contains(k, ":held:") && r.HLen(context.Background(), k).Val() == 1 &&
				r.HExists(context.Background(), k, "#").Val(): // a holdings key's "in no room" marker, expiring
				if ttl := r.PTTL(context.Background(), k).Val(); ttl <= 0 || ttl > time.Hour {
					t.Fatalf("holdings marker %s has TTL %v, want an hour at most", k, ttl)
				}
			case strings.Contains(k, ":guests@"): // the address' guest accounts made, expiring once drained
				if ttl := r.PTTL(context.Background(), k).Val(); ttl <= 0 || ttl > time.Hour {
					t.Fatalf("guests counter %s has TTL %v, want an hour at most (60 an hour)", k, ttl)
				}
			case strings.HasSuffix(k, ":log") && r.TTL(context.Background(), k).Val() > 0:
				if ttl := r.TTL(context.Background(), k).Val(); ttl > 5*time.Minute {
					t.Fatalf("closed log %s has TTL %v", k, ttl)
				}
				logs++
			default:
				kept = append(kept, k)
			}
		}
		return kept, logs
	}
	if kept, _ := left(); len(kept) == 0 {
		t.Fatal("no room keys before the janitor's work")
	}
	deadline := time.Now().Add(40 * time.Second)
	for {
		kept, logs := left()
		if len(kept) == 0 && logs == 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 40 s, still %v and %d closed logs", kept, logs)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if status, res := call(t, "GET", in.url+"/v1/me/rooms", bob, nil); status != 200 || len(res["rooms"].([]any)) != 0 {
		t.Fatalf("bob's rooms: %d %v", status, res)
	}
}
