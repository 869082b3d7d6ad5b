package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/realsync/realsync/internal/redistest"
)

// replicaReads sums the ZRANGE and HGETALL calls (the browsing reads' commands)
// that nodes answered since their last CONFIG RESETSTAT.
func replicaReads(t *testing.T, nodes []*redistest.Server) int64 {
	t.Helper()
	var n int64
	for _, s := range nodes {
		n += s.CallsOf(t, "zrange", "hgetall")
	}
	return n
}

// lobbyList opens the lobby stream and returns the data of its first
// rooms event.
func lobbyList(t *testing.T, in *instance, token string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", in.url+"/v1/lobby/events?token="+token, nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("lobby stream: %d", res.StatusCode)
	}
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok && strings.Contains(data, `"type":"rooms"`) {
			return data
		}
	}
	t.Fatalf("lobby stream ended without a rooms event: %v", sc.Err())
	return ""
}

// realsyncd with REALSYNC_REDIS_READ_FROM_REPLICAS=on on a Cluster with a
// replica per master: lists and stats reach the replicas and are right once
// replication caught up; with every replica killed they still answer 200,
// right, from the masters. The lobby stream's list is read from the
// masters whatever the setting (a tester's find: read from a replica
// behind, it listed a room locked before the stream subscribed, whose
// notice went to nobody, and the client kept it for good).
func TestReadFromReplicasEndToEnd(t *testing.T) {
	t.Parallel()
	cluster, prefix, env := replicatedCluster(t, "REALSYNC_REDIS_READ_FROM_REPLICAS=on")
	bin := raceBinary(t)
	in := start(t, bin, env...)
	masters, replicas := cluster.Nodes[:3], cluster.Nodes[3:]

	tok := guest(t, in, "browser")
	var ids, owners []string
	for i := range 6 {
		owner := guest(t, in, "owner")
		status, body := call(t, "POST", in.url+"/v1/rooms", owner, map[string]any{"name": "r",
			"mode": fmt.Sprint("m", i), "region": "eu", "maxPlayers": 4})
		if status != 201 {
			t.Fatalf("create: %d %v", status, body)
		}
		ids, owners = append(ids, body["room"].(map[string]any)["id"].(string)), append(owners, owner)
	}
	if status, body := call(t, "POST", in.url+"/v1/rooms/"+ids[0]+"/join", tok, nil); status != 200 {
		t.Fatalf("join: %d %v", status, body)
	}
	if err := cluster.WaitSlotsListReplicas(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	for _, m := range masters {
		if err := cluster.WaitReplicated(m, 10*time.Second); err != nil {
			t.Fatal(err)
		}
	}

	check := func(when string) {
		t.Helper()
		status, list := call(t, "GET", in.url+"/v1/rooms?limit=50", tok, nil)
		rs, _ := list["rooms"].([]any)
		players := 0.0
		for _, r := range rs {
			players += r.(map[string]any)["playerCount"].(float64)
		}
		if status != 200 || len(rs) != 6 || players != 7 {
			t.Fatalf("%s: list %d with %d rooms, %v players; want 200, 6, 7: %v", when, status, len(rs), players, list)
		}
		status, stats := call(t, "GET", in.url+"/v1/lobby/stats", tok, nil)
		if status != 200 || stats["players"] != 7.0 || stats["rooms"].(map[string]any)["waiting"] != 6.0 {
			t.Fatalf("%s: stats %d %v; want 200, 7 players, 6 waiting rooms", when, status, stats)
		}
	}
	// go-redis re-reads the layout every second: the replicas that CLUSTER
	// SLOTS now lists are read within a few seconds
	for deadline := time.Now().Add(10 * time.Second); replicaReads(t, replicas) == 0; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no browsing read reached a replica within 10s")
		}
		check("replicas in sync")
	}
	check("replicas in sync")

	// room 5 locked on a master whose replica is cut off: the browsing
	// list, read there, still shows it joinable; the lobby stream's list
	// must not
	master, _ := masterOfRoom(t, cluster, prefix, ids[5])
	if err := redistest.CutReplication(t.Context(), master); err != nil {
		t.Fatal(err)
	}
	if status, body := call(t, "PATCH", in.url+"/v1/rooms/"+ids[5], owners[5], map[string]any{"locked": true}); status != 200 {
		t.Fatalf("lock: %d %v", status, body)
	}
	if _, stale := call(t, "GET", in.url+"/v1/rooms?joinable=true&mode=m5", tok, nil); len(stale["rooms"].([]any)) != 1 {
		t.Fatalf("browsing list of the cut-off replica: %v, want the room still joinable there", stale)
	}
	_, lt := call(t, "POST", in.url+"/v1/lobby/stream-token", tok, nil)
	if list := lobbyList(t, in, lt["token"].(string)); strings.Contains(list, `"`+ids[5]+`"`) || !strings.Contains(list, `"`+ids[4]+`"`) {
		t.Fatalf("lobby list with a replica behind: %s, want room %s and not %s, locked", list, ids[4], ids[5])
	}

	for _, r := range replicas {
		r.Kill()
	}
	for i := range 5 {
		check(fmt.Sprint("every replica dead, list ", i))
	}
	_, lt = call(t, "POST", in.url+"/v1/lobby/stream-token", tok, nil)
	list := lobbyList(t, in, lt["token"].(string))
	for _, id := range ids[:5] {
		if !strings.Contains(list, `"`+id+`"`) {
			t.Fatalf("lobby list with every replica dead: %s, want room %s", list, id)
		}
	}
}
