package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/realsync/realsync"
	"github.com/realsync/realsync/api"
	"github.com/realsync/realsync/internal/storetest"
	"github.com/realsync/realsync/lobby"
	"github.com/realsync/realsync/matchmaking"
	"github.com/realsync/realsync/players"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/sse"
	"github.com/realsync/realsync/store"
	"github.com/realsync/realsync/store/tickets"
)

// analyse counts what was matched, the waits by band, the spread of each
// match, and teams whose users are not the team size.
func TestMatchAnalyse(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	ts := []*matchTicket{
		{rating: 1500, users: 2, status: "matched", matchID: "a", team: 0, created: at(0), matched: at(1)},
		{rating: 1540, users: 1, status: "matched", matchID: "a", team: 1, created: at(0), matched: at(1)},
		{rating: 1560, users: 1, status: "matched", matchID: "a", team: 1, created: at(0.5), matched: at(1)},
		{id: "b0", rating: 2200, users: 2, status: "matched", matchID: "b", team: 0, created: at(0), matched: at(3)},
		{id: "b1", rating: 2300, users: 1, status: "matched", matchID: "b", team: 1, created: at(1), matched: at(3)}, // a team of 1
		{rating: 900, users: 1, status: "searching"},
		{rating: 1500, users: 1, status: "expired"},
	}
	rep := MatchReport{}.analyse(ts, 2)
	if rep.Matched != 5 || rep.Searching != 1 || rep.Expired != 1 || rep.Matches != 2 {
		t.Fatalf("counts %+v", rep)
	}
	if rep.TeamsWrongSize != 1 {
		t.Errorf("teams of the wrong size: %d, want 1", rep.TeamsWrongSize)
	}
	if want := []string{"b: b0 team 0 users 2; b1 team 1 users 1;"}; !slices.Equal(rep.WrongTeams, want) {
		t.Errorf("the match shown: %q, want %q", rep.WrongTeams, want)
	}
	if rep.Spread.N != 2 || rep.Spread.P50 != 60 || rep.Spread.Max != 100 {
		t.Errorf("spread %+v", rep.Spread)
	}
	if b := rep.WaitBands["|r-1500| >= 600"]; b.N != 2 || b.Max != 3 {
		t.Errorf("the far band %+v", b)
	}
	if rep.Wait.N != 5 || rep.Wait.Max != 3 || rep.MatchSpanSeconds != 2 || rep.PeakPerSecond != 3 {
		t.Errorf("waits %+v, span %v, peak %d", rep.Wait, rep.MatchSpanSeconds, rep.PeakPerSecond)
	}
}

// A match the matcher makes while the tickets are read back (a
// straggler's window widened) is seen whole: the tickets read before it
// are read again. Read once, the first ticket read showed searching and
// its match a team short (a run of 2026-12-01: one team of 30 005).
func TestReadBackSeesAMatchMadeDuringTheRead(t *testing.T) {
	var mu sync.Mutex
	reads := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := strings.TrimPrefix(r.URL.Path, "/v1/matchmaking/tickets/")
		mu.Lock()
		reads++
		matched := reads > 1 // the match is made right after the first read
		mu.Unlock()
		team := map[string]int{"a": 0, "b": 0, "c": 1, "d": 1}[id]
		st := `"status":"searching"`
		if matched {
			st = `"status":"matched","matchId":"m1","team":` + strconv.Itoa(team)
		}
		fmt.Fprintf(w, `{"ticket":{%s,"createdAt":"2026-12-01T00:00:00Z","matchedAt":"2026-12-01T00:00:01Z"}}`, st)
	}))
	defer srv.Close()
	var ts []*matchTicket
	for _, id := range []string{"a", "b", "c", "d"} {
		ts = append(ts, &matchTicket{id: id, users: 1, rating: 1500})
	}
	readBack(context.Background(), Config{URLs: []string{srv.URL}, Clients: 1}, ts, func(step string, err error) { t.Error(step, err) })
	rep := MatchReport{}.analyse(ts, 2)
	if rep.Matched != 4 || rep.Searching != 0 || rep.TeamsWrongSize != 0 || rep.Matches != 1 {
		t.Fatalf("read back: %d matched, %d searching, %d teams of the wrong size over %d matches; want the one match whole",
			rep.Matched, rep.Searching, rep.TeamsWrongSize, rep.Matches)
	}
}

// Against a server that asks a party's consent (matchmaking.Config.Consent,
// REALSYNC_PARTY_CONSENT party or follow), each party member joins its
// leader's party and follows them, and the create goes again: every
// ticket is queued and matched (14 tickets: 8 parties, each a match of its
// own, and 6 solos, in pairs).
func TestMatchRunGivesThePartysConsent(t *testing.T) {
	for _, mode := range []string{"party", "follow"} {
		t.Run(mode, func(t *testing.T) { testMatchRunGivesThePartysConsent(t, mode, "") })
		// -party-consent: given before the create, none refused
		t.Run(mode+"/before", func(t *testing.T) { testMatchRunGivesThePartysConsent(t, mode, mode) })
	}
}

func testMatchRunGivesThePartysConsent(t *testing.T, consent, before string) {
	st := storetest.Open(t, store.Config{})
	mc := matchmaking.Config{Queue: tickets.New(st.Base(), st.UserLogs(), st.Renewals()), Consent: players.FollowConsent{Store: st.Sessions()}}
	if consent == "party" {
		mc.Consent = players.NewParties(st.Sessions())
	}
	svc, err := matchmaking.NewService(mc)
	if err != nil {
		t.Fatal(err)
	}
	hub := sse.NewHub(sse.Config{Source: st, Lobby: st.Listing(), Feed: st.Feed, RoomJSON: api.RoomJSON})
	defer hub.Close()
	h := api.NewHandler(api.Config{Rooms: rooms.NewService(st), Lobby: lobby.NewService(st.Listing()),
		Events: hub, Players: players.NewService(st.Sessions()), Parties: players.NewParties(st.Sessions()), Tickets: svc, Log: slog.New(slog.DiscardHandler),
		Auth: &api.Auth{Secret: []byte("s"), GuestEnabled: true}, Ready: st.Ping, Spec: realsync.OpenAPI})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/metrics" { // the searching tickets, which the run waits to see gone
			n, err := mc.Queue.Searching(r.Context(), "mm0")
			if err != nil {
				http.Error(w, err.Error(), 500)
				return
			}
			fmt.Fprintf(w, "realsync_matchmaking_tickets{mode=\"mm0\"} %d\n", n)
			return
		}
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		matchmaking.NewMatcher(matchmaking.MatcherConfig{Config: mc, Rooms: st, Notifier: mc.Queue.(matchmaking.Notifier), Holder: "t", Interval: 50 * time.Millisecond}).Run(ctx)
	}()
	defer func() { cancel(); <-done }()
	rep, err := runMatch(ctx, Config{URLs: []string{srv.URL}, Clients: 2, Tickets: 14, Modes: 1, Regions: 1, Party: 50, Duration: 30 * time.Second,
		PartyConsent: before})
	if err != nil || rep.Errors != 0 || rep.Parties == 0 || rep.Matched != rep.Tickets {
		t.Fatalf("%v: %d errors (%v), %d parties, %d of %d tickets matched; want none, some, all", err, rep.Errors, rep.ErrorCodes, rep.Parties, rep.Matched, rep.Tickets)
	}
	want := rep.Parties // each party's create refused once, then sent again
	if before != "" {
		want = 0
	}
	if rep.ConsentRefused != want {
		t.Fatalf("%d creates refused for consent, want %d", rep.ConsentRefused, want)
	}
}
