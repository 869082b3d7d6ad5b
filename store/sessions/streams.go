package sessions

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

func (s *Sessions) capsStreams() bool { return s.cfg.StreamsPerUser > 0 }

// streamMember is l's member in its user's streams zset.
func streamMember(l sse.Lease) string { return l.Room + "/" + l.Stream }

// TakeStream records l among its user's open streams; reports whether it
// was not held before (a fresh lease, for DropStream to undo). Errors:
// rooms.ErrStreamLimit past the quota, rooms.ErrUnavailable. A no-op
// without the quota, and for the server's (an API key's) streams: a
// dedicated server may watch any number of rooms.
func (s *Sessions) TakeStream(ctx context.Context, l sse.Lease) (fresh bool, err error) {
	if !s.capsStreams() || l.Server {
		return false, nil
	}
	res, err := s.b.Runner.Run(ctx, streamTakeCall{key: s.StreamsKey(l.UserID), member: streamMember(l),
		limit: s.cfg.StreamsPerUser, ttlMs: s.cfg.TTL.Milliseconds()}).Result()
	if err != nil {
		return false, redisx.Wrap(err)
	}
	arr, _ := res.([]any)
	switch status, _ := arr[0].(string); status {
	case "OK":
		return arr[1] == "1", nil
	case "STREAM_LIMIT":
		return false, fmt.Errorf("%w (%d)", rooms.ErrStreamLimit, s.cfg.StreamsPerUser)
	default:
		return false, fmt.Errorf("store: unexpected user streams reply %v", arr)
	}
}

// DropStream removes l from its user's open streams, even when ctx is
// done. A lease that could not be removed lapses within the TTL.
func (s *Sessions) DropStream(ctx context.Context, l sse.Lease) error {
	if !s.capsStreams() || l.Server {
		return nil
	}
	return redisx.Wrap(s.b.Runner.Run(context.WithoutCancel(ctx), streamDropCall{key: s.StreamsKey(l.UserID), member: streamMember(l)}).Err())
}

// RenewStreams extends the leases ls hold in their users' stream sets:
// one script per user shard and redisx.RenewBatch leases, all sent in one
// pipeline (the users' keys lie in other slots than the rooms'). Returns
// the leases no longer held.
func (s *Sessions) RenewStreams(ctx context.Context, ls []sse.Lease) ([]sse.Lease, error) {
	if !s.capsStreams() || len(ls) == 0 {
		return nil, nil
	}
	ls = slices.DeleteFunc(slices.Clone(ls), func(l sse.Lease) bool { return l.Server }) // hold no place (see TakeStream)
	return redisx.RenewByUser(ctx, s.renewals(), ls, func(l sse.Lease) string { return l.UserID },
		func(_ int, batch []sse.Lease) redisx.Call {
			c := redisx.RenewCall{Sc: userStreamsRenew, TTLMs: s.cfg.TTL.Milliseconds()}
			for _, l := range batch {
				c.Keys = append(c.Keys, s.StreamsKey(l.UserID))
				c.Members = append(c.Members, streamMember(l))
			}
			return c
		})
}
