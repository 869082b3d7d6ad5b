package main

import (
	"net"
	"os"
	"runtime/debug"
	"testing"

	"github.com/realsync/realsync/matchmaking"
)

func TestAdminAndAdvertiseConfig(t *testing.T) {
	t.Parallel()
	const good = "0123456789abcdef0123456789abcdef"
	tests := []struct {
		name string
		env  map[string]string
		args []string
		bad  string // variable named in the error; "" none
	}{
		{name: "Unset", env: map[string]string{}},
		{name: "AdminToken32", env: map[string]string{"REALSYNC_ADMIN_TOKEN": good}},
		{name: "AdminTokenFlag", args: []string{"-admin-token", good}},
		{name: "AdminToken31", env: map[string]string{"REALSYNC_ADMIN_TOKEN": good[:31]}, bad: "REALSYNC_ADMIN_TOKEN"},
		{name: "AdminTokenSpace", env: map[string]string{"REALSYNC_ADMIN_TOKEN": good + " x"}, bad: "REALSYNC_ADMIN_TOKEN"},
		{name: "AdminTokenNonASCII", env: map[string]string{"REALSYNC_ADMIN_TOKEN": good + "é"}, bad: "REALSYNC_ADMIN_TOKEN"},
		{name: "Advertise", env: map[string]string{"REALSYNC_ADVERTISE_ADDR": "rs-1.internal:8080"}},
		{name: "AdvertiseIPv6", env: map[string]string{"REALSYNC_ADVERTISE_ADDR": "[fd00::1]:8080"}},
		{name: "AdvertiseFlag", args: []string{"-advertise-addr", "10.0.0.1:80"}},
		{name: "AdvertiseNoPort", env: map[string]string{"REALSYNC_ADVERTISE_ADDR": "rs-1"}, bad: "REALSYNC_ADVERTISE_ADDR"},
		{name: "AdvertiseNoHost", env: map[string]string{"REALSYNC_ADVERTISE_ADDR": ":8080"}, bad: "REALSYNC_ADVERTISE_ADDR"},
		{name: "AdvertisePortZero", env: map[string]string{"REALSYNC_ADVERTISE_ADDR": "rs-1:0"}, bad: "REALSYNC_ADVERTISE_ADDR"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var secrets []string
			if tok := tc.env["REALSYNC_ADMIN_TOKEN"]; tok != "" {
				secrets = append(secrets, tok[:min(16, len(tok))])
			}
			c, ok := parseCase(t, tc.env, tc.args, tc.bad, secrets...)
			if tok := tc.env["REALSYNC_ADMIN_TOKEN"]; ok && tok != "" && c.AdminToken != tok {
				t.Fatalf("admin token %q", c.AdminToken)
			}
		})
	}
}

func TestAdvertiseAddr(t *testing.T) {
	t.Parallel()
	host, _ := os.Hostname()
	tests := []struct {
		name, configured string
		listener         net.Addr
		want             string
	}{
		{"Configured", "rs-1:9000", &net.TCPAddr{IP: net.IPv4zero, Port: 8080}, "rs-1:9000"},
		{"Loopback", "", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}, "127.0.0.1:8080"},
		{"AllIPv4", "", &net.TCPAddr{IP: net.IPv4zero, Port: 8080}, net.JoinHostPort(host, "8080")},
		{"AllIPv6", "", &net.TCPAddr{IP: net.IPv6unspecified, Port: 8081}, net.JoinHostPort(host, "8081")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := advertiseAddr(tc.configured, tc.listener); got != tc.want {
				t.Fatalf("advertiseAddr = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestVersionOf(t *testing.T) {
	t.Parallel()
	vcs := func(kv ...string) []debug.BuildSetting {
		var out []debug.BuildSetting
		for i := 0; i+1 < len(kv); i += 2 {
			out = append(out, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return out
	}
	rev := "4a8a7512c0de99aabbccddeeff00112233445566"
	tests := []struct {
		name     string
		version  string
		settings []debug.BuildSetting
		want     string
	}{
		{"ModuleVersion", "v1.2.3", vcs("vcs.revision", rev), "v1.2.3"},
		{"PseudoVersion", "v0.0.0-20261123101254-4a8a7512c0de+dirty", nil, "v0.0.0-20261123101254-4a8a7512c0de+dirty"},
		{"Revision", "(devel)", vcs("vcs.revision", rev, "vcs.modified", "false"), "4a8a7512c0de"},
		{"DirtyRevision", "(devel)", vcs("vcs.revision", rev, "vcs.modified", "true"), "4a8a7512c0de-dirty"},
		{"Nothing", "(devel)", nil, "devel"},
		{"Empty", "", nil, "devel"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			bi := &debug.BuildInfo{Main: debug.Module{Version: tc.version}, Settings: tc.settings}
			if got := versionOf(bi); got != tc.want {
				t.Fatalf("versionOf = %q, want %q", got, tc.want)
			}
		})
	}
}

// The settings digest tells apart what makes instances check or match
// tickets differently, and nothing else: a rule the file leaves out digests
// as the default it takes.
func TestSettingsDigest(t *testing.T) {
	rules := func(file string) matchmaking.RuleSet {
		t.Helper()
		rs, err := matchmaking.ParseRules([]byte(file))
		if err != nil {
			t.Fatal(err)
		}
		return rs
	}
	base := Config{Modes: []string{"duel", "battle"}}
	base.PartyConsent = "party"
	base.MatchmakingRules = rules("modes:\n  duel:\n    minPlayers: 2\n")
	with := func(f func(c *Config)) Config {
		c := base
		f(&c)
		return c
	}
	same := []struct {
		name string
		cfg  Config
	}{
		{"DefaultsWritten", with(func(c *Config) {
			c.MatchmakingRules = rules("modes:\n  duel:\n    minPlayers: 2\n    maxPlayers: 2\n    ticketTTL: 5m\n    window: {start: 100, step: 100, every: 5s, max: 1000}\n")
		})},
		{"OtherAddr", with(func(c *Config) { c.Addr = ":9000" })},
		// a reviewer's finds: the same settings reported apart
		{"NoFile", with(func(c *Config) { c.MatchmakingRules = matchmaking.RuleSet{} })},
		{"ModesInAnotherOrder", with(func(c *Config) { c.Modes = []string{"battle", "duel"} })},
		{"ModeOfDefaults", with(func(c *Config) { c.MatchmakingRules = rules("modes:\n  battle: {}\n") })},
	}
	other := []struct {
		name string
		cfg  Config
	}{
		{"ExactWindow", with(func(c *Config) { c.MatchmakingRules = rules("modes:\n  duel:\n    window: {start: 0}\n") })},
		{"OtherSize", with(func(c *Config) { c.MatchmakingRules = rules("modes:\n  duel:\n    minPlayers: 3\n") })},
		{"Modes", with(func(c *Config) { c.Modes = []string{"duel", "ranked"} })},
		{"ModesFewer", with(func(c *Config) { c.Modes = []string{"duel"} })},
		{"Regions", with(func(c *Config) { c.Regions = []string{"eu"} })},
		{"Consent", with(func(c *Config) { c.PartyConsent = "none" })},
	}
	d := settingsDigest(base)
	if len(d) != 12 {
		t.Fatalf("digest %q", d)
	}
	for _, tc := range same {
		if got := settingsDigest(tc.cfg); got != d {
			t.Errorf("%s: %s, want %s", tc.name, got, d)
		}
	}
	for _, tc := range other {
		if got := settingsDigest(tc.cfg); got == d {
			t.Errorf("%s: the same digest %s", tc.name, got)
		}
	}
}
