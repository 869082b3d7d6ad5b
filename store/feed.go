package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/sse"

	"github.com/realsync/realsync/store/internal/layout"
	"github.com/realsync/realsync/store/internal/pubsub"
)

// Feed is an instance's live subscription to room, lobby and user channels
// (store/internal/pubsub: a connection per shard), routing what arrives to
// the sink.
type Feed struct {
	s    *Store
	sink sse.Sink
	mux  *pubsub.Mux
}

var _ sse.Feed = (*Feed)(nil)

// Feed returns a Feed that hands what it receives to sink. Each shard's
// connection is probed (store/internal/pubsub: an echo on a probe channel
// of the feed's own, every second): one that went silent is reopened on
// the slot's current node, counted as Metrics.RedisError("pubsub_silent"),
// and sink is told (sse.SilenceSink) when it implements it.
func (s *Store) Feed(sink sse.Sink) sse.Feed {
	return s.feed(sink, pubsub.Probe{})
}

// silentOp counts a feed connection found silent and reopened, as a Redis
// failure (Metrics.RedisError).
const silentOp = "pubsub_silent"

// feed is Feed with the probe's timing (p's Channel and Silent are set
// here).
func (s *Store) feed(sink sse.Sink, p pubsub.Probe) *Feed {
	f := &Feed{s: s, sink: sink}
	b := make([]byte, 8)
	rand.Read(b)
	name := hex.EncodeToString(b)
	p.Channel = func(shard int) string { return s.keys.Tag(shard) + ":probe:" + name }
	ss, _ := sink.(sse.SilenceSink)
	p.Silent = func(shard, channels int) {
		s.metrics.RedisError(silentOp)
		if ss != nil {
			ss.FeedSilent(shard, channels)
		}
	}
	f.mux = pubsub.New(s.client, s.pubcmd == "SPUBLISH", feedRoutes{f}, p)
	return f
}

// Subscribe implements sse.Feed.
func (f *Feed) Subscribe(ctx context.Context, room string) error {
	shard, ok := layout.RoomShard(room, f.s.shards)
	if !ok {
		return rooms.ErrRoomNotFound
	}
	return f.mux.Subscribe(ctx, shard, f.s.keys.Channel(shard, room))
}

// SubscribeLobby implements sse.Feed.
func (f *Feed) SubscribeLobby(ctx context.Context) error {
	for shard := range f.s.shards {
		if err := f.mux.Subscribe(ctx, shard, f.s.keys.Lobby(shard)); err != nil {
			f.UnsubscribeLobby()
			return err
		}
	}
	return nil
}

// UnsubscribeLobby implements sse.Feed.
func (f *Feed) UnsubscribeLobby() {
	for shard := range f.s.shards {
		f.mux.Unsubscribe(shard, f.s.keys.Lobby(shard))
	}
}

// Unsubscribe implements sse.Feed.
func (f *Feed) Unsubscribe(room string) {
	if shard, ok := layout.RoomShard(room, f.s.shards); ok {
		f.mux.Unsubscribe(shard, f.s.keys.Channel(shard, room))
	}
}

// Close implements sse.Feed.
func (f *Feed) Close() error { return f.mux.Close() }

// feedRoutes hands a channel's messages to the sink: a user's or status
// channel's (userfeed.go), a lobby's notices, a room's events.
type feedRoutes struct{ f *Feed }

func (r feedRoutes) Message(channel, payload string) {
	f := r.f
	switch {
	case f.userMessage(channel, payload):
	case strings.HasSuffix(channel, lobbySuffix):
		if n, err := parseNotice(payload); err == nil {
			f.sink.Lobby(n)
		}
	default:
		if ev, err := parseFrame(payload); err == nil {
			f.sink.Deliver(roomOf(channel), ev)
		}
	}
}

func (r feedRoutes) Resubscribed(channel string) {
	if !r.f.userResubscribed(channel) {
		r.f.sink.Resubscribed(roomOf(channel))
	}
}

const lobbySuffix = "}:lobby"

// parseNotice decodes a lobby notice "<kind> <roomId> <version> <mode> <region>".
func parseNotice(payload string) (sse.LobbyNotice, error) {
	f := strings.Fields(payload)
	if len(f) != 5 {
		return sse.LobbyNotice{}, fmt.Errorf("store: malformed lobby notice %.60q", payload)
	}
	return sse.LobbyNotice{Kind: f[0], Room: f[1], Version: layout.Atoi64(f[2]), Mode: f[3], Region: f[4]}, nil
}

// roomOf returns the room id of a channel "{prefix:shard}:ch:<id>" ("" for
// a lobby channel).
func roomOf(channel string) string {
	_, id, _ := strings.Cut(channel, "}:ch:")
	return id
}
