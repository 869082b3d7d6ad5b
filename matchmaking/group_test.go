package matchmaking

import (
	"fmt"
	"reflect"
	"testing"
	"time"
)

func TestGroup(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	ago := func(s int) time.Time { return now.Add(-time.Duration(s) * time.Second) }
	e := func(id string, rating float64, size int, waited int, regions ...string) Entry {
		if len(regions) == 0 {
			regions = []string{"eu"}
		}
		return Entry{ID: id, Rating: rating, Size: size, Created: ago(waited), Regions: regions}
	}
	duel := Default()
	teams := Rules{Teams: 2, TeamSize: 2, Window: Window{Start: 100}}
	ffa := Rules{Teams: 1, MinPlayers: 3, MaxPlayers: 4, Window: Window{Start: 100}}
	fallback := duel
	fallback.RegionFallback = Duration(10 * time.Second)
	cases := []struct {
		name    string
		rules   Rules
		entries []Entry
		want    []Grouped
	}{
		{name: "PairWithinWindow", rules: duel, entries: []Entry{e("a", 1000, 1, 0), e("b", 1090, 1, 0)},
			want: []Grouped{{Tickets: []string{"a", "b"}, Teams: []int{0, 0}, Region: "eu"}}},
		{name: "OutsideWindowWaits", rules: duel, entries: []Entry{e("a", 1000, 1, 0), e("b", 1150, 1, 0)}},
		// a waited 5 s: ±200, but b's own window is still ±100
		{name: "BothWindowsMustHold", rules: duel, entries: []Entry{e("a", 1000, 1, 5), e("b", 1150, 1, 0)}},
		{name: "WidenedBoth", rules: duel, entries: []Entry{e("a", 1000, 1, 5), e("b", 1150, 1, 6)},
			want: []Grouped{{Tickets: []string{"a", "b"}, Teams: []int{0, 0}, Region: "eu"}}},
		{name: "RatingOrderPairs", rules: duel, entries: []Entry{e("d", 1300, 1, 0), e("a", 1000, 1, 0), e("c", 1250, 1, 0), e("b", 1010, 1, 0)},
			want: []Grouped{{Tickets: []string{"a", "b"}, Teams: []int{0, 0}, Region: "eu"}, {Tickets: []string{"c", "d"}, Teams: []int{0, 0}, Region: "eu"}}},
		{name: "PartyTooBigForDuelSkipped", rules: teams, entries: []Entry{e("p", 1000, 3, 0), e("a", 1000, 1, 0)}},
		// q (2) fits no team once a took one of team 1s seats: skipped, it stays queued
		{name: "PartiesWhole2v2", rules: teams, entries: []Entry{e("p", 1000, 2, 0), e("a", 1010, 1, 0), e("q", 1020, 2, 0), e("b", 1030, 1, 0)},
			want: []Grouped{{Tickets: []string{"p", "a", "b"}, Teams: []int{0, 1, 1}, Region: "eu"}}},
		// a solo between two parties took the seat the second needed: the
		// parties are tried again largest first and make the match; the solo waits
		{name: "PartiesAroundASolo2v2", rules: teams, entries: []Entry{e("p", 1300, 2, 0), e("s", 1330, 1, 0), e("q", 1400, 2, 0)},
			want: []Grouped{{Tickets: []string{"p", "q"}, Teams: []int{0, 1}, Region: "eu"}}},
		// the retry keeps every window (a reviewer's case): largest first it
		// would take t6 (3, ±50) and then t3, 107 above t4: past t6's window
		{name: "RetryKeepsEveryWindow", rules: Rules{Teams: 2, TeamSize: 3, Window: Window{Start: 50, Step: 50, Every: Duration(time.Second), Max: 300}},
			entries: []Entry{e("t4", 1182, 2, 2), e("t2", 1208, 2, 4), e("t6", 1218, 3, 0), e("t3", 1289, 1, 2)}},
		{name: "EqKeySeparates", rules: duel, entries: []Entry{{ID: "a", Rating: 1000, Size: 1, Created: now, Regions: []string{"eu"}, EqKey: "pc"},
			{ID: "b", Rating: 1000, Size: 1, Created: now, Regions: []string{"eu"}, EqKey: "console"}}},
		{name: "FFAAtMinWhenNoMoreFit", rules: ffa, entries: []Entry{e("a", 1000, 1, 0), e("b", 1050, 1, 0), e("c", 1090, 1, 0), e("d", 1200, 1, 0)},
			want: []Grouped{{Tickets: []string{"a", "b", "c"}, Teams: []int{0, 0, 0}, Region: "eu"}}},
		{name: "FFABelowMinWaits", rules: ffa, entries: []Entry{e("a", 1000, 1, 0), e("b", 1050, 1, 0)}},
		{name: "RegionNotYetOpen", rules: fallback, entries: []Entry{e("a", 1000, 1, 0, "eu", "us"), e("b", 1000, 1, 0, "us")}},
		{name: "RegionFallbackOpens", rules: fallback, entries: []Entry{e("a", 1000, 1, 11, "eu", "us"), e("b", 1000, 1, 0, "us")},
			want: []Grouped{{Tickets: []string{"a", "b"}, Teams: []int{0, 0}, Region: "us"}}},
		{name: "PreferredRegionFirst", rules: fallback, entries: []Entry{e("a", 1000, 1, 11, "eu", "us"), e("b", 1001, 1, 0, "us"), e("c", 1002, 1, 0, "eu")},
			want: []Grouped{{Tickets: []string{"a", "c"}, Teams: []int{0, 0}, Region: "eu"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Group(c.rules, c.entries, now)
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("Group = %+v, want %+v", got, c.want)
			}
		})
	}
}

// Invariants of Group on many random queues: no ticket twice, sizes right,
// every ticket's window holds every other's rating, teams within their cap.
func TestGroupInvariants(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	r := Rules{Teams: 2, TeamSize: 3, Window: Window{Start: 50, Step: 50, Every: Duration(5 * time.Second), Max: 400}}
	for seed := range 50 {
		var es []Entry
		for i := range 200 {
			x := (seed*7919 + i*104729) % 1000
			es = append(es, Entry{ID: fmt.Sprintf("t%03d", i), Rating: float64(1000 + x), Size: 1 + x%3,
				Created: now.Add(-time.Duration(x%60) * time.Second), Regions: []string{"eu"}})
		}
		byID := map[string]Entry{}
		for _, e := range es {
			byID[e.ID] = e
		}
		seen := map[string]bool{}
		for _, g := range Group(r, es, now) {
			sizes := make([]int, r.Teams)
			lo, hi := 1e18, -1e18
			for k, id := range g.Tickets {
				if seen[id] {
					t.Fatalf("seed %d: %s in two matches", seed, id)
				}
				seen[id] = true
				sizes[g.Teams[k]] += byID[id].Size
				lo, hi = min(lo, byID[id].Rating), max(hi, byID[id].Rating)
			}
			for _, id := range g.Tickets {
				if w := r.WindowAt(now.Sub(byID[id].Created)); hi-lo > w {
					t.Fatalf("seed %d: spread %v past %s's window %v", seed, hi-lo, id, w)
				}
			}
			for _, s := range sizes {
				if s != r.TeamSize {
					t.Fatalf("seed %d: team sizes %v", seed, sizes)
				}
			}
		}
	}
}
