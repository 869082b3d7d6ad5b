package players_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/realsync/realsync/players"
)

func TestCheckPlatform(t *testing.T) {
	for _, tc := range []struct {
		in string
		ok bool
	}{{"pc", true}, {"console", true}, {"mobile", true}, {"web", true}, {"", false}, {"PC", false}, {"tv", false}, {"pc ", false}} {
		err := players.CheckPlatform(tc.in)
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, players.ErrInvalidPlatform)) {
			t.Errorf("%q: %v", tc.in, err)
		}
	}
}

func TestCheckUserIDs(t *testing.T) {
	long := strings.Repeat("x", players.MaxUserIDLen)
	for _, tc := range []struct {
		name     string
		ids      []string
		min, max int
		ok       bool
	}{
		{"one", []string{"a"}, 1, 100, true},
		{"none but one needed", nil, 1, 100, false},
		{"none allowed", []string{}, 0, 500, true},
		{"too many", make([]string, 3), 0, 2, false},
		{"longest", []string{long}, 1, 1, true},
		{"too long", []string{long + "x"}, 1, 1, false},
		{"empty id", []string{"a", ""}, 1, 5, false},
		{"space", []string{"a b"}, 1, 5, false},
		{"comma", []string{"a,b"}, 1, 5, false},
		{"control", []string{"a\x00"}, 1, 5, false},
		{"unicode", []string{"jöran"}, 1, 5, true},
		{"not UTF-8", []string{"\xff\xfe"}, 1, 5, false},
		{"duplicates", []string{"a", "a"}, 1, 5, true},
	} {
		err := players.CheckUserIDs(tc.ids, tc.min, tc.max)
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, players.ErrInvalidUserIDs)) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}

func TestParsePolicy(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want players.Policy
	}{{"replace", players.PolicyReplace}, {"reject-new", players.PolicyRejectNew}, {"allow-multiple", players.PolicyAllowMultiple},
		{"", ""}, {"Replace", ""}, {"kick", ""}} {
		got, err := players.ParsePolicy(tc.in)
		if got != tc.want || (err == nil) != (tc.want != "") {
			t.Errorf("%q: %q %v", tc.in, got, err)
		}
	}
}

// A status's event always carries a platforms array (empty offline).
func TestStatusEvent(t *testing.T) {
	ev := players.Status{UserID: "u"}.Event("2026-01-01T00:00:00Z")
	if ev.Platforms == nil || ev.Type != players.EventPresence || ev.Online {
		t.Errorf("offline event %+v", ev)
	}
}
