package main

import (
	"maps"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/realsync/realsync/store/tickets"
)

// REALSYNC_MATCHMAKING_FILE: unset, every mode gets the defaults; a good
// file's modes get its rules; a missing or bad file is reported naming the
// variable and the field; the flag wins. Rules for a mode REALSYNC_MODES
// does not allow are refused: its tickets are, so they could never apply.
func TestParseConfigMatchmaking(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "mm.yaml")
	if err := os.WriteFile(good, []byte("modes:\n  ranked:\n    teams: 2\n    teamSize: 3\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	goodJSON := filepath.Join(dir, "mm.json")
	if err := os.WriteFile(goodJSON, []byte(`{"modes": {"ranked": {"minPlayers": 2, "maxPlayers": 6}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("modes:\n  ranked:\n    window: {start: 100, max: 50}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const file = "REALSYNC_MATCHMAKING_FILE"
	tests := []struct {
		name    string
		env     map[string]string
		args    []string
		size    int // of mode ranked
		wantErr string
	}{
		{name: "DefaultTwoPlayers", size: 2},
		{name: "YAML", env: map[string]string{file: good}, size: 6},
		{name: "JSON", env: map[string]string{file: goodJSON}, size: 6},
		{name: "FlagWins", env: map[string]string{file: bad}, args: []string{"-matchmaking-file", good}, size: 6},
		{name: "Missing", env: map[string]string{file: dir + "/none"}, wantErr: file},
		{name: "BadField", env: map[string]string{file: bad}, wantErr: "modes.ranked.window.max"},
		{name: "ModeAllowed", env: map[string]string{file: good, "REALSYNC_MODES": "battle,ranked"}, size: 6},
		{name: "ModeNotAllowed", env: map[string]string{file: good, "REALSYNC_MODES": "battle,duel"},
			wantErr: "REALSYNC_MATCHMAKING_FILE: rules for mode(s) ranked that REALSYNC_MODES (battle,duel) does not allow"},
		{name: "ModeNotAllowedFlag", env: map[string]string{file: good}, args: []string{"-modes", "duel"}, wantErr: "mode(s) ranked that REALSYNC_MODES (duel)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, ok := parseCase(t, tc.env, tc.args, tc.wantErr)
			if !ok {
				return
			}
			if got := c.MatchmakingRules.Of("ranked").Size(); got != tc.size {
				t.Errorf("mode ranked matches %d players, want %d", got, tc.size)
			}
		})
	}
}

// REALSYNC_MATCH_COMMIT_REPLICAS and REALSYNC_MATCH_COMMIT_WAIT: one
// replica within 500 ms by default; 0 turns the wait off; values out of
// range are refused naming the variable; the flags win.
func TestParseConfigMatchCommit(t *testing.T) {
	const replicas, wait = "REALSYNC_MATCH_COMMIT_REPLICAS", "REALSYNC_MATCH_COMMIT_WAIT"
	tests := []struct {
		name    string
		env     map[string]string
		args    []string
		want    tickets.Durability
		wantErr string
	}{
		{name: "Default", want: tickets.DefaultDurability},
		{name: "Off", env: map[string]string{replicas: "0"}, want: tickets.Durability{Wait: 500 * time.Millisecond, Hold: 10 * time.Second}},
		{name: "Two", env: map[string]string{replicas: "2", wait: "1s"}, want: tickets.Durability{Replicas: 2, Wait: time.Second, Hold: 10 * time.Second}},
		{name: "FlagsWin", env: map[string]string{replicas: "2", wait: "1s"}, args: []string{"-match-commit-replicas", "3", "-match-commit-wait", "50ms"},
			want: tickets.Durability{Replicas: 3, Wait: 50 * time.Millisecond, Hold: 10 * time.Second}},
		{name: "Negative", env: map[string]string{replicas: "-1"}, wantErr: replicas},
		{name: "TooMany", env: map[string]string{replicas: "6"}, wantErr: replicas},
		{name: "NotANumber", env: map[string]string{replicas: "one"}, wantErr: replicas},
		{name: "WaitNoUnit", env: map[string]string{wait: "500"}, wantErr: wait},
		{name: "WaitTooShort", env: map[string]string{wait: "5ms"}, wantErr: wait},
		{name: "WaitTooLong", env: map[string]string{wait: "3s"}, wantErr: wait},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, ok := parseCase(t, tc.env, tc.args, tc.wantErr)
			if ok && c.MatchCommit != tc.want {
				t.Errorf("commit durability %+v, want %+v", c.MatchCommit, tc.want)
			}
		})
	}
}

// REALSYNC_PARTY_CONSENT: party in production, none in development by
// default; any value in either; anything else refused naming the
// variable; the flag wins.
func TestParseConfigPartyConsent(t *testing.T) {
	const consent = "REALSYNC_PARTY_CONSENT"
	prod := map[string]string{"REALSYNC_ENV": "production", "REALSYNC_JWT_SECRET": "0f3c9a7e51d24b68aa9e7c03b5d1f2e4", "REALSYNC_REDIS_URL": "redis://r:6379/0"}
	with := func(m map[string]string, k, v string) map[string]string {
		out := maps.Clone(m)
		if out == nil {
			out = map[string]string{}
		}
		out[k] = v
		return out
	}
	tests := []struct {
		name    string
		env     map[string]string
		args    []string
		want    string
		wantErr string
	}{
		{name: "DevelopmentDefault", want: "none"},
		{name: "ProductionDefault", env: prod, want: "party"},
		{name: "DevelopmentParty", env: map[string]string{consent: "party"}, want: "party"},
		{name: "DevelopmentFollow", env: map[string]string{consent: "follow"}, want: "follow"},
		{name: "ProductionFollow", env: with(prod, consent, "follow"), want: "follow"},
		{name: "ProductionNone", env: with(prod, consent, "none"), want: "none"},
		{name: "FlagWins", env: map[string]string{consent: "none"}, args: []string{"-party-consent", "party"}, want: "party"},
		{name: "Bad", env: map[string]string{consent: "friends"}, wantErr: consent + ": must be party, follow or none"},
		{name: "BadCase", env: with(prod, consent, "Follow"), wantErr: consent},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, ok := parseCase(t, tc.env, tc.args, tc.wantErr)
			if ok && c.PartyConsent != tc.want {
				t.Errorf("party consent %q, want %q", c.PartyConsent, tc.want)
			}
		})
	}
}
