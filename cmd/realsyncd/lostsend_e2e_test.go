package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/internal/invariants"
	"github.com/realsync/realsync/internal/rediskeys"
	"github.com/realsync/realsync/internal/redistest"
)

// keyed sends a request with an Idempotency-Key, again while it answers
// 503 or fails on the way (a failover), for up to 20 s; returns its last
// status, whether it was replayed, and its body.
func keyed(t *testing.T, method, url, token, key string, body any) (int, bool, string) {
	t.Helper()
	b, _ := json.Marshal(body)
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		req, _ := http.NewRequest(method, url, bytes.NewReader(b))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Idempotency-Key", key)
		res, err := calls.Do(req)
		if err == nil {
			var out bytes.Buffer
			out.ReadFrom(res.Body)
			res.Body.Close()
			if res.StatusCode != 503 || time.Now().After(deadline) {
				return res.StatusCode, res.Header.Get("Idempotent-Replayed") == "true", out.String()
			}
		} else if time.Now().After(deadline) {
			t.Fatalf("%s %s: %v", method, url, err)
		}
	}
}

// A failover of Redis Cluster that lost the writes of keyed sends (a room
// message, a direct message, an invite) acknowledged by their master,
// whose answers, kept in their senders' slots on other masters, survived:
// their retries with the same keys send them again, each delivered once,
// where they were answered "sent" and never delivered (a failover
// tester's find: 4 of 6 room messages, 3 of 3 direct messages). The
// replica is cut off first (redistest.CutReplication), so the loss is
// certain.
func TestKeyedSendsLostByAFailoverAreSentAgain(t *testing.T) {
	cluster, prefix, env := replicatedCluster(t, "REALSYNC_LOG_LEVEL=info")
	bin := buildBinary(t)
	ctx := t.Context()
	a := start(t, bin, env...)
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cluster.Addrs()})
	defer cc.Close()

	// the room, on the victim; a user's master is found from their log,
	// once a message reached it
	owner := guest(t, a, "owner")
	status, body := call(t, "POST", a.url+"/v1/rooms", owner, map[string]any{"name": "lost", "mode": "lost", "region": "eu", "maxPlayers": 10})
	if status != 201 {
		t.Fatalf("create: %d %v", status, body)
	}
	room := body["room"].(map[string]any)["id"].(string)
	victim, _ := masterOfRoom(t, cluster, prefix, room)
	logOf := map[string]string{}
	masterOf := func(uid string) *redistest.Server {
		t.Helper()
		if status, body := call(t, "POST", a.url+"/v1/users/"+uid+"/messages", owner, map[string]any{"type": "hello", "data": 0}); status != 202 {
			t.Fatalf("a message to %s: %d %v", uid, status, body)
		}
		keys, err := rediskeys.Scan(ctx, cc, "*"+prefix+"*:ulog:"+uid)
		if err != nil || len(keys) != 1 {
			t.Fatalf("the log of %s: %v %v", uid, keys, err)
		}
		m, _, err := cluster.MasterOf(ctx, keys[0])
		if err != nil {
			t.Fatal(err)
		}
		logOf[uid] = keys[0]
		return m
	}
	var recipient, alice, bob string
	for i := 0; i < 40 && (recipient == "" || bob == ""); i++ {
		tok, id := guestWithID(t, a, fmt.Sprint("u", i))
		switch m := masterOf(id); {
		case m == victim && recipient == "":
			recipient = id
		case m != victim && alice == "":
			alice = tok
		case m != victim && bob == "":
			bob = tok
		}
	}
	if recipient == "" || bob == "" {
		t.Fatal("no recipient on the room's master, or no two senders elsewhere")
	}
	for _, tok := range []string{alice, bob} {
		if status, body := call(t, "POST", a.url+"/v1/rooms/"+room+"/join", tok, nil); status != 200 {
			t.Fatalf("join: %d %v", status, body)
		}
	}
	_, replicas, err := cluster.Shard(ctx, func() int { _, slot, _ := cluster.MasterOf(ctx, logOf[recipient]); return slot }())
	if err != nil || len(replicas) != 1 {
		t.Fatalf("the victim's replicas: %v %v", replicas, err)
	}
	if err := cluster.WaitReplicated(victim, 20*time.Second); err != nil { // the replica has the room and the logs
		t.Fatal(err)
	}

	sends := []struct {
		name, url, token, key string
		body                  any
		text                  string // what tells it in its history
	}{
		{"room message", a.url + "/v1/rooms/" + room + "/messages", alice, "rm-1", map[string]any{"type": "chat", "data": "lost-rm"}, `"lost-rm"`},
		{"direct message", a.url + "/v1/users/" + recipient + "/messages", bob, "dm-1", map[string]any{"type": "chat", "data": "lost-dm"}, `"lost-dm"`},
		{"invite", a.url + "/v1/rooms/" + room + "/invites", alice, "inv-1", map[string]any{"userId": recipient}, `"type":"invite"`},
	}
	if err := redistest.CutReplication(ctx, victim); err != nil {
		t.Fatal(err)
	}
	first := make([]string, len(sends))
	for i, s := range sends {
		status, _, body := keyed(t, "POST", s.url, s.token, s.key, s.body)
		if status != 202 {
			t.Fatalf("%s: %d %s", s.name, status, body)
		}
		first[i] = body
	}
	time.Sleep(300 * time.Millisecond)
	victim.Kill()
	if _, err := redistest.WaitMaster(replicas[0], 30*time.Second); err != nil {
		t.Fatal(err)
	}
	// a client of the Cluster as it is now (one that knew the dead master
	// dials it still)
	cc = redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{replicas[0].Addr}})
	defer cc.Close()

	// how many times a send is in its history: the room's messages, the
	// recipient's log
	held := func(i int) int {
		t.Helper()
		var entries []string
		if i == 0 {
			// 503 until the instance re-reads the slot layout (every
			// second): a call to the dead master fails at once meanwhile
			status, body := call(t, "GET", a.url+"/v1/rooms/"+room+"/messages", alice, nil)
			for try := 0; status == 503 && try < 50; try++ {
				time.Sleep(200 * time.Millisecond)
				status, body = call(t, "GET", a.url+"/v1/rooms/"+room+"/messages", alice, nil)
			}
			if status != 200 {
				t.Fatalf("messages: %d %v", status, body)
			}
			for _, m := range body["messages"].([]any) {
				b, _ := json.Marshal(m)
				entries = append(entries, string(b))
			}
		} else {
			var xs []redis.XMessage
			for try := 0; ; try++ { // until the client knows the new master
				if xs, err = cc.XRange(ctx, logOf[recipient], "-", "+").Result(); err == nil || try == 50 {
					break
				}
				time.Sleep(200 * time.Millisecond)
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, x := range xs {
				entries = append(entries, fmt.Sprint(x.Values["d"]))
			}
		}
		n := 0
		for _, e := range entries {
			if strings.Contains(e, sends[i].text) {
				n++
			}
		}
		return n
	}
	for i, s := range sends {
		if n := held(i); n != 0 {
			t.Fatalf("%s: %d in its history after the failover, want 0: the replication cut did not work", s.name, n)
		}
		status, replayed, body := keyed(t, "POST", s.url, s.token, s.key, s.body)
		if status != 202 || replayed {
			t.Fatalf("%s retried after the failover lost it: %d %s (replayed %v; first %s), want it sent again", s.name, status, body, replayed, first[i])
		}
		if n := held(i); n != 1 {
			t.Errorf("%s: %d in its history once retried, want 1", s.name, n)
		}
		if status, replayed, again := keyed(t, "POST", s.url, s.token, s.key, s.body); status != 202 || !replayed || again != body {
			t.Errorf("%s, its retry once sent again: %d %s (replayed %v), want %s replayed", s.name, status, again, replayed, body)
		}
	}
	a.stop(t)
	bad, err := invariants.Check(ctx, cc, prefix)
	if err != nil || len(bad) > 0 {
		t.Fatalf("invariants: %v %v", bad, err)
	}
}
