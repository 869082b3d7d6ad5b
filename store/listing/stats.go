package listing

import (
	"context"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/lobby"
	"github.com/realsync/realsync/rooms"

	"github.com/realsync/realsync/store/internal/layout"
	"github.com/realsync/realsync/store/internal/redisx"
)

// Stats implements lobby.Index: the sum of every shard's stats hash, which
// the scripts keep with each change (store/internal/roomlua/lua/prelude.lua,
// restat). A browsing read: from replicas when configured (ReplicaReads).
func (s *Index) Stats(ctx context.Context) (lobby.Stats, error) {
	cmds := make([]*redis.MapStringStringCmd, s.shards)
	err := s.browse(ctx, func(c redis.UniversalClient) error {
		_, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
			for shard := range s.shards {
				cmds[shard] = p.HGetAll(ctx, s.keys.Stats(shard))
			}
			return nil
		})
		return err
	})
	if err != nil {
		return lobby.Stats{}, redisx.Wrap(err)
	}
	st := lobby.Stats{Rooms: map[rooms.Status]int{rooms.Waiting: 0, rooms.Playing: 0, rooms.Finished: 0},
		Modes: map[string]map[rooms.Status]int{}, Regions: map[string]map[rooms.Status]int{}}
	for _, c := range cmds {
		for field, v := range c.Val() {
			addStat(&st, field, layout.Atoi(v))
		}
	}
	return st, nil
}

// addStat adds one stats field: "players", "rooms:<st>", "m:<mode>:<st>",
// "r:<region>:<st>".
func addStat(st *lobby.Stats, field string, n int) {
	parts := strings.Split(field, ":")
	switch {
	case field == "players":
		st.Players += n
	case len(parts) == 2 && parts[0] == "rooms":
		st.Rooms[rooms.Status(parts[1])] += n
	case len(parts) == 3 && parts[2] != string(rooms.Finished):
		by := st.Modes
		if parts[0] == "r" {
			by = st.Regions
		}
		if by[parts[1]] == nil {
			by[parts[1]] = map[rooms.Status]int{rooms.Waiting: 0, rooms.Playing: 0}
		}
		by[parts[1]][rooms.Status(parts[2])] += n
	}
}
