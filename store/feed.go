package store

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/sse"

	"github.com/realsync/realsync/store/internal/redisx"
)

// subscribeTimeout bounds the wait for Redis to confirm a subscription.
const subscribeTimeout = 5 * time.Second

// Feed is an instance's live subscription to room channels: one PubSub
// connection per shard, so every channel of a connection shares one slot
// (go-redis pins a sharded PubSub to the node of its first channel, and
// resubscribes all its channels in one command after a reconnect, which
// fails across slots). Sharded Pub/Sub on a Cluster, classic elsewhere.
type Feed struct {
	s      *Store
	sink   sse.Sink
	mu     sync.Mutex
	shards map[int]*shardSub
}

var _ sse.Feed = (*Feed)(nil)

// shardSub is one shard's PubSub and the channels it should hold.
type shardSub struct {
	ps       *redis.PubSub
	channels map[string]bool
	waiters  map[string][]chan struct{}
	unsubs   map[string]int // unsubscriptions sent and not yet confirmed
}

// Feed returns a Feed that hands what it receives to sink.
func (s *Store) Feed(sink sse.Sink) sse.Feed {
	return &Feed{s: s, sink: sink, shards: map[int]*shardSub{}}
}

func (f *Feed) sharded() bool { return f.s.pubcmd == "SPUBLISH" }

// Subscribe implements sse.Feed.
func (f *Feed) Subscribe(ctx context.Context, room string) error {
	shard, ok := roomShard(room, f.s.shards)
	if !ok {
		return rooms.ErrRoomNotFound
	}
	return f.subscribe(ctx, shard, f.s.keys.channel(shard, room))
}

// SubscribeLobby implements sse.Feed.
func (f *Feed) SubscribeLobby(ctx context.Context) error {
	for shard := range f.s.shards {
		if err := f.subscribe(ctx, shard, f.s.keys.lobby(shard)); err != nil {
			f.UnsubscribeLobby()
			return err
		}
	}
	return nil
}

// UnsubscribeLobby implements sse.Feed.
func (f *Feed) UnsubscribeLobby() {
	for shard := range f.s.shards {
		f.unsubscribe(shard, f.s.keys.lobby(shard))
	}
}

// subscribe subscribes ch of shard and waits for Redis' confirmation.
func (f *Feed) subscribe(ctx context.Context, shard int, ch string) error {
	confirmed := make(chan struct{})
	ctx, cancel := context.WithTimeout(ctx, subscribeTimeout)
	defer cancel()
	if err := f.send(ctx, shard, ch, confirmed); err != nil {
		f.unsubscribe(shard, ch)
		return redisx.Wrap(err)
	}
	select {
	case <-confirmed:
		return nil
	case <-ctx.Done():
		f.unsubscribe(shard, ch)
		if ctx.Err() == context.DeadlineExceeded {
			return fmt.Errorf("%w: subscription to %s not confirmed", rooms.ErrUnavailable, ch)
		}
		return ctx.Err()
	}
}

// send registers the waiter and sends the subscription, opening the shard's
// connection on its first channel.
func (f *Feed) send(ctx context.Context, shard int, ch string, confirmed chan struct{}) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	sub := f.shards[shard]
	if sub == nil {
		sub = &shardSub{channels: map[string]bool{}, waiters: map[string][]chan struct{}{}, unsubs: map[string]int{}}
		f.shards[shard] = sub
	}
	sub.channels[ch] = true
	sub.waiters[ch] = append(sub.waiters[ch], confirmed)
	if sub.ps == nil {
		sub.ps = f.open(context.Background(), ch)
		go f.receive(shard, sub, sub.ps)
		return nil
	}
	if f.sharded() {
		return sub.ps.SSubscribe(ctx, ch)
	}
	return sub.ps.Subscribe(ctx, ch)
}

func (f *Feed) open(ctx context.Context, channels ...string) *redis.PubSub {
	if f.sharded() {
		return f.s.client.SSubscribe(ctx, channels...)
	}
	return f.s.client.Subscribe(ctx, channels...)
}

// Unsubscribe implements sse.Feed.
func (f *Feed) Unsubscribe(room string) {
	if shard, ok := roomShard(room, f.s.shards); ok {
		f.unsubscribe(shard, f.s.keys.channel(shard, room))
	}
}

// unsubscribe drops ch of shard; the shard's connection closes with its
// last channel.
func (f *Feed) unsubscribe(shard int, ch string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	sub := f.shards[shard]
	if sub == nil || !sub.channels[ch] {
		return
	}
	delete(sub.channels, ch)
	delete(sub.waiters, ch)
	if len(sub.channels) == 0 {
		sub.ps.Close()
		delete(f.shards, shard)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), subscribeTimeout)
	defer cancel()
	sub.unsubs[ch]++
	if f.sharded() {
		sub.ps.SUnsubscribe(ctx, ch)
	} else {
		sub.ps.Unsubscribe(ctx, ch)
	}
}

// Close implements sse.Feed.
func (f *Feed) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for shard, sub := range f.shards {
		sub.ps.Close()
		delete(f.shards, shard)
	}
	return nil
}

// receive reads one shard connection until it is closed. go-redis
// reconnects it and resubscribes its channels; a confirmation nobody waits
// for is such a resubscription, after which events may be missing.
func (f *Feed) receive(shard int, sub *shardSub, ps *redis.PubSub) {
	for msg := range ps.ChannelWithSubscriptions(redis.WithChannelSize(4096)) {
		switch m := msg.(type) {
		case *redis.Message:
			if f.userMessage(m.Channel, m.Payload) {
				continue
			}
			if strings.HasSuffix(m.Channel, lobbySuffix) {
				if n, err := parseNotice(m.Payload); err == nil {
					f.sink.Lobby(n)
				}
			} else if ev, err := parseFrame(m.Payload); err == nil {
				f.sink.Deliver(roomOf(m.Channel), ev)
			}
		case *redis.Subscription:
			f.confirmed(shard, sub, m)
		}
	}
}

func (f *Feed) confirmed(shard int, sub *shardSub, m *redis.Subscription) {
	f.mu.Lock()
	wanted := sub.channels[m.Channel]
	var waiters []chan struct{}
	switch m.Kind {
	case "subscribe", "ssubscribe":
		// only a subscription's confirmation releases its waiters: an
		// unsubscription confirmed after the channel was subscribed again
		// says nothing about the new subscription
		waiters = sub.waiters[m.Channel]
		delete(sub.waiters, m.Channel)
	case "unsubscribe", "sunsubscribe":
		if sub.unsubs[m.Channel] > 0 {
			sub.unsubs[m.Channel]--
		} else if m.Kind == "sunsubscribe" && wanted && f.shards[shard] == sub {
			// Not ours: the slot moved. Reopen the shard's connection on
			// the slot's new node with every channel.
			f.reopen(shard, sub)
		}
		wanted = false
	}
	f.mu.Unlock()
	if len(waiters) > 0 {
		for _, w := range waiters {
			close(w)
		}
	} else if wanted && !f.userResubscribed(m.Channel) {
		f.sink.Resubscribed(roomOf(m.Channel))
	}
}

// reopen replaces sub's connection; called with f.mu held.
func (f *Feed) reopen(shard int, sub *shardSub) {
	sub.ps.Close()
	chans := make([]string, 0, len(sub.channels))
	for ch := range sub.channels {
		chans = append(chans, ch)
	}
	sub.ps = f.open(context.Background(), chans...)
	go f.receive(shard, sub, sub.ps)
}

const lobbySuffix = "}:lobby"

// parseNotice decodes a lobby notice "<kind> <roomId> <version> <mode> <region>".
func parseNotice(payload string) (sse.LobbyNotice, error) {
	f := strings.Fields(payload)
	if len(f) != 5 {
		return sse.LobbyNotice{}, fmt.Errorf("store: malformed lobby notice %.60q", payload)
	}
	return sse.LobbyNotice{Kind: f[0], Room: f[1], Version: atoi64(f[2]), Mode: f[3], Region: f[4]}, nil
}

// roomOf returns the room id of a channel "{prefix:shard}:ch:<id>" ("" for
// a lobby channel).
func roomOf(channel string) string {
	_, id, _ := strings.Cut(channel, "}:ch:")
	return id
}
