package main

import (
	"flag"
	"fmt"
	"strconv"
	"time"

	"github.com/realsync/realsync/players"
	"github.com/realsync/realsync/store/userlog"
)

// playerSettings are the personal streams' settings (issue 16), parsed
// apart from the rest of the configuration.
type playerSettings struct {
	// SessionPolicy: REALSYNC_SESSION_POLICY, default replace: what a new
	// personal stream session does to an open one of the same user and
	// platform (replace, reject-new, allow-multiple).
	SessionPolicy players.Policy
	// OfflineTTL: REALSYNC_OFFLINE_TTL, default 7d: an event of a user's
	// personal log (the offline inbox of every platform) expires this long
	// after it was sent, the log this long after its last event or the
	// user's last stream open.
	OfflineTTL time.Duration
	// OfflineMax: REALSYNC_OFFLINE_MAX, default 1000: the most events a
	// user's log holds (the oldest dropped, counted).
	OfflineMax int
}

// playerFlags declares the settings' flags on fs, with env's values as
// defaults; the returned function checks them after fs.Parse, reporting
// each bad value through bad.
func playerFlags(fs *flag.FlagSet, env func(k, def string) string) func(bad func(name, msg string)) playerSettings {
	var policy string
	fs.StringVar(&policy, "session-policy", env("REALSYNC_SESSION_POLICY", string(players.PolicyReplace)),
		"a new personal stream session of a user and platform: replace the open one, reject-new, or allow-multiple (REALSYNC_SESSION_POLICY)")
	var ttl, maxLen string
	fs.StringVar(&ttl, "offline-ttl", env("REALSYNC_OFFLINE_TTL", "168h"),
		"how long an event of a user's personal log, the offline inbox of every platform, is kept after it was sent (REALSYNC_OFFLINE_TTL; 1m..2160h)")
	fs.StringVar(&maxLen, "offline-max", env("REALSYNC_OFFLINE_MAX", strconv.Itoa(userlog.DefaultMaxLen)),
		"the most events a user's personal log holds, the oldest dropped past it (REALSYNC_OFFLINE_MAX; 200..100000)")
	return func(bad func(name, msg string)) playerSettings {
		var p playerSettings
		var err error
		if p.SessionPolicy, err = players.ParsePolicy(policy); err != nil {
			bad("REALSYNC_SESSION_POLICY", "must be replace, reject-new or allow-multiple")
		}
		if d, err := time.ParseDuration(ttl); err != nil || (userlog.Config{TTL: d}).Check() != nil || d == 0 {
			bad("REALSYNC_OFFLINE_TTL", "must be a duration from 1m to 2160h (90 days), e.g. 168h")
		} else {
			p.OfflineTTL = d
		}
		if n, err := strconv.Atoi(maxLen); err != nil || (userlog.Config{MaxLen: n}).Check() != nil || n == 0 {
			bad("REALSYNC_OFFLINE_MAX", fmt.Sprintf("must be an integer from %d to 100000", userlog.MinMaxLen))
		} else {
			p.OfflineMax = n
		}
		return p
	}
}
