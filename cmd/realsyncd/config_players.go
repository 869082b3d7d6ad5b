package main

import (
	"flag"

	"github.com/realsync/realsync/players"
)

// playerSettings are the personal streams' settings (issue 16), parsed
// apart from the rest of the configuration.
type playerSettings struct {
	// SessionPolicy: REALSYNC_SESSION_POLICY, default replace: what a new
	// personal stream session does to an open one of the same user and
	// platform (replace, reject-new, allow-multiple).
	SessionPolicy players.Policy
}

// playerFlags declares the settings' flags on fs, with env's values as
// defaults; the returned function checks them after fs.Parse, reporting
// each bad value through bad.
func playerFlags(fs *flag.FlagSet, env func(k, def string) string) func(bad func(name, msg string)) playerSettings {
	var policy string
	fs.StringVar(&policy, "session-policy", env("REALSYNC_SESSION_POLICY", string(players.PolicyReplace)),
		"a new personal stream session of a user and platform: replace the open one, reject-new, or allow-multiple (REALSYNC_SESSION_POLICY)")
	return func(bad func(name, msg string)) playerSettings {
		var p playerSettings
		var err error
		if p.SessionPolicy, err = players.ParsePolicy(policy); err != nil {
			bad("REALSYNC_SESSION_POLICY", "must be replace, reject-new or allow-multiple")
		}
		return p
	}
}
