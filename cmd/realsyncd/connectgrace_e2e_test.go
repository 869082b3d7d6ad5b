package main

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/realsync/realsync/internal/redistest"
)

// REALSYNC_CONNECT_GRACE over HTTP: a player who joined and opened no
// stream is removed once it passes, one whose stream is open stays, and
// the janitor counts the removal as presence_unconnected.
func TestConnectGraceRemovesJoinedPlayersWithoutAStream(t *testing.T) {
	t.Parallel()
	// the grace is also alice's time from her create to her stream's
	// opening, and bob's from his join to the count of two, with the
	// janitor running: 6 s, so that a loaded machine (the CI's lanes at
	// once, a stall) does not remove either too soon (300 ms did, with a
	// create and a stream open 1.5 s apart; 2 s left a stall little room);
	// alice's lease (3 s) outlasts a stall of her instance too
	in := start(t, buildBinary(t), "REALSYNC_REDIS_URL="+redistest.StandaloneURL(t), "REALSYNC_KEY_PREFIX="+redistest.Prefix(t),
		"REALSYNC_CONNECT_GRACE=6s", "REALSYNC_PRESENCE_TTL=3s")
	alice, bob := guest(t, in, "alice"), guest(t, in, "bob")
	status, res := call(t, "POST", in.url+"/v1/rooms", alice, map[string]any{"name": "r", "mode": "duel", "region": "eu", "maxPlayers": 2})
	if status != 201 {
		t.Fatalf("create: %d %v", status, res)
	}
	id := res["room"].(map[string]any)["id"].(string)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", in.url+"/v1/rooms/"+id+"/events", nil)
	req.Header.Set("Authorization", "Bearer "+alice)
	stream, err := http.DefaultClient.Do(req)
	if err != nil || stream.StatusCode != 200 {
		t.Fatalf("alice's stream: %v %v", stream, err)
	}
	defer stream.Body.Close()
	if status, res := call(t, "POST", in.url+"/v1/rooms/"+id+"/join", bob, nil); status != 200 {
		t.Fatalf("bob's join: %d %v", status, res)
	}
	players := func() []any {
		status, res := call(t, "GET", in.url+"/v1/rooms/"+id, alice, nil)
		if status != 200 {
			t.Fatalf("GET room: %d %v", status, res)
		}
		return res["players"].([]any)
	}
	if n := len(players()); n != 2 {
		t.Fatalf("%d players after bob's join, want 2", n)
	}
	// polled 4 times a second: the grace's reads stay within alice's read limit
	for deadline := time.Now().Add(20 * time.Second); len(players()) != 1; time.Sleep(250 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("bob, who opened no stream, still in the room 20 s after joining: %v", players())
		}
	}
	if p := players()[0].(map[string]any); p["name"] != "alice" || p["connected"] != true {
		t.Errorf("player left %v, want alice, connected", p)
	}
	// The janitor counts a visit's actions when the visit ends, after the
	// removal is in Redis: a read right after bob's removal can come first
	// (seen on a loaded machine, "0"). Polled until the visit is counted.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		got := in.metric(t, "realsync_janitor_actions_total", `kind="presence_unconnected"`)
		if got == "1" {
			break
		}
		if (got != "0" && got != "") || time.Now().After(deadline) {
			t.Fatalf("realsync_janitor_actions_total{kind=\"presence_unconnected\"} %q, want 1", got)
		}
	}
}
