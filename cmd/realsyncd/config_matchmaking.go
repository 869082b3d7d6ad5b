package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/realsync/realsync/internal/metrics"
	"github.com/realsync/realsync/matchmaking"
	"github.com/realsync/realsync/players"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/store"
	"github.com/realsync/realsync/store/tickets"
)

// matchSettings are the matchmaking rules (issue 17), parsed apart
// from the rest of the configuration.
type matchSettings struct {
	// MatchmakingFile: REALSYNC_MATCHMAKING_FILE, the rules per mode
	// (matchmaking.ParseRules, YAML or JSON); unset: every mode gets
	// matchmaking.Default().
	MatchmakingFile  string
	MatchmakingRules matchmaking.RuleSet
	// MatchCommit: REALSYNC_MATCH_COMMIT_REPLICAS (default 1, 0..5) and
	// REALSYNC_MATCH_COMMIT_WAIT (default 500ms, 10ms..2s: a pass waits
	// for its matches' completions), the replicas of a Cluster master that
	// acknowledge a match's commit before its users are told, and for how
	// long they are waited for; its Hold is tickets.DefaultDurability's
	// (tickets.Durability).
	MatchCommit tickets.Durability
	// PartyConsent: REALSYNC_PARTY_CONSENT, how a user consents to be
	// named in a ticket's party: "party" (joined its leader's party, PUT
	// /v1/me/party), "follow" (follows its leader) or "none" (any user may
	// be named); default party in production, none in development.
	PartyConsent string
}

// matchmakingFlags declares the settings' flags on fs, with env's values
// as defaults; the returned function checks them after fs.Parse
// (production: REALSYNC_ENV's, for the defaults that depend on it).
func matchmakingFlags(fs *flag.FlagSet, env func(k, def string) string) func(production bool, bad func(name, msg string)) matchSettings {
	var file, replicas, wait, consent string
	fs.StringVar(&file, "matchmaking-file", env("REALSYNC_MATCHMAKING_FILE", ""), "YAML or JSON file of matchmaking rules per mode (teams, rating window, regions, attributes, ticket TTL, backfill); unset: every mode matches 2 players (REALSYNC_MATCHMAKING_FILE)")
	d := tickets.DefaultDurability
	fs.StringVar(&replicas, "match-commit-replicas", env("REALSYNC_MATCH_COMMIT_REPLICAS", strconv.Itoa(d.Replicas)), "replicas of a Redis Cluster master that must have a match's commit before its users are told, 0 not waited for (REALSYNC_MATCH_COMMIT_REPLICAS)")
	fs.StringVar(&wait, "match-commit-wait", env("REALSYNC_MATCH_COMMIT_WAIT", d.Wait.String()), "how long a match's commit waits for those replicas; short of them, its users are told by a repair (REALSYNC_MATCH_COMMIT_WAIT)")
	fs.StringVar(&consent, "party-consent", env("REALSYNC_PARTY_CONSENT", ""), "party: a ticket may name a user in its party only while the user is in its leader's party (PUT /v1/me/party); follow: while the user follows its leader; none: any user; default party in production, none in development (REALSYNC_PARTY_CONSENT)")
	return func(production bool, bad func(name, msg string)) matchSettings {
		s := matchSettings{MatchmakingFile: file, MatchCommit: tickets.DefaultDurability}
		switch consent {
		case "":
			s.PartyConsent = "none"
			if production {
				s.PartyConsent = "party"
			}
		case "party", "follow", "none":
			s.PartyConsent = consent
		default:
			bad("REALSYNC_PARTY_CONSENT", "must be party, follow or none")
		}
		var err error
		if s.MatchCommit.Replicas, err = strconv.Atoi(replicas); err != nil || s.MatchCommit.Replicas < 0 || s.MatchCommit.Replicas > 5 {
			bad("REALSYNC_MATCH_COMMIT_REPLICAS", "must be an integer 0..5 (0: not waited for)")
		}
		if s.MatchCommit.Wait, err = time.ParseDuration(wait); err != nil || s.MatchCommit.Wait < 10*time.Millisecond || s.MatchCommit.Wait > 2*time.Second {
			bad("REALSYNC_MATCH_COMMIT_WAIT", "must be a duration from 10ms to 2s such as 500ms")
		}
		if file != "" {
			if s.MatchmakingRules, err = matchmaking.LoadRules(file); err != nil {
				bad("REALSYNC_MATCHMAKING_FILE", err.Error())
			}
		}
		return s
	}
}

// checkRuleModes refuses rules for a mode REALSYNC_MODES does not allow:
// a ticket of that mode is refused (422), so they could never apply (most
// likely a typo in either).
func (c Config) checkRuleModes(bad func(name, msg string)) {
	if len(c.Modes) == 0 {
		return
	}
	var unused []string
	for m := range c.MatchmakingRules.Modes {
		if !slices.Contains(c.Modes, m) {
			unused = append(unused, m)
		}
	}
	if len(unused) > 0 {
		slices.Sort(unused)
		bad("REALSYNC_MATCHMAKING_FILE", fmt.Sprintf("rules for mode(s) %s that REALSYNC_MODES (%s) does not allow: their tickets are refused, so the rules would never apply; add the mode to REALSYNC_MODES or remove its rules",
			strings.Join(unused, ", "), strings.Join(c.Modes, ",")))
	}
}

// matchmakingConfig is the tickets' configuration on st; it bounds m's
// mode labels to the modes configured (labelModes).
func (c Config) matchmakingConfig(st *store.Store, m *metrics.Metrics) matchmaking.Config {
	m.MatchmakingModes(c.labelModes())
	mc := matchmaking.Config{Queue: tickets.New(st.Base(), st.UserLogs(), st.Renewals()).WithDurability(c.MatchCommit).WithModes(c.Modes).
		WithFollowing(st.Sessions().FollowingKey), Rules: c.MatchmakingRules,
		Names: rooms.Names{Modes: c.Modes, Regions: c.Regions}, Observer: m, Quotas: st, Inboxes: st.Sessions()}
	switch c.PartyConsent {
	case "party":
		mc.Consent = players.NewParties(st.Sessions())
	case "follow":
		// a member who consents follows the leader: never a stranger's
		// match_found, no inbox to check
		mc.Consent, mc.Inboxes = players.FollowConsent{Store: st.Sessions()}, nil
	}
	return mc
}

// runMatcher runs the matcher until ctx ends, as holder instance.
func runMatcher(ctx context.Context, mc matchmaking.Config, st *store.Store, holder string, log *slog.Logger) {
	notifier, _ := mc.Queue.(matchmaking.Notifier)
	matchmaking.NewMatcher(matchmaking.MatcherConfig{Config: mc, Rooms: st, Notifier: notifier,
		Logger: log, Holder: holder}).Run(ctx)
}

// labelModes are the modes the matchmaking metrics label by name:
// REALSYNC_MODES, every mode a ticket may have, else the modes of
// REALSYNC_MATCHMAKING_FILE; a mode a client makes up is "other".
func (c Config) labelModes() []string {
	if len(c.Modes) > 0 {
		return c.Modes
	}
	return slices.Sorted(maps.Keys(c.MatchmakingRules.Modes))
}
