package main

import (
	"flag"
	"strconv"
	"time"
)

// quotaSettings are the per-user room limits and the presence debounce
// (issue 13, item 2), parsed apart from the rest of the configuration.
type quotaSettings struct {
	PresenceDebounce time.Duration // REALSYNC_PRESENCE_DEBOUNCE, default 3s; 0 announces at once
	MaxRoomsOwned    int           // REALSYNC_MAX_ROOMS_OWNED, default 5; 0 no limit
	MaxRoomsJoined   int           // REALSYNC_MAX_ROOMS_JOINED, default 20; 0 no limit
	// MaxStreamsPerUser: REALSYNC_MAX_STREAMS_PER_USER, default 16; 0 no
	// limit. Event streams one user holds open at once, all rooms and the
	// lobby, on every instance (a new one past it is refused).
	MaxStreamsPerUser int
}

// quotaFlags declares the settings' flags on fs, with env's values as
// defaults; the returned function checks them after fs.Parse, reporting
// each bad value through bad.
func quotaFlags(fs *flag.FlagSet, env func(k, def string) string) func(bad func(name, msg string)) quotaSettings {
	var debounce, owned, joined, streams string
	fs.StringVar(&debounce, "presence-debounce", env("REALSYNC_PRESENCE_DEBOUNCE", "3s"), "delay of player_disconnected, cancelled by a new stream within it, 0 at once (REALSYNC_PRESENCE_DEBOUNCE)")
	fs.StringVar(&owned, "max-rooms-owned", env("REALSYNC_MAX_ROOMS_OWNED", "5"), "rooms one user may own at once, 0 no limit (REALSYNC_MAX_ROOMS_OWNED)")
	fs.StringVar(&joined, "max-rooms-joined", env("REALSYNC_MAX_ROOMS_JOINED", "20"), "rooms one user may be in at once, 0 no limit (REALSYNC_MAX_ROOMS_JOINED)")
	fs.StringVar(&streams, "max-streams-per-user", env("REALSYNC_MAX_STREAMS_PER_USER", "16"), "event streams one user may hold open at once, all rooms and the lobby, 0 no limit (REALSYNC_MAX_STREAMS_PER_USER)")
	return func(bad func(name, msg string)) quotaSettings {
		var q quotaSettings
		var err error
		if q.PresenceDebounce, err = time.ParseDuration(debounce); err != nil || q.PresenceDebounce < 0 || q.PresenceDebounce > time.Minute {
			bad("REALSYNC_PRESENCE_DEBOUNCE", "must be a duration of at most 1m such as 3s, or 0")
		}
		for _, n := range []struct {
			name, in string
			out      *int
		}{{"REALSYNC_MAX_ROOMS_OWNED", owned, &q.MaxRoomsOwned}, {"REALSYNC_MAX_ROOMS_JOINED", joined, &q.MaxRoomsJoined},
			{"REALSYNC_MAX_STREAMS_PER_USER", streams, &q.MaxStreamsPerUser}} {
			if *n.out, err = strconv.Atoi(n.in); err != nil || *n.out < 0 || *n.out > 10000 {
				bad(n.name, "must be an integer 0..10000 (0: no limit)")
			}
		}
		return q
	}
}
