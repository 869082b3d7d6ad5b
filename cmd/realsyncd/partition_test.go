package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/realsync/realsync/internal/netns"
	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/internal/wait"
)

// partitionBound is how soon a partitioned instance must say so: /readyz
// and API calls answer 503, its streams end.
const partitionBound = 5 * time.Second

// An instance cut off from Redis by a network partition (it runs in a
// network namespace whose link to Redis goes down, so packets vanish and
// connections hang) stops serving what it cannot vouch for: /readyz and the
// API answer 503 STORE_UNAVAILABLE within a bound, its event streams end
// rather than stay open as if live, and its players show disconnected to
// the streams of the other instance. When the link comes back it serves
// again, and its streams resume where they left off.
func TestPartitionedInstance(t *testing.T) {
	if why := netns.Unavailable(); why != "" {
		t.Skip(why)
	}
	ns := netns.New(t)
	toRedis, toClients := ns.Link(t), ns.Link(t)
	srv, err := redistest.StartServer("--bind", "127.0.0.1", toRedis.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	bin := buildBinary(t)
	env := []string{"REALSYNC_KEY_PREFIX=" + redistest.Prefix(t), "REALSYNC_JWT_SECRET=e2e-secret",
		"REALSYNC_PRESENCE_TTL=1s", "REALSYNC_DISCONNECT_GRACE=60s"}
	port := fmt.Sprint(srv.Port)
	a := ready(t, launchCmd(t, ns.Command(bin), toClients.Inside+":8080", append(env, "REALSYNC_REDIS_URL=redis://"+toRedis.Host+":"+port)...))
	b := start(t, bin, append(env, "REALSYNC_REDIS_URL=redis://127.0.0.1:"+port)...)

	id, toks := party(t, b, 1)
	watcher := follow(t, []string{b.url}, id, toks[0], false) // player 1, through b
	cutoff := follow(t, []string{a.url}, id, toks[1], true)   // player 2, through a only
	watcher.waitVersion(4, 10*time.Second)                    // both connected
	cutoff.waitVersion(4, 10*time.Second)
	if !patch(t, b, id, toks[0], map[string]any{"before": true}) {
		t.Fatal("patch before the partition failed")
	}
	cutoff.waitVersion(5, 10*time.Second)

	ta := newTally()
	toRedis.Cut()
	cut := time.Now()
	conns := cutoff.connections()
	bound := cut.Add(partitionBound)
	streamEnded := when(bound, func() bool { return cutoff.connections() > conns })
	shownDisconnected := when(bound, func() bool { return disconnected(watcher.all(), 2) })

	// The partitioned instance says so, promptly, on every route.
	wait.Within(t, partitionBound, "a: /readyz 503", func() bool { return ta.timed("GET", a.url+"/readyz", "", nil).status == 503 })
	wait.Within(t, partitionBound, "a: reads 503", func() bool {
		return ta.timed("GET", a.url+"/v1/rooms/"+id, toks[1], nil).code == "STORE_UNAVAILABLE"
	})
	wait.Within(t, partitionBound, "a: writes 503", func() bool {
		return ta.timed("PATCH", a.url+"/v1/rooms/"+id+"/state", toks[1], map[string]any{"during": 1}).code == "STORE_UNAVAILABLE"
	})
	if bad := ta.unexpected("503 STORE_UNAVAILABLE"); len(bad) > 0 {
		t.Errorf("the partitioned instance answered otherwise than 503: %v", bad)
	}
	// Its stream ends once its presence lease lapsed; the other instance's
	// stream shows the player disconnected; the rest goes on.
	for i := range 5 {
		if !patch(t, b, id, toks[0], map[string]any{"during": i}) {
			t.Fatal("patch through b failed during the partition")
		}
	}
	for _, w := range []struct {
		what string
		at   chan time.Time
	}{{"a's stream ended", streamEnded}, {"b's stream shows a's player disconnected", shownDisconnected}} {
		if at := <-w.at; !at.IsZero() {
			t.Logf("%s %v after the cut", w.what, at.Sub(cut).Round(time.Millisecond))
		} else {
			t.Fatalf("%s: not within %v of the cut; b's stream: %s", w.what, partitionBound, types(watcher.all()))
		}
	}
	t.Logf("partitioned: a's answers %s", ta)

	// Healed: a serves again, its stream resumes and catches up.
	toRedis.Heal()
	healed := time.Now()
	wait.Within(t, partitionBound, "a: /readyz 200 after the heal", func() bool { return ta.timed("GET", a.url+"/readyz", "", nil).status == 200 })
	// go-redis answers new connections with its last dial error until its
	// background dial gets through (about a second), so the first writes
	// after the heal may still be 503: within the bound, one must pass.
	wait.Within(t, partitionBound, "a: a patch through a after the heal", func() bool {
		return patch(t, a, id, toks[1], map[string]any{"after": true})
	})
	wait.Within(t, partitionBound, "a: its stream is back", func() bool { return connected(watcher.all(), 2) })
	final := roomVersion(t, b, id, toks[0])
	es := cutoff.waitVersion(final, 20*time.Second)
	inOrder(t, "a's stream", es)
	t.Logf("healed: a ready and its stream caught up %v after the heal", time.Since(healed).Round(time.Millisecond))
	ws := watcher.waitVersion(final, 20*time.Second)
	inOrder(t, "b's stream", ws)
	if !connected(ws, 2) {
		t.Errorf("b's stream never saw a's player connected again: %s", types(ws))
	}
	if ta.max > partitionBound {
		t.Errorf("a request took %v, want every answer within %v", ta.max, partitionBound)
	}
	noTokenLogged(t, toks, a, b)
}

// when polls ok every 10 ms until deadline and sends the time it first
// held, or the zero time.
func when(deadline time.Time, ok func() bool) chan time.Time {
	at := make(chan time.Time, 1)
	go func() {
		for ; time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if ok() {
				at <- time.Now()
				return
			}
		}
		at <- time.Time{}
	}()
	return at
}

// connected reports whether the last of es that tells player pid's
// presence says connected: a player_connected or player_disconnected of
// it, or a snapshot (its room's players), which a follower that opened,
// or reopened, after the player connected gets instead of the event.
func connected(es []sseEvent, pid float64) bool {
	for i := len(es) - 1; i >= 0; i-- {
		switch e := es[i]; {
		case e.typ == "snapshot":
			room, _ := e.data["room"].(map[string]any)
			players, _ := room["players"].([]any)
			for _, p := range players {
				if p, _ := p.(map[string]any); p["playerId"] == pid {
					return p["connected"] == true
				}
			}
			return false
		case e.data["playerId"] != pid:
		case e.typ == "player_connected":
			return true
		case e.typ == "player_disconnected":
			return false
		}
	}
	return false
}

// connections returns how many connections the follower opened so far.
func (f *follower) connections() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.conns
}

func types(es []sseEvent) string {
	var out []string
	for _, e := range es {
		out = append(out, fmt.Sprint(e.version, e.typ))
	}
	return strings.Join(out, " ")
}
