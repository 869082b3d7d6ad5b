package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/realsync/realsync/internal/redistest"
)

// meReader is a client of a personal stream as an EventSource is: it reads
// the events, keeps the last id, and reconnects with Last-Event-ID (to the
// next instance of urls) whenever the stream ends, until stopped.
type meReader struct {
	urls     []string
	token    string
	platform string
	mu       sync.Mutex
	lastID   string
	texts    []string // the text of every direct message, as received
	opens    int
	cancel   context.CancelFunc
	done     chan struct{}
}

func readMe(urls []string, token, platform, lastID string) *meReader {
	ctx, cancel := context.WithCancel(context.Background())
	r := &meReader{urls: urls, token: token, platform: platform, lastID: lastID, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		for i := 0; ctx.Err() == nil; i++ {
			r.once(ctx, r.urls[i%len(r.urls)])
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	return r
}

// once reads one connection to its end.
func (r *meReader) once(ctx context.Context, base string) {
	req, _ := http.NewRequestWithContext(ctx, "GET", base+"/v1/me/events?platform="+r.platform, nil)
	req.Header.Set("Authorization", "Bearer "+r.token)
	r.mu.Lock()
	if r.lastID != "" {
		req.Header.Set("Last-Event-ID", r.lastID)
	}
	r.mu.Unlock()
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return
	}
	defer res.Body.Close()
	if res.StatusCode != 200 {
		return
	}
	r.mu.Lock()
	r.opens++
	r.mu.Unlock()
	sc := bufio.NewScanner(res.Body)
	var id, event string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "id: "):
			id = line[4:]
		case strings.HasPrefix(line, "event: "):
			event = line[7:]
		case strings.HasPrefix(line, "data: ") && event == "message":
			var m struct {
				Message struct {
					Data struct{ Text string } `json:"data"`
				} `json:"message"`
			}
			json.Unmarshal([]byte(line[6:]), &m)
			r.mu.Lock()
			r.texts = append(r.texts, m.Message.Data.Text)
			r.mu.Unlock()
		case line == "":
			if id != "" {
				r.mu.Lock()
				r.lastID = id
				r.mu.Unlock()
			}
			id, event = "", ""
		}
	}
}

func (r *meReader) got() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.texts)
}

func (r *meReader) stop() { r.cancel(); <-r.done }

// waitFor waits until the reader received n messages.
func (r *meReader) waitFor(t *testing.T, n int, what string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for len(r.got()) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d of %d messages: %v", what, len(r.got()), n, r.got())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Direct messages reach a user exactly once and in order across
// everything a deployment goes through: sent while the user is offline,
// live, while the instance holding the stream is killed (the client
// resumes on the other with Last-Event-ID), across a Redis restart with
// AOF, and after a clean close (a fresh session without Last-Event-ID
// gets only what its platform was not delivered). Two instances.
func TestOfflineDeliveryAcrossKillsAndRestart(t *testing.T) {
	t.Parallel()
	bin := raceBinary(t)
	srv, err := redistest.StartServer("--appendonly", "yes", "--appendfsync", "always")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	// 45 messages to one inbox within seconds: over its default rate limit
	env := []string{"REALSYNC_REDIS_URL=redis://" + srv.Addr, "REALSYNC_JWT_SECRET=e2e-secret", "REALSYNC_PRESENCE_TTL=900ms",
		// alice sends 45 direct messages within half a second or so through
		// both instances: past the default direct burst (20) and what
		// refills meanwhile, once an instance holds a few of them taken
		// ahead (rate-limit leases); the limits stay on, with room
		"REALSYNC_LOG_LEVEL=info", "REALSYNC_RATE_LIMITS=messages=off,direct=20/s:burst=100"}
	a, b := start(t, bin, env...), start(t, bin, env...)
	alice := guest(t, a, "alice")
	status, body := call(t, "POST", a.url+"/v1/auth/guest", "", map[string]any{"name": "bob"})
	if status != 201 {
		t.Fatalf("guest: %d", status)
	}
	bob, bobID := body["token"].(string), body["userId"].(string)
	sent := 0
	send := func(in *instance, n int) {
		t.Helper()
		for range n {
			sent++
			status, body := call(t, "POST", in.url+"/v1/users/"+bobID+"/messages", alice,
				map[string]any{"type": "chat", "data": map[string]any{"text": fmt.Sprint("m", sent)}})
			if status != 202 {
				t.Fatalf("message %d: %d %v", sent, status, body)
			}
		}
	}
	want := func(n int) []string {
		var out []string
		for i := 1; i <= n; i++ {
			out = append(out, fmt.Sprint("m", i))
		}
		return out
	}

	send(a, 10) // bob is offline
	r := readMe([]string{a.url, b.url}, bob, "pc", "")
	r.waitFor(t, 10, "the offline inbox")
	send(b, 10) // live, published through the other instance
	r.waitFor(t, 20, "live")

	a.kill() // bob's stream was on a: the reader resumes on b
	send(b, 10)
	r.waitFor(t, 30, "after the kill")

	srv.Kill()
	if err := srv.Start(); err != nil { // the same data directory: the AOF
		t.Fatal(err)
	}
	ready(t, b)
	send(b, 10)
	r.waitFor(t, 40, "after the Redis restart")
	r.stop()
	if got := r.got(); !slices.Equal(got, want(40)) {
		t.Fatalf("received %v", got)
	}

	// A clean close, then a fresh session on pc (no Last-Event-ID): only
	// what was sent since.
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, p := call(t, "GET", b.url+"/v1/presence?userIds="+bobID, alice, nil)
		if users, _ := p["users"].([]any); len(users) == 1 && users[0].(map[string]any)["online"] == false {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("bob still online: %v", p)
		}
		time.Sleep(50 * time.Millisecond)
	}
	send(b, 5)
	fresh := readMe([]string{b.url}, bob, "pc", "")
	fresh.waitFor(t, 5, "a fresh session")
	time.Sleep(300 * time.Millisecond) // nothing more comes
	fresh.stop()
	if got := fresh.got(); !slices.Equal(got, want(45)[40:]) {
		t.Fatalf("the fresh session received %v", got)
	}
	// A platform never used gets what the log holds, in order.
	console := readMe([]string{b.url}, bob, "console", "")
	console.waitFor(t, 45, "a new platform")
	time.Sleep(300 * time.Millisecond)
	console.stop()
	if got := console.got(); !slices.Equal(got, want(45)) {
		t.Fatalf("console received %v", got)
	}
}
