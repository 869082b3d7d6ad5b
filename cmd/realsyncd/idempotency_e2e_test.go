package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// keyedHangUp is a quick-join with an Idempotency-Key whose client reset
// its HTTP/2 stream while the request waited on its user's quick-join
// lock, held by the test: the request runs on, detached from its client.
type keyedHangUp struct {
	t    *testing.T
	env  []string
	in   *instance
	rdb  redis.UniversalClient
	lock string // the user's quick-join lock
	tok  string
}

// hangUpKeyedQuickJoin starts an instance over h2c with env, and leaves
// it running a quick-join whose client hung up.
func hangUpKeyedQuickJoin(t *testing.T, bin string, env ...string) *keyedHangUp {
	// one shard: the user's quick-join lock is {prefix:0}:qjlock:<user>
	env = append(backendEnv(t, "standalone"), append([]string{"REALSYNC_H2C=true", "REALSYNC_SHARDS=1"}, env...)...)
	var prefix string
	for _, e := range env {
		if v, ok := strings.CutPrefix(e, "REALSYNC_KEY_PREFIX="); ok {
			prefix = v
		}
	}
	k := &keyedHangUp{t: t, env: env, rdb: client(t, env), in: start(t, bin, env...)}
	tok, uid := guestWithID(t, k.in, "hangup")
	k.tok, k.lock = tok, shardTag(t, k.rdb, prefix, 0)+":qjlock:"+uid
	if err := k.rdb.Set(t.Context(), k.lock, "by-hand", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	sent := make(chan error, 1)
	go func() {
		res, err := k.quickJoin(ctx, k.in)
		if err == nil {
			res.Body.Close()
			err = errors.New("answered " + res.Status + " while its user's lock was held")
		}
		sent <- err
	}()
	// the key is claimed: the quick-join waits on the lock
	for i := 0; ; i++ {
		keys, err := k.rdb.Keys(t.Context(), shardTag(t, k.rdb, prefix, 0)+":idem:*").Result()
		if err != nil {
			t.Fatal(err)
		}
		if len(keys) > 0 {
			break
		}
		if i == 200 {
			t.Fatal("the quick-join's key was not claimed within 10 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond)
	cancel() // the client resets its stream
	if err := <-sent; !errors.Is(err, context.Canceled) {
		t.Fatalf("the cancelled quick-join: %v", err)
	}
	return k
}

// quickJoin sends the quick-join with its key, over HTTP/2, to in.
func (k *keyedHangUp) quickJoin(ctx context.Context, in *instance) (*http.Response, error) {
	b, _ := json.Marshal(map[string]any{"mode": "ffa", "regions": []string{"eu"}, "create": map[string]any{"name": "q"}})
	req, _ := http.NewRequestWithContext(ctx, "POST", in.url+"/v1/matchmaking/quick-join", strings.NewReader(string(b)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+k.tok)
	req.Header.Set("Idempotency-Key", "qj-1")
	return newH2Client(k.t, nil, true).Do(req)
}

// terminate sends the instance SIGTERM, frees the lock after unlock, and
// returns the process' exit.
func (k *keyedHangUp) terminate(unlock time.Duration) error {
	t := k.t
	k.in.once.Do(func() {}) // this test stops the process itself
	k.in.cmd.Process.Signal(syscall.SIGTERM)
	var exited error
	freed := time.After(unlock)
	for done := false; !done; {
		select {
		case <-freed:
			if err := k.rdb.Del(t.Context(), k.lock).Err(); err != nil {
				t.Fatal(err)
			}
			freed = nil
		case exited = <-k.in.exited:
			done = true
		case <-time.After(20 * time.Second):
			k.in.cmd.Process.Kill()
			t.Fatalf("realsyncd still running 20 s after SIGTERM; logs:\n%s", k.in.logText())
		}
	}
	if freed != nil {
		if err := k.rdb.Del(t.Context(), k.lock).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for _, bad := range []string{"key not released", "answer not recorded"} {
		if l := grep(k.in.logText(), bad); l != "" {
			t.Errorf("the hung-up quick-join's key: %s", l)
		}
	}
	return exited
}

// retry sends the quick-join again, with its key, to a fresh instance.
func (k *keyedHangUp) retry(bin string) (status int, replayed string, body string) {
	again := start(k.t, bin, k.env...)
	res, err := k.quickJoin(k.t.Context(), again)
	if err != nil {
		k.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header.Get("Idempotent-Replayed"), string(raw)
}

// Over HTTP/2 (h2c here; TLS is the same server) http.Server.Shutdown does
// not wait for the handler of a stream its client reset: such a stream is
// closed for the connection, which goes idle and is closed. A request with
// an Idempotency-Key runs on after its client left (api's detach), so
// shutdown must wait for it before it closes the store: a quick-join held
// on its user's lock (taken here by hand) is cancelled by its client, the
// instance gets SIGTERM 0.1 s later, and the lock is freed 2 s after. The
// instance exits cleanly once the quick-join recorded its answer, and the
// client's retry with the key on a fresh instance gets that answer,
// replayed. It got 409 IDEMPOTENCY_KEY_IN_USE for twice the request
// timeout: the instance closed the store under the running request, which
// could neither record its answer nor free its key.
func TestShutdownWaitsForHungUpKeyedRequestOverH2C(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	k := hangUpKeyedQuickJoin(t, bin)
	time.Sleep(100 * time.Millisecond)
	if err := k.terminate(2 * time.Second); err != nil {
		t.Fatalf("exit %v after SIGTERM; logs:\n%s", err, k.in.logText())
	}
	if status, replayed, body := k.retry(bin); status != 201 || replayed != "true" {
		t.Fatalf("the retry with the key: %d %s (replayed %q), want the first answer, 201 replayed; first instance's logs:\n%s",
			status, body, replayed, k.in.logText())
	}
}

// The same hung-up quick-join still waiting at REALSYNC_SHUTDOWN_TIMEOUT
// (3 s, past the 1 s the HTTP/2 server gives its client to close the
// connection after GOAWAY, so that it is the only request left; the lock
// freed only after the exit) is cut (503), frees its key before the store
// closes, and the exit is 1, naming it among what ran over (as over
// HTTP/1.1, where srv.Shutdown waits for it): the retry with the key on a
// fresh instance runs again (201, not replayed), where it got 409
// IDEMPOTENCY_KEY_IN_USE.
func TestShutdownCutsHungUpKeyedRequestPastItsTimeoutOverH2C(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	k := hangUpKeyedQuickJoin(t, bin, "REALSYNC_SHUTDOWN_TIMEOUT=3s")
	err := k.terminate(time.Hour) // the lock freed once the process exited
	want := "left running: the requests run on for their Idempotency-Key after their client left (cut; their keys freed)"
	if logs := k.in.logText(); err == nil || !strings.Contains(logs, want) {
		t.Fatalf("exit %v, want 1 and the error saying %q; logs:\n%s", err, want, logs)
	}
	if status, replayed, body := k.retry(bin); status != 201 || replayed != "" {
		t.Fatalf("the retry with the key: %d %s (replayed %q), want it run again, 201 not replayed; first instance's logs:\n%s",
			status, body, replayed, k.in.logText())
	}
}
