// Package pubsub multiplexes an instance's Redis Pub/Sub subscriptions:
// one PubSub connection per shard, so every channel of a connection shares
// one slot (go-redis pins a sharded PubSub to the node of its first
// channel, and resubscribes all its channels in one command after a
// reconnect, which fails across slots). Sharded Pub/Sub on a Cluster,
// classic elsewhere. A subscription returns once Redis confirmed it; a
// confirmation nobody waits for is go-redis' resubscription after a
// reconnect (events may be missing before it), told to the Handler; a slot
// that moved (an unrequested sunsubscribe) reopens the shard's connection
// on the slot's new node with every channel.
package pubsub

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/rooms"

	"github.com/realsync/realsync/store/internal/redisx"
)

// subscribeTimeout bounds the wait for Redis to confirm a subscription.
const subscribeTimeout = 5 * time.Second

// Handler gets what the subscriptions receive, from one goroutine per
// shard connection.
type Handler interface {
	// Message is a message of channel.
	Message(channel, payload string)
	// Resubscribed says channel was subscribed again after a reconnect:
	// messages may have been missed before it.
	Resubscribed(channel string)
}

// Mux holds the subscriptions of one instance. Safe for concurrent use.
type Mux struct {
	client  redis.UniversalClient
	sharded bool // SSUBSCRIBE (a Cluster), else SUBSCRIBE
	h       Handler
	mu      sync.Mutex
	shards  map[int]*shardSub
}

// shardSub is one shard's PubSub and the channels it should hold.
type shardSub struct {
	ps       *redis.PubSub
	channels map[string]bool
	waiters  map[string][]chan struct{}
	unsubs   map[string]int // unsubscriptions sent and not yet confirmed
}

// New returns a Mux on client that hands what it receives to h.
func New(client redis.UniversalClient, sharded bool, h Handler) *Mux {
	return &Mux{client: client, sharded: sharded, h: h, shards: map[int]*shardSub{}}
}

// Subscribe subscribes ch, a channel in shard's slot, and waits for Redis'
// confirmation (rooms.ErrUnavailable when it does not come in time).
func (x *Mux) Subscribe(ctx context.Context, shard int, ch string) error {
	confirmed := make(chan struct{})
	ctx, cancel := context.WithTimeout(ctx, subscribeTimeout)
	defer cancel()
	if err := x.send(ctx, shard, ch, confirmed); err != nil {
		x.Unsubscribe(shard, ch)
		return redisx.Wrap(err)
	}
	select {
	case <-confirmed:
		return nil
	case <-ctx.Done():
		x.Unsubscribe(shard, ch)
		if ctx.Err() == context.DeadlineExceeded {
			return fmt.Errorf("%w: subscription to %s not confirmed", rooms.ErrUnavailable, ch)
		}
		return ctx.Err()
	}
}

// send registers the waiter and sends the subscription, opening the shard's
// connection on its first channel.
func (x *Mux) send(ctx context.Context, shard int, ch string, confirmed chan struct{}) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	sub := x.shards[shard]
	if sub == nil {
		sub = &shardSub{channels: map[string]bool{}, waiters: map[string][]chan struct{}{}, unsubs: map[string]int{}}
		x.shards[shard] = sub
	}
	sub.channels[ch] = true
	sub.waiters[ch] = append(sub.waiters[ch], confirmed)
	if sub.ps == nil {
		// opened without a channel, then subscribed, so that a connection
		// that cannot be made (a node that refuses connections) is an
		// error now: opened with its channel, go-redis only logs it and
		// the wait for the confirmation took subscribeTimeout (a stream's
		// opening was turned away after 5 s, an operator's find). The
		// connection is still made for ch's slot (pinned to its node),
		// before the receiving goroutine could open one elsewhere.
		sub.ps = x.open(context.Background())
		err := x.subscribe(ctx, sub.ps, ch)
		go x.receive(shard, sub, sub.ps)
		return err
	}
	return x.subscribe(ctx, sub.ps, ch)
}

func (x *Mux) subscribe(ctx context.Context, ps *redis.PubSub, ch string) error {
	if x.sharded {
		return ps.SSubscribe(ctx, ch)
	}
	return ps.Subscribe(ctx, ch)
}

func (x *Mux) open(ctx context.Context, channels ...string) *redis.PubSub {
	if x.sharded {
		return x.client.SSubscribe(ctx, channels...)
	}
	return x.client.Subscribe(ctx, channels...)
}

// Unsubscribe drops ch of shard; the shard's connection closes with its
// last channel.
func (x *Mux) Unsubscribe(shard int, ch string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	sub := x.shards[shard]
	if sub == nil || !sub.channels[ch] {
		return
	}
	delete(sub.channels, ch)
	delete(sub.waiters, ch)
	if len(sub.channels) == 0 {
		sub.ps.Close()
		delete(x.shards, shard)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), subscribeTimeout)
	defer cancel()
	sub.unsubs[ch]++
	if x.sharded {
		sub.ps.SUnsubscribe(ctx, ch)
	} else {
		sub.ps.Unsubscribe(ctx, ch)
	}
}

// Close closes every connection.
func (x *Mux) Close() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	for shard, sub := range x.shards {
		sub.ps.Close()
		delete(x.shards, shard)
	}
	return nil
}

// receive reads one shard connection until it is closed. go-redis
// reconnects it and resubscribes its channels; a confirmation nobody waits
// for is such a resubscription, after which events may be missing.
func (x *Mux) receive(shard int, sub *shardSub, ps *redis.PubSub) {
	for msg := range ps.ChannelWithSubscriptions(redis.WithChannelSize(4096)) {
		switch m := msg.(type) {
		case *redis.Message:
			x.h.Message(m.Channel, m.Payload)
		case *redis.Subscription:
			x.confirmed(shard, sub, m)
		}
	}
}

func (x *Mux) confirmed(shard int, sub *shardSub, m *redis.Subscription) {
	x.mu.Lock()
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
		} else if m.Kind == "sunsubscribe" && wanted && x.shards[shard] == sub {
			// Not ours: the slot moved. Reopen the shard's connection on
			// the slot's new node with every channel.
			x.reopen(shard, sub)
		}
		wanted = false
	}
	x.mu.Unlock()
	if len(waiters) > 0 {
		for _, w := range waiters {
			close(w)
		}
	} else if wanted {
		x.h.Resubscribed(m.Channel)
	}
}

// reopen replaces sub's connection; called with x.mu held.
func (x *Mux) reopen(shard int, sub *shardSub) {
	sub.ps.Close()
	chans := make([]string, 0, len(sub.channels))
	for ch := range sub.channels {
		chans = append(chans, ch)
	}
	sub.ps = x.open(context.Background(), chans...)
	go x.receive(shard, sub, sub.ps)
}
