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
//
// A subscription can also go silent without any sign: a master that hangs
// (SIGSTOP, a stuck machine) keeps its connections open, go-redis' health
// check writes its PING into the kernel's buffer and never waits for the
// reply, and when a replica takes the hung master's slots over the
// connection stays where it was, receiving nothing. An echo probe finds
// every such case (a hung node, a failover, a partition), shard by shard:
// each shard's connection also subscribes a probe channel of its own, in
// the shard's slot and unique to the Mux; every Probe.Every the Mux
// publishes a small message on it through the ordinary client (which
// follows the slot to its current master; on a Cluster from a script,
// which no replica runs: probeLua) and expects it back on the
// subscription within Probe.Wait of the publish's reply. A probe that does
// not come back, on a connection that handed nothing on for Probe.Wait
// either (a busy one, its probe waiting behind a backlog of messages, is
// not silent, and is probed again: when the later probe comes back before
// the overdue one, that one was lost, and every channel is told
// resubscribed), reopens the shard's connection (a new one, on the slot's
// current node, every channel subscribed again; each confirmation is a
// resubscription, told to the Handler, which catches up) and tells
// Probe.Silent. Once a reopened (or resubscribed) connection's first
// probe comes back, every channel is told resubscribed once more (echoed:
// a subscription may be confirmed before it receives the slot's
// messages). A connection whose probe channel Redis did not confirm is
// probed too once Probe.Wait passed since it was opened: reopened after
// its slot moved, on the owner its client had not re-read yet, it got
// MOVED for its subscription and would never deliver anything. A probe
// that cannot be published (Redis unreachable) proves nothing and waits
// for the next round.
package pubsub

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
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

// Probe configures the echo probe of a Mux's connections (see the package
// comment). Zero durations take the defaults.
type Probe struct {
	// Channel returns shard's probe channel: in the shard's slot, used by
	// this Mux alone, never one of its ordinary channels. No probe when nil.
	Channel func(shard int) string
	// Every: how often each shard's connection is probed; default 1 s.
	Every time.Duration
	// Wait: how long after the publish's reply the probe must be back;
	// default 3 s.
	Wait time.Duration
	// Silent is told of a shard whose probe did not come back, once its
	// connection was reopened; channels is the number of channels it
	// holds. Called from the probe's goroutine; optional.
	Silent func(shard, channels int)
}

// DefaultProbeEvery and DefaultProbeWait are Probe's defaults: a shard
// that went silent is reopened within about Every + Wait after the first
// probe published on the slot's current master.
const (
	DefaultProbeEvery = time.Second
	DefaultProbeWait  = 3 * time.Second
)

// Mux holds the subscriptions of one instance. Safe for concurrent use.
type Mux struct {
	client  redis.UniversalClient
	sharded bool // SSUBSCRIBE (a Cluster), else SUBSCRIBE
	h       Handler
	probe   Probe
	stop    chan struct{}
	closing sync.Once
	probes  atomic.Int64 // probes published, for tests and measurement
	mu      sync.Mutex
	shards  map[int]*shardSub
	nonce   int64 // the last probe's; guarded by mu
}

// shardSub is one shard's PubSub and the channels it should hold.
type shardSub struct {
	ps       *redis.PubSub
	channels map[string]bool
	waiters  map[string][]chan struct{}
	unsubs   map[string]int // unsubscriptions sent and not yet confirmed
	// cur is ps, for the receiving goroutines: a replaced connection's
	// messages are dropped (the catch-up after the reopen reads the log)
	cur atomic.Pointer[redis.PubSub]
	// seen is when the receiving goroutine last took a message of the
	// current connection (Unix ns): one that keeps taking them is behind,
	// not silent, however late its probe
	seen atomic.Int64

	// the echo probe, guarded by Mux.mu: probeCh is the shard's probe
	// channel ("" without a probe), armed says Redis confirmed it on the
	// current connection, opened when the connection was (re)opened,
	// nonce is the outstanding probe's (0: none), sentAt when its publish
	// was answered (zero while it is in flight)
	probeCh string
	armed   bool
	opened  time.Time
	nonce   int64
	sentAt  time.Time
	// recheck: the connection was reopened and no probe came back on it
	// yet (echoed tells every channel resubscribed once more then)
	recheck bool
	// overdue is a probe still out past Probe.Every on a connection that
	// kept handing messages on, so another was sent (nonce): when a later
	// one comes back first, overdue was lost on the way, and what was
	// published with it may have been too (echoed); overdueAt is when its
	// publish was answered
	overdue   int64
	overdueAt time.Time
}

// firstAt is when the oldest probe still out on sub's connection was
// published (zero: none, or in flight); Mux.mu held.
func (sub *shardSub) firstAt() time.Time {
	if sub.overdue != 0 {
		return sub.overdueAt
	}
	return sub.sentAt
}

// New returns a Mux on client that hands what it receives to h, probing
// its connections as p says (see Probe).
func New(client redis.UniversalClient, sharded bool, h Handler, p Probe) *Mux {
	if p.Every <= 0 {
		p.Every = DefaultProbeEvery
	}
	if p.Wait <= 0 {
		p.Wait = DefaultProbeWait
	}
	x := &Mux{client: client, sharded: sharded, h: h, probe: p, stop: make(chan struct{}), shards: map[int]*shardSub{}}
	if p.Channel != nil {
		go x.probeLoop()
	}
	return x
}

// Probes returns how many probes the Mux published.
func (x *Mux) Probes() int64 { return x.probes.Load() }

// Tracked returns how many entries the Mux keeps over its shards: channels
// subscribed, subscriptions waited for and unsubscriptions not yet
// confirmed; for tests and measurement (it must come back down as
// channels are dropped: a Mux lives as long as its instance).
func (x *Mux) Tracked() int {
	x.mu.Lock()
	defer x.mu.Unlock()
	n := 0
	for _, sub := range x.shards {
		n += len(sub.channels) + len(sub.waiters) + len(sub.unsubs)
	}
	return n
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
		if x.probe.Channel != nil {
			sub.probeCh = x.probe.Channel(shard)
		}
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
		sub.cur.Store(sub.ps)
		sub.opened = time.Now()
		err := x.subscribe(ctx, sub.ps, sub.with(ch)...)
		go x.receive(shard, sub, sub.ps)
		return err
	}
	return x.subscribe(ctx, sub.ps, ch)
}

// with returns chans and the shard's probe channel, if any.
func (sub *shardSub) with(chans ...string) []string {
	if sub.probeCh != "" {
		chans = append(chans, sub.probeCh)
	}
	return chans
}

func (x *Mux) subscribe(ctx context.Context, ps *redis.PubSub, chans ...string) error {
	if x.sharded {
		return ps.SSubscribe(ctx, chans...)
	}
	return ps.Subscribe(ctx, chans...)
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

// Close closes every connection and stops the probe.
func (x *Mux) Close() error {
	x.closing.Do(func() { close(x.stop) })
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
		if sub.cur.Load() != ps {
			continue // replaced: drained until closed
		}
		sub.seen.Store(time.Now().UnixNano())
		switch m := msg.(type) {
		case *redis.Message:
			if m.Channel == sub.probeCh && sub.probeCh != "" {
				x.echoed(sub, m.Payload)
			} else {
				x.h.Message(m.Channel, m.Payload)
			}
		case *redis.Subscription:
			x.confirmed(shard, sub, m)
		}
	}
}

func (x *Mux) confirmed(shard int, sub *shardSub, m *redis.Subscription) {
	x.mu.Lock()
	if m.Channel == sub.probeCh && sub.probeCh != "" {
		x.probeConfirmed(shard, sub, m.Kind)
		x.mu.Unlock()
		return
	}
	wanted := sub.channels[m.Channel]
	var waiters []chan struct{}
	switch m.Kind {
	case "subscribe", "ssubscribe":
		// only a subscription's confirmation releases its waiters: an
		// unsubscription confirmed after the channel was subscribed again
		// says nothing about the new subscription
		waiters = sub.waiters[m.Channel]
		delete(sub.waiters, m.Channel)
		if len(waiters) == 0 && wanted && sub.probeCh != "" {
			// go-redis' resubscription after a reconnect, perhaps on a node
			// just demoted: caught up again once a probe comes back, as
			// after a reopen (echoed)
			sub.recheck = true
		}
	case "unsubscribe", "sunsubscribe":
		if n := sub.unsubs[m.Channel]; n > 1 {
			sub.unsubs[m.Channel] = n - 1
		} else if n == 1 {
			delete(sub.unsubs, m.Channel) // kept, the Mux would grow by a channel each
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
	chans := make([]string, 0, len(sub.channels)+1)
	for ch := range sub.channels {
		chans = append(chans, ch)
	}
	sub.armed, sub.nonce, sub.overdue, sub.opened, sub.recheck = false, 0, 0, time.Now(), sub.probeCh != ""
	clear(sub.unsubs) // the old connection's confirmations are dropped
	sub.ps = x.open(context.Background(), sub.with(chans...)...)
	sub.cur.Store(sub.ps)
	go x.receive(shard, sub, sub.ps)
}

// probeConfirmed handles a confirmation of sub's probe channel; called
// with x.mu held. A subscription (the first, or go-redis' after a
// reconnect, which may have lost the outstanding probe) arms the probe
// afresh; an unsubscription nobody asked for is a slot that moved, as for
// any channel.
func (x *Mux) probeConfirmed(shard int, sub *shardSub, kind string) {
	switch kind {
	case "subscribe", "ssubscribe":
		sub.armed, sub.nonce, sub.overdue = true, 0, 0
	case "sunsubscribe":
		if x.shards[shard] == sub {
			x.reopen(shard, sub)
		}
	}
}

// echoed handles a message of sub's probe channel: the outstanding probe
// came back. The first to come back on a reopened connection tells every
// channel resubscribed once more: a subscription may be confirmed before
// it receives what the slot's master publishes. After a live master's
// failover the reopened connection went to the node the client still
// took for the slot's owner, the demoted one, which as the new master's
// replica confirms a sharded subscription and receives its messages only
// once it has synced, 0.5–2 s later: the catch-up at the confirmation ran
// before that, and an event published in between (a lone match_found, a
// direct message) reached no stream (a chaos tester's find). A probe that
// came back was published on the slot's master (probeLua) after the path
// from it was whole: a catch-up from then on misses nothing.
func (x *Mux) echoed(sub *shardSub, payload string) {
	n, err := strconv.ParseInt(payload, 10, 64)
	if err != nil {
		return
	}
	var again []string
	x.mu.Lock()
	if sub.overdue != 0 && n == sub.overdue {
		sub.overdue = 0 // late behind a backlog, not lost
	}
	if sub.nonce != 0 && n >= sub.nonce {
		sub.nonce = 0
		if sub.overdue != 0 {
			// a probe sent before this one never came: lost, as may be
			// what the slot published with it (a new master that does not
			// know this node as its replica yet sends it nothing)
			sub.overdue, sub.recheck = 0, true
		}
		if sub.recheck {
			sub.recheck = false
			for ch := range sub.channels {
				again = append(again, ch)
			}
		}
	}
	x.mu.Unlock()
	for _, ch := range again {
		x.h.Resubscribed(ch)
	}
}

// probeLua publishes a sharded probe from a script: a replica answers a
// script from a client that did not say READONLY with MOVED, so the
// probe is published on the slot's master whatever node the client's
// layout names. A bare SPUBLISH is not a write, and a replica serves it
// for its master's slots, to its own subscribers alone: just after a
// failover the client's layout (a second old at most) still named the
// demoted master, now a replica, where the reopened connection was too;
// the probe came back at once, the catch-up ran before the new master
// sent that node anything (it sends sharded messages over the cluster bus
// to the nodes it knows in its shard), and what it published meanwhile
// reached no stream (a chaos tester's graceful failovers: match_found
// told 14 to 45 s late, at the next failover, or never on its stream).
const probeLua = "return redis.call('SPUBLISH', KEYS[1], ARGV[1])"

// probeLoop probes every Probe.Every until Close.
func (x *Mux) probeLoop() {
	t := time.NewTicker(x.probe.Every)
	defer t.Stop()
	for {
		select {
		case <-x.stop:
			return
		case <-t.C:
			x.probeRound()
		}
	}
}

// probeRound reopens the shards whose probe is overdue (their connection
// handed nothing on meanwhile either) and publishes a probe on every shard
// without one outstanding, all in one pipeline (on a Cluster, one per
// master, in parallel). A shard whose probe channel Redis did not confirm
// is probed too once Probe.Wait passed since its connection was opened:
// a connection that never subscribed (reopened on a node that no longer
// serves the slot and answered MOVED) is as silent as one on a hung node,
// and a probe the slot's master answers finds it so.
func (x *Mux) probeRound() {
	type probe struct {
		shard int
		sub   *shardSub
		nonce int64
		cmd   *redis.IntCmd
	}
	var out []probe
	type silent struct{ shard, channels int }
	var quiet []silent
	now := time.Now()
	x.mu.Lock()
	for shard, sub := range x.shards {
		switch {
		case sub.nonce == 0 && !sub.armed && now.Sub(sub.opened) < x.probe.Wait:
			// not confirmed yet: give its subscription time
		case sub.nonce == 0:
			x.nonce++
			sub.nonce, sub.sentAt = x.nonce, time.Time{}
			out = append(out, probe{shard: shard, sub: sub, nonce: x.nonce})
		case !sub.firstAt().IsZero() && now.Sub(sub.firstAt()) >= x.probe.Wait &&
			now.Sub(time.Unix(0, sub.seen.Load())) >= x.probe.Wait:
			quiet = append(quiet, silent{shard, len(sub.channels)})
			x.reopen(shard, sub)
		case !sub.sentAt.IsZero() && now.Sub(sub.sentAt) >= x.probe.Every &&
			now.Sub(time.Unix(0, sub.seen.Load())) < x.probe.Wait:
			// overdue on a connection that hands messages on: behind a
			// backlog, or lost (echoed tells which); probed again after
			// Every, not Wait (a probe comes back within a millisecond):
			// a loss is caught up within about two rounds (chaos re-runs
			// at Wait: 3.5 to 5 s late), and a backlog costs one probe a
			// round
			if sub.overdue == 0 {
				sub.overdue, sub.overdueAt = sub.nonce, sub.sentAt
			}
			x.nonce++
			sub.nonce, sub.sentAt = x.nonce, time.Time{}
			out = append(out, probe{shard: shard, sub: sub, nonce: x.nonce})
		}
	}
	x.mu.Unlock()
	if x.probe.Silent != nil {
		for _, q := range quiet {
			x.probe.Silent(q.shard, q.channels)
		}
	}
	if len(out) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), x.probe.Wait)
	defer cancel()
	p := x.client.Pipeline()
	for i := range out {
		nonce := strconv.FormatInt(out[i].nonce, 10)
		c := redis.NewIntCmd(ctx, "PUBLISH", out[i].sub.probeCh, nonce)
		if x.sharded {
			c = redis.NewIntCmd(ctx, "EVAL", probeLua, 1, out[i].sub.probeCh, nonce)
		}
		p.Process(ctx, c)
		out[i].cmd = c
	}
	p.Exec(ctx) // each command's error is its own
	x.probes.Add(int64(len(out)))
	answered := time.Now()
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, o := range out {
		if o.sub.nonce != o.nonce {
			continue // came back already, or the connection was replaced
		}
		if o.cmd.Err() != nil {
			o.sub.nonce = 0 // proves nothing: the next round tries again
		} else {
			o.sub.sentAt = answered
		}
	}
}
