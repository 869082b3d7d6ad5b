package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"net"
	"os"
	"reflect"
	"runtime/debug"
	"slices"
	"strconv"
	"time"

	"github.com/realsync/realsync/internal/fleet"
	"github.com/realsync/realsync/matchmaking"
	"github.com/realsync/realsync/sse"
	"github.com/realsync/realsync/store"
)

// joinFleet registers this instance (the hub's id) in the instance
// registry, renewed every third of the presence TTL (the registration's
// lifetime) until Leave.
func joinFleet(ctx context.Context, cfg Config, st *store.Store, hub *sse.Hub, ln net.Listener, log *slog.Logger) (*fleet.Member, error) {
	self := fleet.Instance{ID: hub.Instance(), Addr: advertiseAddr(cfg.AdvertiseAddr, ln.Addr()),
		Version: buildVersion(), StartedAt: time.Now(), Settings: settingsDigest(cfg)}
	m, err := fleet.Join(ctx, fleet.Config{Registry: st.Fleet(), Self: self, Streams: hub.Streams,
		Every: cfg.PresenceTTL / 3, Log: log})
	if err != nil {
		return nil, err
	}
	log.Info("registered", "instance", self.ID, "addr", self.Addr, "version", self.Version,
		"settings", self.Settings, "admin_routes", cfg.AdminToken != "")
	return m, nil
}

// settingsDigest is the digest of the settings every instance must share
// (fleet.Instance.Settings): 12 hex digits of the SHA-256 of their JSON,
// the matchmaking rules as normalized, without the modes whose rules are
// the default's (a rule the file leaves out and the default it takes,
// and a mode named with every default and one not named, digest alike),
// the modes and regions sorted. A tester ran one instance on an older
// rules file: it held a mode's lease and matched every ticket of it by
// the old rules, and nothing told.
func settingsDigest(cfg Config) string {
	rules := map[string]matchmaking.Rules{}
	for m, r := range cfg.MatchmakingRules.Modes {
		if !reflect.DeepEqual(r, matchmaking.Default()) {
			rules[m] = r
		}
	}
	b, err := json.Marshal(struct {
		Rules          map[string]matchmaking.Rules
		Modes, Regions []string
		PartyConsent   string
	}{rules, slices.Sorted(slices.Values(cfg.Modes)), slices.Sorted(slices.Values(cfg.Regions)), cfg.PartyConsent})
	if err != nil { // a rule set is plain data
		panic(err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:6])
}

// advertiseAddr is the configured address, else the listener's, with this
// host's name in place of an unspecified IP (":8080" listens on every
// interface; "<hostname>:8080" is where to reach it).
func advertiseAddr(configured string, l net.Addr) string {
	if configured != "" {
		return configured
	}
	tcp, ok := l.(*net.TCPAddr)
	if !ok || !tcp.IP.IsUnspecified() {
		return l.String()
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	return net.JoinHostPort(host, strconv.Itoa(tcp.Port))
}

// version, when set at link time (go build -ldflags "-X main.version=v1.2.0"),
// is the version the instance list and realsync_build_info report.
var version string

// buildVersion is the version set at link time, else the main module's
// version when the go command set one (go install …@v1.2.3; since Go 1.24
// go build in a checkout also stamps a tag or pseudo-version), else the VCS
// revision (12 characters, "-dirty" when the tree had changes), else
// "devel" (built with -buildvcs=false).
func buildVersion() string {
	if version != "" {
		return version
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	return versionOf(bi)
}

func versionOf(bi *debug.BuildInfo) string {
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, dirty string
	for _, s := range bi.Settings {
		switch {
		case s.Key == "vcs.revision":
			rev = s.Value
		case s.Key == "vcs.modified" && s.Value == "true":
			dirty = "-dirty"
		}
	}
	if rev == "" {
		return "devel"
	}
	return rev[:min(12, len(rev))] + dirty
}
