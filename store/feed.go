package store

import (
	"github.com/realsync/realsync/sse"

	"github.com/realsync/realsync/store/feed"
)

// Feed returns an instance's live subscription to the rooms', lobby's,
// users' and status channels (store/feed), handing what it receives to
// sink. A connection found silent and reopened counts as
// Metrics.RedisError("pubsub_silent").
func (s *Store) Feed(sink sse.Sink) sse.Feed { return feed.New(s.feedConfig(), sink) }

// silentOp counts a feed connection found silent and reopened, as a Redis
// failure (Metrics.RedisError).
const silentOp = "pubsub_silent"

// feedConfig is what the store's feeds subscribe with.
func (s *Store) feedConfig() feed.Config {
	return feed.Config{Client: s.client, Sharded: s.pubcmd == "SPUBLISH", Keys: s.keys, Shards: s.shards,
		UserChannel:   func(uid string) string { return s.ulog.KeysOf(uid).Channel },
		StatusChannel: s.sess.StatusChannel,
		Silent:        func() { s.metrics.RedisError(silentOp) }}
}
