package listing

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/lobby"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/sse"

	"github.com/realsync/realsync/store/internal/layout"
	"github.com/realsync/realsync/store/internal/redisx"
)

var _ sse.LobbySource = (*Index)(nil)

// Joinable implements sse.LobbySource with a fill-order listing, always
// from the masters (not a browsing read): a stream reads it once
// subscribed, and a replica behind would list a room changed before that
// (locked, filled, deleted), whose notice went to nobody, so the client
// would keep it until the room's next change, perhaps for good.
func (s *Index) Joinable(ctx context.Context, mode, region string, limit int) ([]rooms.Room, error) {
	masters := *s
	masters.reads = nil
	res, err := masters.List(ctx, lobby.Query{Statuses: []rooms.Status{rooms.Waiting}, Joinable: true,
		Mode: mode, Region: region, Sort: lobby.Fill, Limit: limit})
	return res.Rooms, err
}

// Rooms implements sse.LobbySource with one pipelined read, always from
// the masters: it follows a change's notice, which a replica may not have
// applied yet, and a stale room sent then would stay until its next change.
func (s *Index) Rooms(ctx context.Context, ids []string) ([]*rooms.Room, error) {
	cmds := make([]*redis.MapStringStringCmd, len(ids))
	_, err := s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			shard, _ := layout.RoomShard(id, s.shards)
			cmds[i] = p.HGetAll(ctx, s.keys.Room(shard, id))
		}
		return nil
	})
	if err != nil {
		return nil, redisx.Wrap(err)
	}
	out := make([]*rooms.Room, len(ids))
	for i, c := range cmds {
		if len(c.Val()) == 0 {
			continue
		}
		r, err := layout.DecodeRoom(ids[i], layout.RoomHashFrom(c.Val()), nil, nil, nil)
		if err != nil {
			return nil, err
		}
		out[i] = &r
	}
	return out, nil
}
