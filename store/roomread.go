package store

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/rooms"

	"github.com/realsync/realsync/store/internal/layout"
	"github.com/realsync/realsync/store/internal/redisx"
)

// roomRead is a room's hashes as queued in a transaction: the room (its
// roomFields), its players, its users (userId → playerId), who is
// connected and, when asked, its state. Reading them with plain commands in the transaction
// that runs a script costs Redis far less than building the same reply in
// Lua, where every field becomes an interned string twice.
type roomRead struct {
	room                  *redis.StringSliceCmd // roomFields (layout.RoomHash)
	players, users, state *redis.MapStringStringCmd
	conn                  *redis.StringSliceCmd
}

// queueRoomRead queues the reads of room id on p.
func (s *Store) queueRoomRead(ctx context.Context, p redis.Pipeliner, shard int, id string, withState bool) roomRead {
	k := s.keys.ReadKeys(shard, id)
	rr := roomRead{room: redisx.HMGet(ctx, p, k[0], layout.RoomHashFields()...), players: p.HGetAll(ctx, k[1]),
		users: p.HGetAll(ctx, k[2]), conn: p.HKeys(ctx, k[4])}
	if withState {
		rr.state = p.HGetAll(ctx, k[3])
	}
	return rr
}

// decodeRead builds the room; ErrRoomNotFound when its hash is gone. It
// remembers the room's place.
func (s *Store) decodeRead(id string, rr roomRead) (rooms.Room, rooms.State, error) {
	h := layout.RoomHashOf(rr.room)
	if h == nil {
		return rooms.Room{}, nil, rooms.ErrRoomNotFound
	}
	r, err := layout.DecodeRoom(id, h, rr.players.Val(), rr.users.Val(), rr.conn.Val())
	if err != nil {
		return rooms.Room{}, nil, err
	}
	s.places.put(id, place{mode: r.Mode, region: r.Region})
	state := rooms.State{}
	if rr.state != nil {
		for k, v := range rr.state.Val() {
			state[k] = json.RawMessage(v)
		}
	}
	return r, state, nil
}

// readRoom reads room id in one transaction; out of memory, where Redis
// refuses every command queued in a MULTI (reads too), with readRoomPlain.
func (s *Store) readRoom(ctx context.Context, shard int, id string, withState bool) (rooms.Room, rooms.State, error) {
	var rr roomRead
	_, err := s.client.TxPipelined(ctx, func(p redis.Pipeliner) error {
		rr = s.queueRoomRead(ctx, p, shard, id, withState)
		return nil
	})
	if redisx.OutOfMemory(err) {
		return s.readRoomPlain(ctx, shard, id, withState)
	}
	if err != nil {
		return rooms.Room{}, nil, redisx.Wrap(err)
	}
	return s.decodeRead(id, rr)
}

// readRoomPlain reads room id with a plain pipeline, which Redis serves
// out of memory, and its version once more after the rest. A pipeline is
// not atomic: a script (every room change is one, and bumps the version)
// may run between two of its reads. The same version before and after
// says none did, so the read is as consistent as the transaction's; else
// it is read once more, then unavailable (503). Only out of memory: the
// transaction costs Redis less than the version's second read.
func (s *Store) readRoomPlain(ctx context.Context, shard int, id string, withState bool) (rooms.Room, rooms.State, error) {
	for range 2 {
		var rr roomRead
		var ver *redis.StringCmd
		_, err := s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
			rr = s.queueRoomRead(ctx, p, shard, id, withState)
			ver = p.HGet(ctx, s.keys.Room(shard, id), "ver")
			return nil
		})
		if err != nil && err != redis.Nil {
			return rooms.Room{}, nil, redisx.Wrap(err)
		}
		r, state, err := s.decodeRead(id, rr)
		if err != nil {
			return r, state, err
		}
		if v, _ := ver.Int64(); v == r.Version {
			return r, state, nil
		}
	}
	return rooms.Room{}, nil, fmt.Errorf("%w: room %s changed while read, twice", rooms.ErrUnavailable, id)
}

// ran is a script run by runThenRead with the room read after it.
type ran struct {
	id   string
	cmd  *redis.Cmd
	read roomRead
}

// runThenRead runs call and reads room id (and its state, withState)
// right after it, in one MULTI/EXEC: the room as the script left it, in
// one round trip. A server that does not know the script (restart, SCRIPT
// FLUSH) gets it loaded and the transaction runs again; a transaction that
// did not run (redisx.NotSent: no connection, TRYAGAIN, EXECABORT) is sent
// once more, as Runner.Run sends a script run. A ctx already ended sends
// nothing: its error says so (redisx.NeverSent), as does a call given up
// while it waited in a batch's queue.
func (s *Store) runThenRead(ctx context.Context, call redisx.Call, shard int, id string, withState bool) (ran, error) {
	if err := ctx.Err(); err != nil {
		return ran{}, redisx.Wrap(redisx.GaveUp(err))
	}
	loaded, source, again := false, false, false
	for {
		r := ran{id: id}
		_, err := s.client.TxPipelined(ctx, func(p redis.Pipeliner) error {
			if source {
				r.cmd = s.runner.QueueSource(ctx, p, call)
			} else {
				r.cmd = s.runner.Queue(ctx, p, call)
			}
			r.read = s.queueRoomRead(ctx, p, shard, id, withState)
			return nil
		})
		if redisx.MissingCode(err) && !loaded {
			if err := s.runner.LoadCode(ctx, call); err != nil {
				return ran{}, redisx.Wrap(err)
			}
			loaded = true
			continue
		}
		if redisx.MissingCode(err) && !source {
			// loaded on the key's master as the layout says, and still
			// missing where the call went: a slot moving (ASK) or moved
			// (MOVED) to a master added since; EVAL brings its code
			source = true
			continue
		}
		if !again && redisx.NotSent(err) && redisx.NotSent(redisx.CmdErr(r.cmd, err)) && !redisx.Redialed(redisx.CmdErr(r.cmd, err)) && redisx.Again(ctx) {
			again = true
			continue
		}
		if err != nil && r.cmd.Err() == nil {
			return ran{}, redisx.Wrap(err)
		}
		return r, nil
	}
}
