// Package feed is an instance's live subscription to Redis Pub/Sub: the
// rooms' event channels, the lobby's notice channels (one per shard), and
// the users' and status channels of the player layer (users.go). What
// arrives is decoded and handed to an sse.Sink; one connection per shard
// (store/internal/pubsub), probed so that a connection gone silent (a hung
// master after a failover, a slot moved) is reopened on the slot's current
// node.
//
// The channels' names and payloads are the scripts' (store/internal/roomlua/lua,
// store/sessions/lua, store/userlog/lua): a room's event frame
// "<version> <tag> <json>", a lobby notice "<kind> <roomId> <version>
// <mode> <region>".
package feed

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/sse"

	"github.com/realsync/realsync/store/internal/layout"
	"github.com/realsync/realsync/store/internal/pubsub"
	"github.com/realsync/realsync/store/internal/redisx"
)

// Config is what a Feed subscribes with.
type Config struct {
	// Client opens the Pub/Sub connections; Sharded says the channels are
	// a Cluster's sharded ones (SSUBSCRIBE, as the scripts SPUBLISH).
	Client  redis.UniversalClient
	Sharded bool
	// Keys and Shards name the rooms' and the lobby's channels.
	Keys   layout.Keys
	Shards int
	// UserChannel and StatusChannel name user uid's personal channel
	// (store/userlog) and status channel (store/sessions).
	UserChannel, StatusChannel func(uid string) string
	// Silent is told of every shard connection found silent and reopened
	// (for a metric); nil: nobody.
	Silent func()
	// ProbeEvery and ProbeWait time the probe (pubsub.Probe's Every and
	// Wait); zero: its defaults (pubsub.DefaultProbeEvery and
	// DefaultProbeWait: 1 s, 3 s).
	ProbeEvery, ProbeWait time.Duration
}

// Feed routes what its subscriptions receive to its sink. Safe for
// concurrent use.
type Feed struct {
	cfg  Config
	sink sse.Sink
	mux  *pubsub.Mux
}

var (
	_ sse.Feed     = (*Feed)(nil)
	_ sse.UserFeed = (*Feed)(nil)
)

// New returns a Feed that hands what it receives to sink, with no
// subscription yet. Each shard's connection is probed (an echo on a probe
// channel of the feed's own): one that went silent is reopened on the
// slot's current node, cfg.Silent is called, and sink is told
// (sse.SilenceSink) when it implements it.
func New(cfg Config, sink sse.Sink) *Feed {
	f := &Feed{cfg: cfg, sink: sink}
	b := make([]byte, 8)
	rand.Read(b)
	name := hex.EncodeToString(b)
	ss, _ := sink.(sse.SilenceSink)
	p := pubsub.Probe{Every: cfg.ProbeEvery, Wait: cfg.ProbeWait,
		Channel: func(shard int) string { return cfg.Keys.Tag(shard) + ":probe:" + name },
		Silent: func(shard, channels int) {
			if cfg.Silent != nil {
				cfg.Silent()
			}
			if ss != nil {
				ss.FeedSilent(shard, channels)
			}
		}}
	f.mux = pubsub.New(cfg.Client, cfg.Sharded, routes{f}, p)
	return f
}

// Subscribe implements sse.Feed. Errors: rooms.ErrRoomNotFound for an id
// that names no shard; rooms.ErrUnavailable when Redis cannot be reached.
func (f *Feed) Subscribe(ctx context.Context, room string) error {
	shard, ok := layout.RoomShard(room, f.cfg.Shards)
	if !ok {
		return rooms.ErrRoomNotFound
	}
	return f.mux.Subscribe(ctx, shard, f.cfg.Keys.Channel(shard, room))
}

// SubscribeLobby implements sse.Feed: every shard's lobby channel, or none
// (an error unsubscribes those already subscribed).
func (f *Feed) SubscribeLobby(ctx context.Context) error {
	for shard := range f.cfg.Shards {
		if err := f.mux.Subscribe(ctx, shard, f.cfg.Keys.Lobby(shard)); err != nil {
			f.UnsubscribeLobby()
			return err
		}
	}
	return nil
}

// UnsubscribeLobby implements sse.Feed.
func (f *Feed) UnsubscribeLobby() {
	for shard := range f.cfg.Shards {
		f.mux.Unsubscribe(shard, f.cfg.Keys.Lobby(shard))
	}
}

// Unsubscribe implements sse.Feed.
func (f *Feed) Unsubscribe(room string) {
	if shard, ok := layout.RoomShard(room, f.cfg.Shards); ok {
		f.mux.Unsubscribe(shard, f.cfg.Keys.Channel(shard, room))
	}
}

// Close implements sse.Feed.
func (f *Feed) Close() error { return f.mux.Close() }

// Probes returns how many probes the feed published, for tests and tools.
func (f *Feed) Probes() int64 { return f.mux.Probes() }

// Tracked returns how many channels the feed keeps an entry for (those
// subscribed, or being subscribed or unsubscribed), for tests and tools.
func (f *Feed) Tracked() int { return f.mux.Tracked() }

// routes hands a channel's messages to the sink: a user's or status
// channel's (users.go), a lobby's notices, a room's events. A payload that
// does not parse is dropped (no script publishes one).
type routes struct{ f *Feed }

func (r routes) Message(channel, payload string) {
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

func (r routes) Resubscribed(channel string) {
	if !r.f.userResubscribed(channel) {
		r.f.sink.Resubscribed(roomOf(channel))
	}
}

const lobbySuffix = "}:lobby"

// parseNotice decodes a lobby notice "<kind> <roomId> <version> <mode> <region>".
func parseNotice(payload string) (sse.LobbyNotice, error) {
	f := strings.Fields(payload)
	if len(f) != 5 {
		return sse.LobbyNotice{}, fmt.Errorf("feed: malformed lobby notice %.60q", payload)
	}
	return sse.LobbyNotice{Kind: f[0], Room: f[1], Version: layout.Atoi64(f[2]), Mode: f[3], Region: f[4]}, nil
}

// parseFrame decodes a room's published event "<version> <tag> <json>".
func parseFrame(payload string) (sse.Event, error) {
	v, rest, ok1 := strings.Cut(payload, " ")
	tag, data, ok2 := strings.Cut(rest, " ")
	n, err := strconv.ParseInt(v, 10, 64)
	if !ok1 || !ok2 || err != nil {
		return sse.Event{}, fmt.Errorf("feed: malformed event frame %.40q", payload)
	}
	return sse.Event{Version: n, Tag: tag, Data: []byte(data)}, nil
}

// roomOf returns the room id of a channel "{prefix:shard}:ch:<id>" ("" for
// a lobby channel).
func roomOf(channel string) string {
	_, id, _ := strings.Cut(channel, "}:ch:")
	return id
}

// userShard is the shard of user uid's channels.
func (f *Feed) userShard(uid string) int { return redisx.UserShard(uid, f.cfg.Shards) }
