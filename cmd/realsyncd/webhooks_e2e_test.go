package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/realsync/realsync/internal/rediskeys"
	"github.com/realsync/realsync/internal/wait"
	"github.com/realsync/realsync/internal/webhook"
)

// hookTry is one request the receiver got.
type hookTry struct {
	id, typ string
	retry   int
	data    map[string]any
	ok      bool // answered 2xx
}

// receiver is a local webhook endpoint that checks every request's
// Standard Webhooks signature and fails on purpose when told: mode 0
// answers 204, 1 answers 500, 2 holds the request (reporting it on hung)
// until release is closed.
type receiver struct {
	srv     *httptest.Server
	secret  string
	mode    atomic.Int32
	hung    chan string // webhook-id of each held request
	release chan struct{}
	busy    atomic.Int32 // requests being handled
	mu      sync.Mutex
	tries   []hookTry
	badSig  int
}

func newReceiver(t *testing.T) *receiver {
	t.Helper()
	rc := &receiver{secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", hung: make(chan string, 16), release: make(chan struct{})}
	wh, err := standardwebhooks.NewWebhook(rc.secret)
	if err != nil {
		t.Fatal(err)
	}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc.busy.Add(1)
		defer rc.busy.Add(-1)
		body, _ := io.ReadAll(r.Body)
		if err := wh.Verify(body, r.Header); err != nil {
			rc.mu.Lock()
			rc.badSig++
			rc.mu.Unlock()
			http.Error(w, "bad signature", 400)
			return
		}
		var p struct {
			Type      string         `json:"type"`
			Timestamp string         `json:"timestamp"`
			Data      map[string]any `json:"data"`
		}
		json.Unmarshal(body, &p)
		n, _ := strconv.Atoi(r.Header.Get("webhook-retry-count"))
		try := hookTry{id: r.Header.Get("webhook-id"), typ: p.Type, retry: n, data: p.Data}
		switch rc.mode.Load() {
		case 1:
			w.WriteHeader(500)
		case 2:
			rc.hung <- try.id
			select {
			case <-rc.release:
			case <-r.Context().Done():
			}
			w.WriteHeader(204)
		default:
			try.ok = true
			w.WriteHeader(204)
		}
		rc.mu.Lock()
		rc.tries = append(rc.tries, try)
		rc.mu.Unlock()
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

// snapshot returns the tries so far and the count of bad signatures.
func (rc *receiver) snapshot() ([]hookTry, int) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return slices.Clone(rc.tries), rc.badSig
}

// byID groups tries by webhook-id, in arrival order.
func byID(tries []hookTry) map[string][]hookTry {
	out := map[string][]hookTry{}
	for _, tr := range tries {
		out[tr.id] = append(out[tr.id], tr)
	}
	return out
}

// webhookEntries counts what every webhook key of the deployment holds
// (stream entries, retry members) and the keys themselves.
func webhookEntries(t *testing.T, c redis.UniversalClient, prefix string) (entries int64, keys []string) {
	t.Helper()
	ctx := context.Background()
	keys, err := rediskeys.Scan(ctx, c, "{"+prefix+":*}:webhooks*")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if strings.HasSuffix(k, ":retries") {
			entries += c.ZCard(ctx, k).Val()
		} else {
			entries += c.XLen(ctx, k).Val()
		}
	}
	slices.Sort(keys)
	return entries, keys
}

// The webhooks end to end, with two realsyncd processes and a local
// receiver that checks every signature and fails on purpose:
//
//  1. healthy: room events made through both instances and a user's
//     online/offline are each received once (one try, 2xx, retry count 0);
//  2. broken for "an hour": every try fails (500); with the backoff scaled
//     1:1000 (REALSYNC_WEBHOOK_BACKOFF=1ms,600ms, i.e. 1 s..10 min) and 21
//     tries (about an hour of waits at the default scale: the 20 waits'
//     ceilings sum to 1 023 s + 10 × 600 s ≈ 117 min, full jitter halves
//     that on average), each event is tried 21 times with retry counts
//     0..20 and then
//     dead-lettered; listed over HTTP with the admin token (paged one at a
//     time), replayed over HTTP on the other instance, and delivered once
//     more with retry count 0 and the same webhook-id;
//  3. an instance killed while its delivery hangs at the receiver: another
//     instance takes the delivery over (XAUTOCLAIM after 6 × the 1 s try
//     timeout) and delivers it, the same webhook-id.
//
// Before and after: the webhook keys hold no entry (the outbox, the
// deliveries and the dead letters emptied, no retry waiting).
func TestWebhooksEndToEnd(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	for _, backend := range []string{"standalone", "cluster"} {
		t.Run(backend, func(t *testing.T) { webhooksEndToEnd(t, bin, backend) })
	}
}

func webhooksEndToEnd(t *testing.T, bin, backend string) {
	rc := newReceiver(t)
	file := filepath.Join(t.TempDir(), "webhooks.yaml")
	types := []string{"player_joined", "player_left", "room_closed", "user_online", "user_offline", "user_platforms_changed"}
	yaml := fmt.Sprintf("endpoints:\n- id: crm\n  url: %s/hooks\n  secret: %s\n  events: [%s]\n", rc.srv.URL, rc.secret, strings.Join(types, ", "))
	if err := os.WriteFile(file, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	const attempts = 21
	env, prefix, c := sharedBackend(t, backend)
	env = append(env, "REALSYNC_WEBHOOKS_FILE="+file, "REALSYNC_WEBHOOK_MAX_ATTEMPTS="+strconv.Itoa(attempts),
		"REALSYNC_WEBHOOK_BACKOFF=1ms,600ms", "REALSYNC_ADMIN_TOKEN="+e2eAdminToken, loadTestLimits)
	// a and b's tries wait 15 s for an answer: on a busy machine (CI, the
	// tests in parallel) the receiver may take over 1 s to answer, and a
	// try given up is tried again (at least once), which the healthy
	// part counts as a duplicate: with 5 s, a CI run on 2 cores saw the
	// receiver handle a try after its retry (2026-12-05); c (part 3)
	// waits 1 s, so it takes over after 6 s
	a, b := start(t, bin, append(env, "REALSYNC_WEBHOOK_TIMEOUT=15s")...), start(t, bin, append(env, "REALSYNC_WEBHOOK_TIMEOUT=15s")...)
	if n, keys := webhookEntries(t, c, prefix); n != 0 {
		t.Fatalf("%d webhook entries before any event (keys %q)", n, keys)
	}

	// 1. healthy
	owner, _ := guestWithID(t, a, "owner")
	room := func(in *instance) string {
		t.Helper()
		status, body := call(t, "POST", in.url+"/v1/rooms", owner, map[string]any{"name": "Hooked", "mode": "hooks", "region": "eu", "maxPlayers": 8})
		if status != 201 {
			t.Fatalf("create: %d %v", status, body)
		}
		return body["room"].(map[string]any)["id"].(string)
	}
	join := func(in *instance, id, tok string) {
		t.Helper()
		if status, body := call(t, "POST", in.url+"/v1/rooms/"+id+"/join", tok, nil); status != 200 {
			t.Fatalf("join: %d %v", status, body)
		}
	}
	id1 := room(a)
	var toks []string
	for i := range 3 {
		tok, _ := guestWithID(t, a, fmt.Sprintf("p%d", i))
		toks = append(toks, tok)
		join([]*instance{a, b}[i%2], id1, tok)
	}
	if status, _ := call(t, "POST", b.url+"/v1/rooms/"+id1+"/leave", toks[0], nil); status != 204 {
		t.Fatalf("leave: %d", status)
	}
	if status, _ := call(t, "DELETE", a.url+"/v1/rooms/"+id1, owner, nil); status != 204 {
		t.Fatalf("delete: %d", status)
	}
	me, uid := guestWithID(t, b, "online")
	s := openMe(t, b.url, me, "console")
	if e, _ := s.next(t, 5*time.Second); e.typ != "snapshot" {
		t.Fatalf("personal stream opened with %q", e.typ)
	}
	wait.Within(t, 30*time.Second, "user_online", func() bool {
		tries, _ := rc.snapshot()
		return slices.ContainsFunc(tries, func(tr hookTry) bool { return tr.typ == "user_online" && tr.data["userId"] == uid })
	})
	s.close()
	count := func(tries []hookTry, typ string) int {
		n := 0
		for _, tr := range tries {
			if tr.typ == typ {
				n++
			}
		}
		return n
	}
	wait.Within(t, 30*time.Second, "every event of the healthy phase", func() bool {
		tries, _ := rc.snapshot()
		return count(tries, "player_joined") >= 3 && count(tries, "player_left") >= 1 && count(tries, "room_closed") >= 1 &&
			count(tries, "user_offline") >= 1
	})
	time.Sleep(500 * time.Millisecond) // a duplicate would come now
	healthy, bad := rc.snapshot()
	if bad != 0 {
		t.Fatalf("%d requests with a bad signature", bad)
	}
	for id, tries := range byID(healthy) {
		if len(tries) != 1 || !tries[0].ok || tries[0].retry != 0 || !slices.Contains(types, tries[0].typ) {
			t.Fatalf("healthy endpoint: %s tried %d times: %+v", id, len(tries), tries)
		}
	}
	for _, tr := range healthy {
		switch tr.typ {
		case "user_online", "user_offline":
			if tr.data["userId"] != uid || tr.data["online"] != (tr.typ == "user_online") {
				t.Fatalf("%s: %v", tr.typ, tr.data)
			}
		default:
			if tr.data["roomId"] != id1 {
				t.Fatalf("%s of room %v, want %s", tr.typ, tr.data["roomId"], id1)
			}
		}
	}
	t.Logf("healthy: %d events, each received once, signatures verified", len(healthy))

	// 2. broken for an hour (scaled)
	rc.mode.Store(1)
	id2 := room(b)
	join(a, id2, toks[1])
	join(b, id2, toks[2])
	failed := func() map[string][]hookTry {
		tries, _ := rc.snapshot()
		out := byID(tries[len(healthy):])
		return out
	}
	listDead := func(in *instance, limit int) []map[string]any {
		t.Helper()
		var all []map[string]any
		for cursor := ""; ; {
			path := in.url + "/v1/admin/webhooks/dead-letters?limit=" + strconv.Itoa(limit)
			if cursor != "" {
				path += "&cursor=" + cursor
			}
			status, body := call(t, "GET", path, e2eAdminToken, nil)
			if status != 200 {
				t.Fatalf("GET dead letters: %d %v", status, body)
			}
			for _, d := range body["deadLetters"].([]any) {
				all = append(all, d.(map[string]any))
			}
			next, ok := body["nextCursor"].(string)
			if !ok {
				return all
			}
			cursor = next
		}
	}
	deadDone := func() bool {
		f := failed()
		if len(f) < 2 {
			return false
		}
		for _, tries := range f {
			if len(tries) < attempts {
				return false
			}
		}
		return len(listDead(a, 100)) == len(f)
	}
	began := time.Now()
	wait.Within(t, 30*time.Second, "every event of the broken phase dead-lettered", deadDone)
	took := time.Since(began)
	time.Sleep(300 * time.Millisecond) // nothing more may come
	if !deadDone() {
		t.Fatal("more tries after the dead letters")
	}
	f := failed()
	for id, tries := range f {
		for i, tr := range tries {
			if tr.ok || tr.retry != i {
				_, bad := rc.snapshot()
				t.Fatalf("%s try %d: %+v (%d requests with a bad signature or a cut body)", id, i, tr, bad)
			}
		}
		if len(tries) != attempts {
			t.Fatalf("%s tried %d times, want %d", id, len(tries), attempts)
		}
	}
	t.Logf("broken: %d events tried %d times each in %v (×1000: %v, the polls between rounds included), then dead-lettered",
		len(f), attempts, took.Round(time.Millisecond), (took * 1000).Round(time.Minute))
	dead := listDead(b, 1)
	if len(dead) != len(f) {
		t.Fatalf("paged one at a time: %d dead letters, want %d", len(dead), len(f))
	}
	for _, d := range dead {
		if _, ok := f[d["messageId"].(string)]; !ok || d["endpoint"] != "crm" || d["attempts"] != float64(attempts) ||
			d["lastError"] != "webhook endpoint crm answered 500" {
			t.Fatalf("dead letter %v", d)
		}
	}
	if status, body := call(t, "GET", a.url+"/v1/admin/webhooks/dead-letters", owner, nil); status != 403 || body["code"] != "ADMIN_REQUIRED" {
		t.Fatalf("a player token: %d %v", status, body)
	}
	rc.mode.Store(0)
	mark, _ := rc.snapshot()
	for _, d := range dead {
		path := "/v1/admin/webhooks/dead-letters/" + d["id"].(string) + "/replay"
		if status, body := call(t, "POST", a.url+path, e2eAdminToken, nil); status != 202 {
			t.Fatalf("replay: %d %v", status, body)
		}
		if status, body := call(t, "POST", b.url+path, e2eAdminToken, nil); status != 404 || body["code"] != "DEAD_LETTER_NOT_FOUND" {
			t.Fatalf("second replay: %d %v", status, body)
		}
	}
	wait.Within(t, 30*time.Second, "the replayed deliveries", func() bool {
		tries, _ := rc.snapshot()
		return len(tries) >= len(mark)+len(dead)
	})
	time.Sleep(300 * time.Millisecond)
	after, _ := rc.snapshot()
	replayed := byID(after[len(mark):])
	if len(replayed) != len(dead) {
		t.Fatalf("%d events delivered after the replays, want %d", len(replayed), len(dead))
	}
	for id, tries := range replayed {
		if _, ok := f[id]; !ok || len(tries) != 1 || !tries[0].ok || tries[0].retry != 0 {
			t.Fatalf("replayed %s: %+v", id, tries)
		}
	}
	if left := listDead(a, 100); len(left) != 0 {
		t.Fatalf("%d dead letters after the replays", len(left))
	}

	// 3. an instance killed mid-delivery
	b.stop(t)
	rc.mode.Store(2)
	mark, _ = rc.snapshot()
	id3 := room(a)
	join(a, id3, toks[0])
	var first string
	select {
	case first = <-rc.hung:
	case <-time.After(30 * time.Second):
		t.Fatal("no delivery reached the receiver")
	}
	a.kill() // at once: its try would time out after 15 s (then it would retry by itself)
	// Every try of a's ends before c starts, so c's tries are all answered
	// 204: one c made while the receiver still held requests would be
	// settled as delivered and recorded as failed.
	rc.mode.Store(0)
	close(rc.release)
	// ... and none arriving for a second: a request a wrote before it died
	// reaches the receiver after the kill (the kernel sends what the socket
	// held), and one recorded after the snapshot below counted as c's (a CI
	// run: a try of a's, then c's of the delivery it took over, read as two
	// tries of c's with none failed)
	var quiet struct {
		n     int
		since time.Time
	}
	wait.Within(t, 30*time.Second, "a's tries ended at the receiver", func() bool {
		if all, _ := rc.snapshot(); len(all) != quiet.n || quiet.since.IsZero() {
			quiet.n, quiet.since = len(all), time.Now()
		}
		return rc.busy.Load() == 0 && time.Since(quiet.since) > time.Second
	})
	for more := true; more; {
		select {
		case <-rc.hung:
		default:
			more = false
		}
	}
	held := map[string]bool{first: true} // a's deliveries, tried and unsettled
	tried, _ := rc.snapshot()
	for _, tr := range tried[len(mark):] {
		held[tr.id] = true
	}
	// c takes a's held deliveries over once they stayed unsettled 6× its
	// try's timeout (3 s). A try of c's answered after that timeout (a CI
	// machine under load held the receiver's answer past it) failed for c
	// and is rightly tried again: c logs each failed try (debug), and the
	// check below counts those as c's.
	c2 := start(t, bin, append(env, "REALSYNC_WEBHOOK_TIMEOUT=3s", "REALSYNC_LOG_LEVEL=debug")...)
	began = time.Now()
	wait.Within(t, 40*time.Second, "the held deliveries taken over", func() bool {
		tries, _ := rc.snapshot()
		for id := range held {
			if !slices.ContainsFunc(tries[len(tried):], func(tr hookTry) bool { return tr.id == id && tr.ok }) {
				return false
			}
		}
		return true
	})
	t.Logf("a killed instance's %d held deliveries were taken over %v after c started", len(held), time.Since(began).Round(10*time.Millisecond))
	// failedTries is how many of c's tries of id failed for c (answered
	// after its timeout): each is tried again, after a backoff (a loaded
	// CI saw the retry come later than the 300 ms this waited before)
	failedTries := func(id string) int {
		return strings.Count(c2.logText(), `msg="webhook try failed" endpoint=crm webhook_id=`+id+" ")
	}
	// c's tries settled: each that failed for c tried again, and nothing
	// new (a try, a failure) for 4 s, over c's 3 s timeout: a try the
	// receiver answered fails for c at most 3 s after it was sent (a CI
	// run checked in between: the failure was logged, its retry not yet
	// made), and a duplicate would come meanwhile
	var seen struct {
		tries, failed int
		since         time.Time
	}
	wait.Within(t, 40*time.Second, "c's tries settled, each that failed for it tried again", func() bool {
		all, _ := rc.snapshot()
		failed, retried := 0, true
		for id, tries := range byID(all[len(tried):]) {
			f := failedTries(id)
			failed += f
			if ok := slices.DeleteFunc(slices.Clone(tries), func(tr hookTry) bool { return !tr.ok }); len(ok) < f+1 {
				retried = false
			}
		}
		if len(all) != seen.tries || failed != seen.failed {
			seen.tries, seen.failed, seen.since = len(all), failed, time.Now()
		}
		return retried && time.Since(seen.since) > 4*time.Second
	})
	last, _ := rc.snapshot()
	byA, byC := byID(last[len(mark):len(tried)]), byID(last[len(tried):])
	for id := range held {
		if len(byA[id]) != 1 {
			t.Fatalf("%s: a's tries %+v, want the one held", id, byA[id])
		}
	}
	for id, tries := range byC {
		// c's tries, each answered 204: one, and one more for each that
		// failed for c (answered after its timeout: a late answer may be
		// recorded after the try that followed it), retry counts 0..failed
		failed := failedTries(id)
		var retries []int
		for _, tr := range tries {
			if tr.ok {
				retries = append(retries, tr.retry)
			}
		}
		slices.Sort(retries)
		want := make([]int, failed+1)
		for i := range want {
			want[i] = i
		}
		if !slices.Equal(retries, want) || len(tries) != len(want) {
			t.Fatalf("%s after the kill (%d tries failed for c): c's %+v, a's %+v", id, failed, tries, byA[id])
		}
		if failed > 0 {
			t.Logf("%s: %d of c's tries answered after c had given up, tried again", id, failed)
		}
	}
	if status, _ := call(t, "GET", c2.url+"/v1/rooms/"+id3, owner, nil); status != 200 {
		t.Fatalf("the room on the new instance: %d", status)
	}

	wait.Within(t, 30*time.Second, "the webhook keys emptied", func() bool { n, _ := webhookEntries(t, c, prefix); return n == 0 })
	_, keys := webhookEntries(t, c, prefix)
	for _, k := range keys {
		// what stays: each shard's outbox and deliveries, empty, with the
		// consumer group, and the backlog recount's pause and count of
		// recounts, expiring; no retry zset, no dead-letter stream, no
		// backlog hash
		if strings.HasSuffix(k, ":webhooks:recount") || strings.HasSuffix(k, ":webhooks:recount:checks") {
			if ttl := c.PTTL(context.Background(), k).Val(); ttl <= 0 {
				t.Errorf("key %s left without an expiry (%v)", k, ttl)
			}
			continue
		}
		if !strings.HasSuffix(k, ":webhooks") && !strings.HasSuffix(k, ":webhooks:deliveries") {
			t.Errorf("key %s left", k)
		}
	}
	t.Logf("after: %d webhook keys, all empty streams with their consumer group", len(keys))
}

// An endpoints file with an empty list (`endpoints: []`) starts webhooks
// with no endpoint: events go nowhere (the outbox is drained, nothing
// kept), and the endpoints a reload adds get the events made from then
// on; emptying the list again stops the deliveries without a restart. A
// dead letter of an endpoint the file does not name is not replayed (409
// WEBHOOK_ENDPOINT_REMOVED), one of an endpoint a reload added is. An
// empty file is refused at start (exit 2).
func TestWebhooksWithNoEndpoint(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	rc := newReceiver(t)
	file := filepath.Join(t.TempDir(), "webhooks.yaml")
	write := func(s string) {
		t.Helper()
		tmp := file + ".new"
		if err := os.WriteFile(tmp, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, file); err != nil { // whole, as OPERATIONS.md says
			t.Fatal(err)
		}
	}
	write("endpoints: []\n")
	env, prefix, c := sharedBackend(t, "standalone")
	env = append(env, "REALSYNC_WEBHOOKS_FILE="+file, "REALSYNC_WEBHOOK_TIMEOUT=1s", "REALSYNC_ADMIN_TOKEN="+e2eAdminToken, loadTestLimits)
	a := start(t, bin, env...)
	owner, _ := guestWithID(t, a, "owner")
	dead := shardTag(t, c, prefix, 0) + ":webhooks:dead"
	t.Cleanup(func() { c.Del(context.Background(), dead) })
	letter := func() string { // a dead letter of crm, as a failed try leaves it
		t.Helper()
		id, err := c.XAdd(context.Background(), &redis.XAddArgs{Stream: dead, Values: []any{"e", "crm", "m", "msg_0_hand",
			"t", "room_closed", "d", `{"type":"room_closed","roomId":"hand"}`, "n", 0, "at", time.Now().UnixMilli(), "err", "crm answered 500"}}).Result()
		if err != nil {
			t.Fatal(err)
		}
		return "0." + id
	}
	replay := func(id string, status int, code string) {
		t.Helper()
		got, body := call(t, "POST", a.url+"/v1/admin/webhooks/dead-letters/"+id+"/replay", e2eAdminToken, nil)
		if got != status || (code != "" && body["code"] != code) {
			t.Fatalf("replay of %s: %d %v, want %d %s", id, got, body, status, code)
		}
	}
	create := func(name string) string {
		t.Helper()
		status, body := call(t, "POST", a.url+"/v1/rooms", owner, map[string]any{"name": name, "mode": "hooks", "region": "eu", "maxPlayers": 8})
		if status != 201 {
			t.Fatalf("create: %d %v", status, body)
		}
		return body["room"].(map[string]any)["id"].(string)
	}
	before := create("before")
	wait.Within(t, 30*time.Second, "the outbox drained to no endpoint", func() bool {
		n, _ := webhookEntries(t, c, prefix)
		return n == 0
	})
	crmLetter := letter()
	replay(crmLetter, 409, "WEBHOOK_ENDPOINT_REMOVED") // crm not in the file
	write(fmt.Sprintf("endpoints:\n- id: crm\n  url: %s/hooks\n  secret: %s\n  events: ['*']\n", rc.srv.URL, rc.secret))
	reloaded := func(n int) { // the file was read again, the n-th time it changed
		t.Helper()
		wait.Within(t, webhook.Reload+5*time.Second, "the file reloaded", func() bool {
			return strings.Count(a.logText(), "webhooks file reloaded") >= n
		})
	}
	reloaded(1)
	replay(crmLetter, 202, "") // the reload added crm
	after := create("after")
	wait.Within(t, 30*time.Second, "an event of a room made after the reload", func() bool {
		tries, _ := rc.snapshot()
		return slices.ContainsFunc(tries, func(tr hookTry) bool { return tr.data["roomId"] == after })
	})
	tries, _ := rc.snapshot()
	for _, tr := range tries {
		if tr.data["roomId"] == before {
			t.Fatalf("an event of the room made with no endpoint was delivered: %+v", tr)
		}
	}
	write("endpoints: []\n")
	reloaded(2)
	n := len(tries)
	last := create("emptied")
	wait.Within(t, 30*time.Second, "the outbox drained again", func() bool {
		n, _ := webhookEntries(t, c, prefix)
		return n == 0
	})
	tries, _ = rc.snapshot()
	for _, tr := range tries[n:] {
		if tr.data["roomId"] == last {
			t.Fatalf("delivered after the list was emptied: %+v", tr)
		}
	}
	replay(letter(), 409, "WEBHOOK_ENDPOINT_REMOVED") // the reload removed crm

	// an empty file is most likely one caught half written: refused
	write("")
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), env...)
	cmd.Env = append(cmd.Env, "REALSYNC_ADDR=127.0.0.1:0")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(string(out), "endpoints: []") {
		t.Fatalf("an empty file at start: %v, %s", err, out)
	}
}
