package main

import (
	"os"
	"path/filepath"
	"testing"
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
