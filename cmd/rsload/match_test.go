package main

import (
	"testing"
	"time"
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
		{rating: 2200, users: 2, status: "matched", matchID: "b", team: 0, created: at(0), matched: at(3)},
		{rating: 2300, users: 1, status: "matched", matchID: "b", team: 1, created: at(1), matched: at(3)}, // a team of 1
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
