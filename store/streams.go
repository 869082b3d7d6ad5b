package store

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/sse"

	"github.com/realsync/realsync/store/internal/layout"
	"github.com/realsync/realsync/store/internal/redisx"
	"github.com/realsync/realsync/store/internal/roomlua"
)

var _ sse.Source = (*Store)(nil)

// OpenStream implements sse.Source: the lease in the user's open streams
// first (store/sessions, streams.go: rooms.ErrStreamLimit past the quota, and the room
// untouched), then one script (membership, lease, and the replay, or the
// version of a snapshot) and, when it reads, the room and state in the
// same transaction. A fresh user lease is dropped again when the room
// refuses or fails. Its calls wait for Redis up to redisx.OpeningBound.
func (s *Store) OpenStream(ctx context.Context, l sse.Lease, read sse.Read, c sse.Cursor, limit int) (sse.Opening, error) {
	ctx = redisx.Opening(ctx)
	shard, ok := layout.RoomShard(l.Room, s.shards)
	if !ok {
		return sse.Opening{}, rooms.ErrRoomNotFound
	}
	fresh, err := s.sess.TakeStream(ctx, l)
	if err != nil {
		return sse.Opening{}, err
	}
	o, err := s.openRoomStream(ctx, shard, l, read, c, limit)
	if err != nil && fresh {
		s.sess.DropStream(ctx, l)
	}
	return o, err
}

// openRoomStream runs stream_open for l in the room of shard.
func (s *Store) openRoomStream(ctx context.Context, shard int, l sse.Lease, read sse.Read, c sse.Cursor, limit int) (sse.Opening, error) {
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
	call := roomlua.StreamOpenCall{Scope: s.env.Scope(shard, l.Room), User: uid, Stream: l.Stream,
		TTLMs: s.presenceTTL.Milliseconds(), Read: mode, Cursor: c, Limit: limit}
	var r ran
	var err error
	if mode == "none" {
		r.cmd = s.runner.Run(ctx, call)
	} else if r, err = s.runThenRead(ctx, call, shard, l.Room, true); err != nil {
		return sse.Opening{}, err
	}
	rest, err := roomlua.Reply(r.cmd)
	if err != nil {
		return sse.Opening{}, err
	}
	o := sse.Opening{PlayerID: int(layout.ToInt64(rest[0])), Version: layout.ToInt64(rest[1])}
	switch rest[2] {
	case "replay":
		o.Replay = events(logEntries(rest[3]))
	case "snapshot":
		room, state, err := s.decodeRead(l.Room, r.read)
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
func (s *Store) CloseStream(ctx context.Context, l sse.Lease) error {
	if l.Server {
		return nil
	}
	shard, ok := layout.RoomShard(l.Room, s.shards)
	if !ok {
		return rooms.ErrRoomNotFound
	}
	_, err := s.result(ctx, roomlua.StreamCloseCall{Scope: s.env.Scope(shard, l.Room), Player: l.PlayerID, Stream: l.Stream, GraceMs: s.grace.Milliseconds(), DebounceMs: s.debounce.Milliseconds()})
	return errors.Join(err, s.sess.DropStream(ctx, l))
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
func (s *Store) RenewStreams(ctx context.Context, ls []sse.Lease) ([]sse.Lease, error) {
	lost, err := s.renewRoomStreams(ctx, ls)
	ulost, uerr := s.sess.RenewStreams(ctx, ls)
	for _, l := range ulost {
		if !slices.ContainsFunc(lost, func(x sse.Lease) bool { return x.Stream == l.Stream }) {
			lost = append(lost, l)
		}
	}
	return lost, errors.Join(err, uerr)
}

// renewRoomStreams renews the presence leases of the room streams of ls.
func (s *Store) renewRoomStreams(ctx context.Context, ls []sse.Lease) ([]sse.Lease, error) {
	byShard := map[int][]sse.Lease{}
	for _, l := range ls {
		if shard, ok := layout.RoomShard(l.Room, s.shards); ok {
			byShard[shard] = append(byShard[shard], l)
		}
	}
	var lost []sse.Lease
	var errs []error
	for shard, all := range byShard {
		for batch := range slices.Chunk(all, redisx.RenewBatch) {
			call := redisx.RenewCall{Sc: roomlua.PresenceRenew, TTLMs: s.presenceTTL.Milliseconds()}
			for _, l := range batch {
				call.Keys = append(call.Keys, s.keys.Room(shard, l.Room)+":presence")
				call.Members = append(call.Members, leaseMember(l))
			}
			res, err := s.renewalBase.Runner.Run(ctx, call).Result()
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
func (s *Store) Log(ctx context.Context, room string, from, to int64) ([]sse.Event, error) {
	shard, ok := layout.RoomShard(room, s.shards)
	if !ok {
		return nil, rooms.ErrRoomNotFound
	}
	end := "+"
	if to >= 0 {
		end = strconv.FormatInt(to, 10) + "-0"
	}
	res, err := s.client.Do(ctx, "XRANGE", s.keys.Log(shard, room), strconv.FormatInt(from, 10)+"-0", end).Result()
	if err != nil {
		return nil, redisx.Wrap(err)
	}
	return events(logEntries(res)), nil
}

// Versions implements sse.Source with one pipelined read.
func (s *Store) Versions(ctx context.Context, ids []string) ([]int64, error) {
	cmds := make([]*redis.StringCmd, len(ids))
	_, err := s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			shard, _ := layout.RoomShard(id, s.shards)
			cmds[i] = p.HGet(ctx, s.keys.Room(shard, id), "ver")
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

// logEntry is one entry of a room's event or message log.
type logEntry struct {
	version int64
	tag     string
	data    string
}

// logEntries decodes an XRANGE reply: entries "<version>-0" with fields
// g (tag, event log only) and d (the event's JSON).
func logEntries(v any) []logEntry {
	arr, _ := v.([]any)
	out := make([]logEntry, 0, len(arr))
	for _, x := range arr {
		e, _ := x.([]any)
		if len(e) != 2 {
			continue
		}
		id, _ := e[0].(string)
		ver, _ := strings.CutSuffix(id, "-0")
		f := roomlua.Pairs(e[1])
		out = append(out, logEntry{version: layout.Atoi64(ver), tag: f["g"], data: f["d"]})
	}
	return out
}

func events(es []logEntry) []sse.Event {
	out := make([]sse.Event, len(es))
	for i, e := range es {
		out[i] = sse.Event{Version: e.version, Tag: e.tag, Data: []byte(e.data)}
	}
	return out
}

// OpenLobby implements sse.Source: the lobby stream's lease in its user's
// open streams (the lobby has no presence of its own), waiting for Redis
// up to redisx.OpeningBound.
func (s *Store) OpenLobby(ctx context.Context, l sse.Lease) error {
	_, err := s.sess.TakeStream(redisx.Opening(ctx), l)
	return err
}

// CloseLobby implements sse.Source.
func (s *Store) CloseLobby(ctx context.Context, l sse.Lease) error {
	return s.sess.DropStream(ctx, l)
}
