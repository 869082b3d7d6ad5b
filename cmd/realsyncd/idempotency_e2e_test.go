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
)

// Over HTTP/2 (h2c here; TLS is the same server) http.Server.Shutdown does
// not wait for the handler of a stream its client reset: such a stream is
// closed for the connection, which goes idle and is closed. A request with
// an Idempotency-Key runs on after its client left (api's detach), so
// shutdown must wait for it before it closes the store: a quick-join held
// on its user's lock (taken here by hand) is cancelled by its client, the
// instance gets SIGTERM, and the lock is freed 2 s later. The instance
// exits cleanly once the quick-join recorded its answer, and the client's
// retry with the key on a fresh instance gets that answer, replayed. It
// got 409 IDEMPOTENCY_KEY_IN_USE for twice the request timeout: the
// instance closed the store under the running request, which could
// neither record its answer nor free its key.
func TestShutdownWaitsForHungUpKeyedRequestOverH2C(t *testing.T) {
	bin := buildBinary(t)
	// one shard: the user's quick-join lock is {prefix:0}:qjlock:<user>
	env := append(backendEnv(t, "standalone"), "REALSYNC_H2C=true", "REALSYNC_SHARDS=1")
	var prefix string
	for _, e := range env {
		if v, ok := strings.CutPrefix(e, "REALSYNC_KEY_PREFIX="); ok {
			prefix = v
		}
	}
	rdb := client(t, env)
	in := start(t, bin, env...)
	tok, uid := guestWithID(t, in, "hangup")
	lock := "{" + prefix + ":0}:qjlock:" + uid
	if err := rdb.Set(t.Context(), lock, "by-hand", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	body := map[string]any{"mode": "ffa", "regions": []string{"eu"}, "create": map[string]any{"name": "q"}}
	quickJoin := func(c *h2Client, ctx context.Context, url string) (*http.Response, error) {
		b, _ := json.Marshal(body)
		req, _ := http.NewRequestWithContext(ctx, "POST", url+"/v1/matchmaking/quick-join", strings.NewReader(string(b)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Idempotency-Key", "qj-1")
		return c.Do(req)
	}

	c := newH2Client(t, nil, true)
	ctx, cancel := context.WithCancel(t.Context())
	sent := make(chan error, 1)
	go func() {
		res, err := quickJoin(c, ctx, in.url)
		if err == nil {
			res.Body.Close()
			err = errors.New("answered " + res.Status + " while its user's lock was held")
		}
		sent <- err
	}()
	// the key is claimed: the quick-join waits on the lock
	for i := 0; ; i++ {
		keys, err := rdb.Keys(t.Context(), "{"+prefix+":0}:idem:*").Result()
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
	time.Sleep(100 * time.Millisecond)
	in.once.Do(func() {}) // this test stops the process itself
	in.cmd.Process.Signal(syscall.SIGTERM)
	time.Sleep(2 * time.Second)
	if err := rdb.Del(t.Context(), lock).Err(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-in.exited:
		if err != nil {
			t.Fatalf("exit %v after SIGTERM; logs:\n%s", err, in.logText())
		}
	case <-time.After(20 * time.Second):
		in.cmd.Process.Kill()
		t.Fatalf("realsyncd still running 20 s after SIGTERM; logs:\n%s", in.logText())
	}
	for _, bad := range []string{"key not released", "answer not recorded"} {
		if l := grep(in.logText(), bad); l != "" {
			t.Errorf("the hung-up quick-join's key: %s", l)
		}
	}

	again := start(t, bin, env...)
	res, err := quickJoin(newH2Client(t, nil, true), t.Context(), again.url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	if res.StatusCode != 201 || res.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("the retry with the key: %d %s (replayed %q), want the first answer, 201 replayed; first instance's logs:\n%s",
			res.StatusCode, raw, res.Header.Get("Idempotent-Replayed"), in.logText())
	}
}
