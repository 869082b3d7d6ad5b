package store

import (
	"context"
	"fmt"
	"slices"

	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/sse"

	"github.com/realsync/realsync/store/internal/redisx"
)

// A user's streams span rooms, shards and instances, so no room script
// sees them all. Each user with an open stream has a streams zset in their
// own slot (keys.userStreams): every stream, of a room or of the lobby, is
// a member "<roomId>/<stream>" ("/<stream>" for the lobby) scored by its
// lease expiry. A stream's open records it there first (userstreams_open,
// atomic, so N concurrent opens of one user on any number of instances
// never hold more than Quotas.StreamsPerUser), and the room's stream_open
// runs only after, so a refused stream changes nothing in the room (no
// player_connected); a room open that fails then drops the lease again.
// The hub renews these leases with the room presence leases, and a stream's
// close drops its own.
//
// Past the limit the new stream is refused; the oldest is not closed for
// it. Closing the oldest would need a control channel from the instance
// that opens to the one that holds the old stream, and a refusal needs
// nothing but the one script: it holds on a Cluster and across instances
// as it stands. What it costs: a client that lost its connections without
// their ends reaching the server (a dead network, a killed instance) is
// locked out for at most the lease TTL (REALSYNC_PRESENCE_TTL), since the
// leases of streams nobody renews lapse by then and every open purges the
// lapsed ones first. The key expires with its longest lease, so nothing
// outlives its streams.

func (s *Store) capsStreams() bool { return s.quotas.StreamsPerUser > 0 }

// userStreamsKey is the streams zset of l's user.
func (s *Store) userStreamsKey(l sse.Lease) string {
	return s.keys.userStreams(redisx.UserShard(l.UserID, s.shards), l.UserID)
}

// userStreamMember is l's member in its user's streams zset.
func userStreamMember(l sse.Lease) string { return l.Room + "/" + l.Stream }

// takeStream records l among its user's open streams; reports whether it
// was not held before (a fresh lease, for dropStream to undo). Errors:
// rooms.ErrStreamLimit past the quota, rooms.ErrUnavailable. A no-op
// without the quota, and for the server's (an API key's) streams: a
// dedicated server may watch any number of rooms.
func (s *Store) takeStream(ctx context.Context, l sse.Lease) (fresh bool, err error) {
	if !s.capsStreams() || l.Server {
		return false, nil
	}
	res, err := s.runner.Run(ctx, streamTakeCall{key: s.userStreamsKey(l), member: userStreamMember(l),
		limit: s.quotas.StreamsPerUser, ttlMs: s.presenceTTL.Milliseconds()}).Result()
	if err != nil {
		return false, redisx.Wrap(err)
	}
	arr, _ := res.([]any)
	switch status, _ := arr[0].(string); status {
	case "OK":
		return arr[1] == "1", nil
	case "STREAM_LIMIT":
		return false, fmt.Errorf("%w (%d)", rooms.ErrStreamLimit, s.quotas.StreamsPerUser)
	default:
		return false, fmt.Errorf("store: unexpected user streams reply %v", arr)
	}
}

// dropStream removes l from its user's open streams, even when ctx is
// done. A lease that could not be removed lapses within the TTL.
func (s *Store) dropStream(ctx context.Context, l sse.Lease) error {
	if !s.capsStreams() || l.Server {
		return nil
	}
	return redisx.Wrap(s.client.ZRem(context.WithoutCancel(ctx), s.userStreamsKey(l), userStreamMember(l)).Err())
}

// OpenLobby implements sse.Source: the lobby stream's lease in its user's
// open streams (the lobby has no presence of its own).
func (s *Store) OpenLobby(ctx context.Context, l sse.Lease) error {
	_, err := s.takeStream(ctx, l)
	return err
}

// CloseLobby implements sse.Source.
func (s *Store) CloseLobby(ctx context.Context, l sse.Lease) error {
	return s.dropStream(ctx, l)
}

// renewUserStreams extends the leases ls hold in their users' stream sets:
// one script per user shard, all sent in one pipeline (the users' keys
// lie in other slots than the rooms'). Returns the leases no longer held.
func (s *Store) renewUserStreams(ctx context.Context, ls []sse.Lease) ([]sse.Lease, error) {
	if !s.capsStreams() || len(ls) == 0 {
		return nil, nil
	}
	ls = slices.DeleteFunc(slices.Clone(ls), func(l sse.Lease) bool { return l.Server }) // hold no place (see takeStream)
	return renewByUser(ctx, s, ls, func(l sse.Lease) string { return l.UserID },
		func(_ int, batch []sse.Lease) redisx.Call {
			c := renewCall{sc: userStreamsRenew, ttlMs: s.presenceTTL.Milliseconds()}
			for _, l := range batch {
				c.keys = append(c.keys, s.userStreamsKey(l))
				c.members = append(c.members, userStreamMember(l))
			}
			return c
		})
}
