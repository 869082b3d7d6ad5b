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
// right, from the masters, and so does the lobby stream's list.
func TestReadFromReplicasEndToEnd(t *testing.T) {
	t.Parallel()
	cluster, err := redistest.StartClusterWithReplicas(3, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Stop)
	bin := raceBinary(t)
	in := start(t, bin, "REALSYNC_KEY_PREFIX="+redistest.Prefix(t), "REALSYNC_JWT_SECRET=e2e-secret",
		"REALSYNC_REDIS_CLUSTER_ADDRS="+strings.Join(cluster.Addrs(), ","), "REALSYNC_REDIS_READ_FROM_REPLICAS=on", loadTestLimits)
	masters, replicas := cluster.Nodes[:3], cluster.Nodes[3:]

	tok := guest(t, in, "browser")
	var ids []string
	for i := range 6 {
		status, body := call(t, "POST", in.url+"/v1/rooms", guest(t, in, "owner"), map[string]any{"name": "r",
			"mode": fmt.Sprint("m", i), "region": "eu", "maxPlayers": 4})
		if status != 201 {
			t.Fatalf("create: %d %v", status, body)
		}
		ids = append(ids, body["room"].(map[string]any)["id"].(string))
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

	for _, r := range replicas {
		r.Kill()
	}
	for i := range 5 {
		check(fmt.Sprint("every replica dead, list ", i))
	}
	_, lt := call(t, "POST", in.url+"/v1/lobby/stream-token", tok, nil)
	list := lobbyList(t, in, lt["token"].(string))
	for _, id := range ids {
		if !strings.Contains(list, `"`+id+`"`) {
			t.Fatalf("lobby list with every replica dead: %s, want room %s", list, id)
		}
	}
}
