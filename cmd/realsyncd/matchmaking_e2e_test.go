package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Two realsyncd processes with a rules file: tickets with ratings and
// parties queued through both, a few cancelled, one instance killed while
// they are matched. Every ticket ends matched (with a room), expired or
// cancelled, through the survivor; teams are full; a user is told of its
// match on the personal stream.
func TestMatchmakingAcrossInstances(t *testing.T) {
	t.Parallel()
	bin := raceBinary(t)
	rules := filepath.Join(t.TempDir(), "mm.yaml")
	if err := os.WriteFile(rules, []byte("modes:\n  squad:\n    teams: 2\n    teamSize: 2\n    window: {start: 100, step: 100, every: 1s, max: 800}\n    ticketTTL: 8s\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, backend := range []string{"standalone", "cluster"} {
		t.Run(backend, func(t *testing.T) {
			env := append(backendEnv(t, backend), "REALSYNC_MATCHMAKING_FILE="+rules, loadTestLimits)
			a, b := start(t, bin, env...), start(t, bin, env...)
			rng := rand.New(rand.NewPCG(3, 4))
			type ticket struct {
				id, token string
				size      int
				cancelled bool
			}
			var all []*ticket
			watchToken, _ := guestWithID(t, b, "watch")
			watch := openMe(t, b.url, watchToken, "web")
			if e, _ := watch.next(t, 10*time.Second); e.typ != "snapshot" {
				t.Fatalf("first event %+v", e)
			}
			for i := range 60 {
				in := b
				if i%2 == 0 && i < 30 {
					in = a
				}
				token, _ := guestWithID(t, in, fmt.Sprintf("p%d", i))
				if i == 0 {
					token = watchToken
				}
				body := map[string]any{"mode": "squad", "regions": []string{"eu"}, "rating": 1000 + rng.IntN(400)}
				size := 1
				if rng.IntN(3) == 0 {
					_, mate := guestWithID(t, in, fmt.Sprintf("m%d", i))
					body["partyUserIds"] = []string{mate}
					size = 2
				}
				status, res := call(t, "POST", in.url+"/v1/matchmaking/tickets", token, body)
				if status != 201 {
					t.Fatalf("create: %d %v", status, res)
				}
				tk := &ticket{id: res["ticket"].(map[string]any)["ticketId"].(string), token: token, size: size}
				all = append(all, tk)
				if i%7 == 3 {
					if status, _ := call(t, "DELETE", b.url+"/v1/matchmaking/tickets/"+tk.id, token, nil); status == 204 {
						tk.cancelled = true
					}
				}
				if i == 30 {
					a.kill()
				}
			}
			teams := map[string][]int{} // match → players per team
			counts := map[string]int{}
			deadline := time.Now().Add(30 * time.Second)
			for _, tk := range all {
				for {
					status, res := call(t, "GET", b.url+"/v1/matchmaking/tickets/"+tk.id, tk.token, nil)
					if status != 200 {
						t.Fatalf("get %s: %d %v", tk.id, status, res)
					}
					got := res["ticket"].(map[string]any)
					st := got["status"].(string)
					if st == "matched" && got["roomId"] == nil || st == "searching" {
						if time.Now().After(deadline) {
							t.Fatalf("%s still %s after 30 s", tk.id, st)
						}
						time.Sleep(100 * time.Millisecond)
						continue
					}
					counts[st]++
					if tk.cancelled && st != "cancelled" {
						t.Fatalf("%s cancelled, then %s", tk.id, st)
					}
					if st == "matched" {
						mid := got["matchId"].(string)
						if teams[mid] == nil {
							teams[mid] = make([]int, 2)
						}
						teams[mid][int(got["team"].(float64))] += tk.size
					}
					break
				}
			}
			for mid, ts := range teams {
				if ts[0] != 2 || ts[1] != 2 {
					t.Fatalf("match %s teams %v", mid, ts)
				}
			}
			if len(teams) < 3 {
				t.Fatalf("only %d matches: %v", len(teams), counts)
			}
			t.Logf("%s: %v in %d matches", backend, counts, len(teams))
			// the first player was matched, or its ticket expired or was cancelled
			status, res := call(t, "GET", b.url+"/v1/matchmaking/tickets/"+all[0].id, watchToken, nil)
			if got := res["ticket"].(map[string]any); status == 200 && got["status"] == "matched" {
				e, _ := watch.next(t, 10*time.Second)
				if e.typ != "match_found" || e.data["roomId"] != got["roomId"] {
					t.Fatalf("personal stream: %+v, ticket %v", e, got)
				}
			}
		})
	}
}

// The matchmaking metrics label the modes realsyncd is configured with
// (REALSYNC_MODES unset: the rules file's) by name, and a mode a client
// makes up as "other": a series per made-up mode stayed for as long as
// the instance ran. Standalone only: the labels are the instance's.
func TestMatchmakingMetricsLabelConfiguredModes(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	rules := filepath.Join(t.TempDir(), "mm.yaml")
	if err := os.WriteFile(rules, []byte("modes:\n  squad:\n    teams: 2\n    teamSize: 2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	in := start(t, bin, append(backendEnv(t, "standalone"), "REALSYNC_MATCHMAKING_FILE="+rules)...)
	for i, mode := range []string{"squad", "made-up-1", "made-up-2"} {
		token, _ := guestWithID(t, in, fmt.Sprintf("p%d", i))
		if status, res := call(t, "POST", in.url+"/v1/matchmaking/tickets", token,
			map[string]any{"mode": mode, "regions": []string{"eu"}}); status != 201 {
			t.Fatalf("create %s: %d %v", mode, status, res)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		mfs := scrapeMetrics(t, in.url+"/metrics")
		squad := metricValue(mfs, "realsync_matchmaking_tickets", "mode", "squad")
		other := metricValue(mfs, "realsync_matchmaking_tickets", "mode", "other")
		for _, m := range mfs["realsync_matchmaking_tickets"].GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "mode" && l.GetValue() != "squad" && l.GetValue() != "other" {
					t.Fatalf("a series of its own for the made-up mode %q", l.GetValue())
				}
			}
		}
		if squad == 1 && other == 2 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("queues reported: squad %v, other %v; want 1 and 2", squad, other)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// realsyncd checks a new ticket's users against the room quotas (a
// match's room would be past them: matchmaking.Config.Quotas wired).
func TestTicketsCheckTheRoomQuotas(t *testing.T) {
	t.Parallel()
	in := start(t, buildBinary(t), append(backendEnv(t, "standalone"), "REALSYNC_MAX_ROOMS_OWNED=1")...)
	token := guest(t, in, "owner")
	if status, res := call(t, "POST", in.url+"/v1/rooms", token, map[string]any{"name": "r", "mode": "m", "region": "eu"}); status != 201 {
		t.Fatalf("create: %d %v", status, res)
	}
	if status, res := call(t, "POST", in.url+"/v1/matchmaking/tickets", token, map[string]any{"mode": "duel", "regions": []string{"eu"}}); status != 409 || res["code"] != "OWNED_ROOMS_LIMIT" {
		t.Fatalf("ticket at the owned-rooms quota: %d %v", status, res)
	}
}

// realsyncd asks a party's consent with REALSYNC_PARTY_CONSENT=party
// (matchmaking.Config.Consent wired to the players' parties) and follow
// (to the following lists): a member who has not consented is refused,
// and so is one who consented the other setting's way (followed the
// leader under party, joined their party under follow); one who joined
// the leader's party (follows the leader) is queued.
func TestTicketsAskThePartysConsent(t *testing.T) {
	t.Parallel()
	join := func(leaderID string) (string, map[string]any) {
		return "/v1/me/party", map[string]any{"leaderUserId": leaderID}
	}
	follow := func(leaderID string) (string, map[string]any) {
		return "/v1/me/following", map[string]any{"userIds": []string{leaderID}}
	}
	for _, c := range []struct {
		consent string
		// other is the way that does not consent with this setting, way
		// the one that does
		other, way func(leaderID string) (string, map[string]any)
	}{{"party", follow, join}, {"follow", join, follow}} {
		t.Run(c.consent, func(t *testing.T) {
			t.Parallel()
			in := start(t, buildBinary(t), append(backendEnv(t, "standalone"), "REALSYNC_PARTY_CONSENT="+c.consent)...)
			leader, leaderID := guestWithID(t, in, "leader")
			member, memberID := guestWithID(t, in, "member")
			ticket := map[string]any{"mode": "trio", "regions": []string{"eu"}, "partyUserIds": []string{memberID}}
			for i, give := range []func(string) (string, map[string]any){nil, c.other} {
				if give != nil {
					path, body := give(leaderID)
					if status, res := call(t, "PUT", in.url+path, member, body); status != 200 {
						t.Fatalf("PUT %s: %d %v", path, status, res)
					}
				}
				if status, res := call(t, "POST", in.url+"/v1/matchmaking/tickets", leader, ticket); status != 403 || res["code"] != "PARTY_CONSENT_REQUIRED" {
					t.Fatalf("a party member who has not consented (step %d): %d %v", i, status, res)
				}
			}
			path, body := c.way(leaderID)
			if status, res := call(t, "PUT", in.url+path, member, body); status != 200 {
				t.Fatalf("PUT %s: %d %v", path, status, res)
			}
			if status, res := call(t, "POST", in.url+"/v1/matchmaking/tickets", leader, ticket); status != 201 {
				t.Fatalf("a party member who consented: %d %v", status, res)
			}
		})
	}
}

// A ticket naming a party member whose log holds its strangers' share
// (the member follows someone, not the leader) is 409 INBOX_FULL naming
// the member, nothing queued; a leader the member follows still names
// them: the matches of strangers' tickets cannot push the events of the
// users the member follows out of their log.
func TestTicketNamingAFullInboxIsRefused(t *testing.T) {
	t.Parallel()
	in := start(t, buildBinary(t), append(backendEnv(t, "standalone"), "REALSYNC_OFFLINE_MAX=200", "REALSYNC_RATE_LIMITS=off")...)
	member, memberID := guestWithID(t, in, "member")
	friend, friendID := guestWithID(t, in, "friend")
	stranger, _ := guestWithID(t, in, "stranger")
	if status, res := call(t, "PUT", in.url+"/v1/me/following", member, map[string]any{"userIds": []string{friendID}}); status != 200 {
		t.Fatalf("follow: %d %v", status, res)
	}
	ticket := map[string]any{"mode": "trio", "regions": []string{"eu"}, "partyUserIds": []string{memberID}}
	for i := range 100 { // the strangers' share of a log of 200
		if i == 99 { // below the share: another stranger's ticket names the member
			other, _ := guestWithID(t, in, "other")
			status, res := call(t, "POST", in.url+"/v1/matchmaking/tickets", other, ticket)
			if status != 201 {
				t.Fatalf("a stranger's ticket below the share: %d %v", status, res)
			}
			id := res["ticket"].(map[string]any)["ticketId"].(string)
			if status, res := call(t, "DELETE", in.url+"/v1/matchmaking/tickets/"+id, other, nil); status != 204 && status != 200 {
				t.Fatalf("cancel: %d %v", status, res)
			}
		}
		if status, res := call(t, "POST", in.url+"/v1/users/"+memberID+"/messages", stranger, map[string]any{"type": "chat", "data": i}); status != 202 {
			t.Fatalf("message %d: %d %v", i, status, res)
		}
	}
	status, res := call(t, "POST", in.url+"/v1/matchmaking/tickets", stranger, ticket)
	if d, _ := res["detail"].(string); status != 409 || res["code"] != "INBOX_FULL" || !strings.Contains(d, "partyUserIds.0") {
		t.Fatalf("a stranger's ticket naming a full inbox: %d %v", status, res)
	}
	if status, res := call(t, "POST", in.url+"/v1/matchmaking/tickets", friend, ticket); status != 201 {
		t.Fatalf("a followed leader's ticket: %d %v", status, res)
	}
}
