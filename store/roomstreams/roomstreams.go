// Package roomstreams is the store's side of room event streams
// (sse.Source): a stream's presence lease in its room (stream_open.lua,
// stream_close.lua and presence_renew.lua, of the rooms' Lua library,
// store/internal/roomlua) and in its user's open streams
// (store/sessions), the replay or snapshot it opens with, and the room
// logs and versions the hub reads.
package roomstreams

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/sse"

	"github.com/realsync/realsync/store/internal/layout"
	"github.com/realsync/realsync/store/internal/redisx"
	"github.com/realsync/realsync/store/internal/roomlua"
	"github.com/realsync/realsync/store/sessions"
)

// Config is what room streams are made of: the store's clients and
// layout, the rooms' scripts' scope, the users' open streams, the
// presence timings, and the store's read of a room right after a script.
type Config struct {
	Client   redis.UniversalClient // the logs and versions read
	Runner   *redisx.Runner        // stream_open.lua and stream_close.lua
	Renewals *redisx.Runner        // presence_renew.lua, on connections of its own
	Keys     layout.Keys
	Shards   int
	Env      roomlua.Env
	Sessions *sessions.Sessions
	// TTL is a lease's life unless renewed; Grace how long a player whose
	// last stream closed stays before it is marked disconnected; Debounce
	// how long its player_disconnected waits for a new stream.
	TTL, Grace, Debounce time.Duration
	// RunThenRead runs call and reads room id of shard with its state in
	// the same transaction (the store's), returning the call's reply and
	// the room's read, decoded on demand.
	RunThenRead func(ctx context.Context, call redisx.Call, shard int, id string) (*redis.Cmd, func() (rooms.Room, rooms.State, error), error)
}

// Streams implements sse.Source. Safe for concurrent use.
type Streams struct{ cfg Config }

// New is the room streams of cfg.
func New(cfg Config) *Streams { return &Streams{cfg} }

var _ sse.Source = (*Streams)(nil)

// OpenStream implements sse.Source: the lease in the user's open streams
// first (store/sessions: rooms.ErrStreamLimit past the quota, and the room
// untouched), then one script (membership, lease, and the replay, or the
// version of a snapshot) and, when it reads, the room and state in the
// same transaction. A fresh user lease is dropped again when the room
// refuses or fails. Its calls wait for Redis up to redisx.OpeningBound.
func (s *Streams) OpenStream(ctx context.Context, l sse.Lease, read sse.Read, c sse.Cursor, limit int) (sse.Opening, error) {
	ctx = redisx.Opening(ctx)
	shard, ok := layout.RoomShard(l.Room, s.cfg.Shards)
	if !ok {
		return sse.Opening{}, rooms.ErrRoomNotFound
	}
	fresh, err := s.cfg.Sessions.TakeStream(ctx, l)
	if err != nil {
		return sse.Opening{}, err
	}
	o, err := s.openRoomStream(ctx, shard, l, read, c, limit)
	if err != nil && fresh {
		s.cfg.Sessions.DropStream(ctx, l)
	}
	return o, err
}

// openRoomStream runs stream_open for l in the room of shard.
func (s *Streams) openRoomStream(ctx context.Context, shard int, l sse.Lease, read sse.Read, c sse.Cursor, limit int) (sse.Opening, error) {
	mode := "none"
	if read == sse.ReadFrom {
		mode = "snapshot"
		if c.Set {
			mode = "after"
		}
	}
	uid := l.UserID
	if l.Server {
		uid = "" // the server: see store/internal/roomlua/lua/stream_open.lua
	} else if uid == "" {
		return sse.Opening{}, errors.New("store: a stream without a userId")
	}
	call := roomlua.StreamOpenCall{Scope: s.cfg.Env.Scope(shard, l.Room), User: uid, Stream: l.Stream,
		TTLMs: s.cfg.TTL.Milliseconds(), Read: mode, Cursor: c, Limit: limit}
	var cmd *redis.Cmd
	var readRoom func() (rooms.Room, rooms.State, error)
	var err error
	if mode == "none" {
		cmd = s.cfg.Runner.Run(ctx, call)
	} else if cmd, readRoom, err = s.cfg.RunThenRead(ctx, call, shard, l.Room); err != nil {
		return sse.Opening{}, err
	}
	rest, err := roomlua.Reply(cmd)
	if err != nil {
		return sse.Opening{}, err
	}
	o := sse.Opening{PlayerID: int(layout.ToInt64(rest[0])), Version: layout.ToInt64(rest[1])}
	switch rest[2] {
	case "replay":
		o.Replay = events(roomlua.LogEntries(rest[3]))
	case "snapshot":
		room, state, err := readRoom()
		if err != nil {
			return sse.Opening{}, err
		}
		tag, _ := rest[3].(string)
		o.Snapshot = &sse.Snapshot{Version: o.Version, Tag: tag, Room: room, State: state}
	}
	return o, nil
}

// CloseStream implements sse.Source: the room's lease, then the lease in
// the user's open streams (dropped even when the room's close failed); a
// Server lease holds neither.
func (s *Streams) CloseStream(ctx context.Context, l sse.Lease) error {
	if l.Server {
		return nil
	}
	shard, ok := layout.RoomShard(l.Room, s.cfg.Shards)
	if !ok {
		return rooms.ErrRoomNotFound
	}
	call := roomlua.StreamCloseCall{Scope: s.cfg.Env.Scope(shard, l.Room), Player: l.PlayerID, Stream: l.Stream,
		GraceMs: s.cfg.Grace.Milliseconds(), DebounceMs: s.cfg.Debounce.Milliseconds()}
	_, err := roomlua.Reply(s.cfg.Runner.Run(ctx, call))
	return errors.Join(err, s.cfg.Sessions.DropStream(ctx, l))
}

// RenewStreams implements sse.Source: scripts of up to redisx.RenewBatch leases of
// one shard, one after the other, renew the room leases, with the expiry
// taken from Redis' clock like every other score; then one pipeline renews
// the leases of every stream (lobby ones included) in their users' open
// streams. A lease lost in either is returned once. Both go through
// connections of their own (conn.Clients.Renewals), never queued behind the
// requests: when thousands of streams open at once, each waiting for a
// request connection (up to the pool timeout), a renewal behind them came
// after the lease's TTL and the hub ended the streams of its chunk as
// lapsed while Redis answered at once (docs/OPERATIONS.md, "HTTP/2, TLS
// and h2c").
func (s *Streams) RenewStreams(ctx context.Context, ls []sse.Lease) ([]sse.Lease, error) {
	lost, err := s.renewRoomStreams(ctx, ls)
	ulost, uerr := s.cfg.Sessions.RenewStreams(ctx, ls)
	for _, l := range ulost {
		if !slices.ContainsFunc(lost, func(x sse.Lease) bool { return x.Stream == l.Stream }) {
			lost = append(lost, l)
		}
	}
	return lost, errors.Join(err, uerr)
}

// renewRoomStreams renews the presence leases of the room streams of ls.
func (s *Streams) renewRoomStreams(ctx context.Context, ls []sse.Lease) ([]sse.Lease, error) {
	byShard := map[int][]sse.Lease{}
	for _, l := range ls {
		if shard, ok := layout.RoomShard(l.Room, s.cfg.Shards); ok {
			byShard[shard] = append(byShard[shard], l)
		}
	}
	var lost []sse.Lease
	var errs []error
	for shard, all := range byShard {
		for batch := range slices.Chunk(all, redisx.RenewBatch) {
			call := redisx.RenewCall{Sc: roomlua.PresenceRenew, TTLMs: s.cfg.TTL.Milliseconds()}
			for _, l := range batch {
				call.Keys = append(call.Keys, s.cfg.Keys.Room(shard, l.Room)+":presence")
				call.Members = append(call.Members, leaseMember(l))
			}
			res, err := s.cfg.Renewals.Run(ctx, call).Result()
			if err != nil {
				errs = append(errs, redisx.Wrap(err))
				continue
			}
			for _, i := range res.([]any) {
				lost = append(lost, batch[layout.ToInt64(i)-1])
			}
		}
	}
	return lost, errors.Join(errs...)
}

// leaseMember is a lease's member in the presence zset (see prelude.lua).
func leaseMember(l sse.Lease) string {
	return "s:" + strconv.Itoa(l.PlayerID) + ":" + l.Stream
}

// Log implements sse.Source.
func (s *Streams) Log(ctx context.Context, room string, from, to int64) ([]sse.Event, error) {
	shard, ok := layout.RoomShard(room, s.cfg.Shards)
	if !ok {
		return nil, rooms.ErrRoomNotFound
	}
	end := "+"
	if to >= 0 {
		end = strconv.FormatInt(to, 10) + "-0"
	}
	res, err := s.cfg.Client.Do(ctx, "XRANGE", s.cfg.Keys.Log(shard, room), strconv.FormatInt(from, 10)+"-0", end).Result()
	if err != nil {
		return nil, redisx.Wrap(err)
	}
	return events(roomlua.LogEntries(res)), nil
}

// Versions implements sse.Source with one pipelined read.
func (s *Streams) Versions(ctx context.Context, ids []string) ([]int64, error) {
	cmds := make([]*redis.StringCmd, len(ids))
	_, err := s.cfg.Client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			shard, _ := layout.RoomShard(id, s.cfg.Shards)
			cmds[i] = p.HGet(ctx, s.cfg.Keys.Room(shard, id), "ver")
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, redisx.Wrap(err)
	}
	out := make([]int64, len(ids))
	for i, c := range cmds {
		out[i], _ = c.Int64()
	}
	return out, nil
}

// events are a room log's entries as the hub sends them.
func events(es []roomlua.LogEntry) []sse.Event {
	out := make([]sse.Event, len(es))
	for i, e := range es {
		out[i] = sse.Event{Version: e.Version, Tag: e.Tag, Data: []byte(e.Data)}
	}
	return out
}

// OpenLobby implements sse.Source: the lobby stream's lease in its user's
// open streams (the lobby has no presence of its own), waiting for Redis
// up to redisx.OpeningBound.
func (s *Streams) OpenLobby(ctx context.Context, l sse.Lease) error {
	_, err := s.cfg.Sessions.TakeStream(redisx.Opening(ctx), l)
	return err
}

// CloseLobby implements sse.Source.
func (s *Streams) CloseLobby(ctx context.Context, l sse.Lease) error {
	return s.cfg.Sessions.DropStream(ctx, l)
}
