package batch

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/internal/redistest"
)

// A caller whose context ends once its call went out waits for Redis'
// answer: an error means the call did not run, never that it ran unseen
// (a stream opening that took its place cleans up only on that word).
// Calls against a script that holds Redis 100 ms, their contexts ended at
// once, early, and while the script runs; after each, the key the script
// sets first says whether it ran.
func TestBatchSentCallIsAnsweredNotAbandoned(t *testing.T) {
	client := batchedClient(t)
	slow := redis.NewScript(`redis.call('SET', KEYS[1], '1')
local function us() local t = redis.call('TIME') return t[1] * 1000000 + t[2] end
local deadline = us() + 100000
while us() < deadline do end
return 'done'`)
	ctx := context.Background()
	if err := slow.Load(ctx, client).Err(); err != nil {
		t.Fatal(err)
	}
	ranUnseen, answeredLate := 0, 0
	for i, d := range []time.Duration{0, 0, time.Millisecond, 5 * time.Millisecond, 20 * time.Millisecond,
		40 * time.Millisecond, 60 * time.Millisecond, 80 * time.Millisecond} {
		key := fmt.Sprint("k", i)
		cctx, cancel := context.WithCancel(ctx)
		if d == 0 {
			cancel()
		} else {
			time.AfterFunc(d, cancel)
		}
		res, err := slow.EvalSha(cctx, client, []string{key}).Result()
		cancel()
		// PING waits behind the script, if it runs: then the key is there
		if err := client.Ping(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		ran, err2 := client.Exists(ctx, key).Result()
		if err2 != nil {
			t.Fatal(err2)
		}
		switch {
		case err != nil && ran == 1:
			ranUnseen++
			t.Errorf("context ended after %s: the caller got %v, but the script ran", d, err)
		case err == nil && (ran != 1 || res != "done"):
			t.Errorf("context ended after %s: answered %v, ran %d", d, res, ran)
		case err == nil && d > 0:
			answeredLate++
		}
	}
	if ranUnseen == 0 && answeredLate == 0 {
		t.Fatal("no call's context ended while it ran: the case under test did not happen")
	}
}

// batchedClient is a client of a fresh redis-server with a Batcher of
// the default Config as its hook; both go, and the server stops, when t
// ends.
func batchedClient(t *testing.T) *redis.Client {
	t.Helper()
	srv, err := redistest.StartServer()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	client := redis.NewClient(&redis.Options{Addr: srv.Addr})
	t.Cleanup(func() { client.Close() })
	b := New(client, Config{}, nil)
	client.AddHook(b)
	t.Cleanup(b.Close) // first: the batches end before the client closes
	return client
}
