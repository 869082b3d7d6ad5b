// Package webhooks delivers the webhook outbox (issue 16 item 6): the
// dispatcher every instance runs, and the dead-letter queue the admin
// routes read (deadletter.Queue). The outbox itself is written by the
// root store's scripts (lua/prelude.lua emit, session_open/session_close)
// in the slot of the shard the event belongs to; this package reads it
// through its own scripts (lua/), built on redisx.Base as every store
// package is.
package webhooks

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/store/internal/redisx"
)

// With the root store's Config.WebhookOutboxLen > 0 every room event enters
// its shard's outbox stream in the script that makes it (store/lua/
// prelude.lua emit), and every online-status change its user shard's
// (session_open.lua, session_close.lua), so nothing committed is lost. A Dispatcher on
// every instance reads each shard's outbox and deliveries streams through
// the consumer group "wh" (consumer: the instance id), so each entry goes
// to one instance at a time:
//
//   - outbox → deliveries: webhook_fanout.lua turns an outbox entry into one
//     delivery per endpoint that wants its type and acknowledges and
//     deletes the entry, in one script: one endpoint's failure never
//     re-sends to another.
//   - deliveries → the endpoint: a bounded pool of workers sends each
//     (Config.Send); success acknowledges and deletes it; a failure moves it
//     (webhook_fail.lua) to the retry zset, due after an exponential backoff
//     with full jitter, its retry count one higher, or after MaxAttempts
//     tries to the dead-letter stream (capped MAXLEN ~ DeadMaxLen).
//   - retry zset → deliveries: webhook_due.lua, when due.
//   - an entry another consumer read and never settled (it crashed) is
//     taken over with XAUTOCLAIM after ClaimIdle: delivery is at least once.
//
// Keys (all of a shard's slot): {p:s}:webhooks (outbox, MAXLEN ~
// WebhookOutboxLen, entries deleted once fanned out: the cap only bounds a
// backlog no instance dispatches), {p:s}:webhooks:deliveries (entries
// deleted once settled), {p:s}:webhooks:retries (members leave when due),
// {p:s}:webhooks:dead (MAXLEN ~ DeadMaxLen).

// group is the consumer group of every instance on the outbox and
// deliveries streams.
const group = "wh"

// Endpoint is one configured endpoint as the dispatcher sees it: its id
// and the event types it wants ("*": all).
type Endpoint struct {
	ID     string
	Events []string
}

// wants says whether ep receives events of type t.
func (ep Endpoint) wants(t string) bool {
	for _, e := range ep.Events {
		if e == "*" || e == t {
			return true
		}
	}
	return false
}

// Delivery is one try of one event to one endpoint.
type Delivery struct {
	// MessageID is the event's id, the same for every endpoint and every
	// try (the Standard Webhooks webhook-id): "msg_<shard>_<outbox id>".
	MessageID string
	Endpoint  string
	Type      string
	// Event is the event's JSON (a room event as the SSE stream carries
	// it, or a user status event).
	Event []byte
	// RetryCount is the number of failed tries before this one.
	RetryCount int
}

// Metrics counts what the dispatcher does; nil: none.
type Metrics interface {
	// WebhookDelivered counts a try by outcome: "delivered", "retry", "dead".
	WebhookDelivered(endpoint, outcome string)
	// WebhookLag is, once per round, the age of the oldest outbox entry the
	// round read or left waiting (deliveries full) over every shard; 0
	// when it found every outbox empty.
	WebhookLag(d time.Duration)
}

// Config configures a Dispatcher. Zero values take the defaults
// documented on each field.
type Config struct {
	// Endpoints are the endpoints at start (SetEndpoints replaces them).
	Endpoints []Endpoint
	// Send delivers one try; an error (or a panic-free timeout inside it)
	// is a failed try. It must bound its own time (an HTTP client timeout).
	Send func(ctx context.Context, d Delivery) error
	// Consumer names this instance in the consumer groups (instance id).
	Consumer string
	// MaxAttempts tries before a delivery is dead-lettered; default 8.
	MaxAttempts int
	// BackoffBase and BackoffMax: the n-th retry waits a uniform random
	// time in [0, min(BackoffBase·2^(n-1), BackoffMax)); defaults 1 s, 10 min.
	BackoffBase, BackoffMax time.Duration
	// Workers bounds the concurrent sends of this instance; default 8.
	Workers int
	// ClaimIdle: an entry read by a consumer and unsettled for this long is
	// taken over by another (XAUTOCLAIM); default 1 min. Must exceed the
	// sender's timeout.
	ClaimIdle time.Duration
	// DeadMaxLen caps each shard's dead-letter stream (MAXLEN ~); default 10000.
	DeadMaxLen int
	// MaxDeliveries bounds each shard's deliveries stream: a round fans out
	// no more outbox entries than leave it at most this long (each instance
	// may add one round's fan-out, 256 entries times the endpoints wanting
	// them, past it). While deliveries run behind, the backlog waits in the
	// outbox, capped MAXLEN ~ (oldest dropped), where the lag metric sees
	// it; default 10000.
	MaxDeliveries int
	// Poll is the pause between rounds that found nothing; default 250 ms.
	Poll time.Duration
	// Now is the clock of backoff and due times; default time.Now. Tests
	// inject one to run hours of failures without sleeping.
	Now func() time.Time
	// Jitter returns a uniform value in [0, 1); default math/rand/v2.
	Jitter  func() float64
	Metrics Metrics
}

func (c Config) withDefaults() Config {
	if c.MaxAttempts <= 0 {
		c.MaxAttempts = 8
	}
	if c.BackoffBase <= 0 {
		c.BackoffBase = time.Second
	}
	if c.BackoffMax <= 0 {
		c.BackoffMax = 10 * time.Minute
	}
	if c.Workers <= 0 {
		c.Workers = 8
	}
	if c.ClaimIdle <= 0 {
		c.ClaimIdle = time.Minute
	}
	if c.DeadMaxLen <= 0 {
		c.DeadMaxLen = 10000
	}
	if c.MaxDeliveries <= 0 {
		c.MaxDeliveries = 10000
	}
	if c.Poll <= 0 {
		c.Poll = 250 * time.Millisecond
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Jitter == nil {
		c.Jitter = rand.Float64
	}
	return c
}

// Dispatcher delivers the webhook outbox of every shard. Safe for
// concurrent use; Run it once per instance.
type Dispatcher struct {
	b     *redisx.Base
	cfg   Config
	eps   atomic.Pointer[endpoints] // replaced whole by SetEndpoints
	mu    sync.Mutex
	group map[string]bool // streams whose group exists
}

// endpoints are the endpoints in force, as listed and by id.
type endpoints struct {
	list []Endpoint
	byID map[string]Endpoint
}

// New returns the dispatcher of b's shards: cmd/ wires it with the root
// store's Base when the store writes the outbox (WebhookOutboxLen > 0).
func New(b *redisx.Base, cfg Config) (*Dispatcher, error) {
	if cfg.Send == nil || cfg.Consumer == "" {
		return nil, errors.New("webhooks: Send and Consumer are required")
	}
	cfg = cfg.withDefaults()
	d := &Dispatcher{b: b, cfg: cfg, group: map[string]bool{}}
	d.SetEndpoints(cfg.Endpoints)
	return d, nil
}

// SetEndpoints puts eps in force (the endpoints file reloaded): events
// fanned out from now on go to the endpoints of eps that want them; a
// pending delivery to an endpoint no longer in eps fails its tries (and
// ends in the dead letters), one to an endpoint still there is sent as it
// is now configured.
func (d *Dispatcher) SetEndpoints(eps []Endpoint) {
	e := &endpoints{list: slices.Clone(eps), byID: make(map[string]Endpoint, len(eps))}
	for _, ep := range eps {
		e.byID[ep.ID] = ep
	}
	d.eps.Store(e)
}

// Run dispatches until ctx ends, pausing Poll after a round with nothing
// to do or an error (reported to onErr, which may be nil).
func (d *Dispatcher) Run(ctx context.Context, onErr func(error)) {
	for ctx.Err() == nil {
		n, err := d.Step(ctx)
		if err != nil && onErr != nil && ctx.Err() == nil {
			onErr(err)
		}
		if n == 0 || err != nil {
			select {
			case <-ctx.Done():
			case <-time.After(d.cfg.Poll):
			}
		}
	}
}

// Step runs one round over every shard: due retries back into deliveries,
// the outbox fanned out (its abandoned entries claimed first), then the
// deliveries read (abandoned ones claimed) and sent, every shard's at
// once, by at most Workers at a time and at most half of them (one at
// least) to one endpoint, each settled. It returns the number of entries
// it handled once every send it started has ended: a slow endpoint holds
// the round for its timeout once, not once a shard, and never every
// worker.
func (d *Dispatcher) Step(ctx context.Context) (int, error) {
	total := 0
	var errs []error
	var lag time.Duration
	s := d.newSends()
	for shard := range d.b.Shards {
		n, l, err := d.stepShard(ctx, shard, s)
		total += n
		lag = max(lag, l)
		if err != nil {
			errs = append(errs, fmt.Errorf("webhooks shard %d: %w", shard, err))
		}
	}
	errs = append(errs, s.wait()...)
	if d.cfg.Metrics != nil {
		d.cfg.Metrics.WebhookLag(lag)
	}
	return total, errors.Join(errs...)
}

// sends are a round's sends in flight: Workers at most, and at most
// perEndpoint of them to one endpoint.
type sends struct {
	workers     chan struct{}
	perEndpoint int
	mu          sync.Mutex
	endpoints   map[string]chan struct{}
	wg          sync.WaitGroup
	errs        []error
}

func (d *Dispatcher) newSends() *sends {
	return &sends{workers: make(chan struct{}, d.cfg.Workers), perEndpoint: max(d.cfg.Workers/2, 1),
		endpoints: map[string]chan struct{}{}}
}

// start runs send for a delivery to endpoint once the endpoint and a
// worker are free (in that order: a delivery waiting for its endpoint
// holds no worker).
func (s *sends) start(endpoint string, send func() error) {
	s.mu.Lock()
	ep := s.endpoints[endpoint]
	if ep == nil {
		ep = make(chan struct{}, s.perEndpoint)
		s.endpoints[endpoint] = ep
	}
	s.mu.Unlock()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		ep <- struct{}{}
		s.workers <- struct{}{}
		err := send()
		<-s.workers
		<-ep
		if err != nil {
			s.mu.Lock()
			s.errs = append(s.errs, err)
			s.mu.Unlock()
		}
	}()
}

// wait waits for every send started and returns their errors.
func (s *sends) wait() []error {
	s.wg.Wait()
	return s.errs
}

// age is how long ago, by Config.Now, the stream entry id was added.
func (d *Dispatcher) age(id string) time.Duration {
	ms, _, _ := strings.Cut(id, "-")
	t, err := strconv.ParseInt(ms, 10, 64)
	if err != nil {
		return 0
	}
	return max(d.cfg.Now().Sub(time.UnixMilli(t)), 0)
}

// stepShard runs Step's round over one shard, its sends started in s;
// lag is the age of the oldest outbox entry it read, or left there for
// want of room in the deliveries (0: none).
func (d *Dispatcher) stepShard(ctx context.Context, shard int, s *sends) (int, time.Duration, error) {
	k := keys{d.b}
	outbox, dels := k.outbox(shard), k.deliveries(shard)
	now := d.cfg.Now()
	moved, err := d.b.Runner.Run(ctx, dueCall{retries: k.retries(shard), deliveries: dels,
		nowMs: now.UnixMilli(), limit: 256}).Int()
	if err != nil {
		return 0, 0, redisx.Wrap(err)
	}
	handled := moved
	queued, err := d.b.Client.XLen(ctx, dels).Result()
	if err != nil {
		return handled, 0, redisx.Wrap(err)
	}
	var entries []redis.XMessage
	var lag time.Duration
	if room := int64(d.cfg.MaxDeliveries) - queued; room > 0 {
		if entries, err = d.read(ctx, outbox, min(room, 256)); err != nil {
			return handled, 0, err
		}
		if len(entries) > 0 {
			lag = d.age(entries[0].ID)
		}
	} else { // the backlog waits in the outbox: its oldest entry's age
		first, err := d.b.Client.XRangeN(ctx, outbox, "-", "+", 1).Result()
		if err != nil {
			return handled, 0, redisx.Wrap(err)
		}
		if len(first) > 0 {
			lag = d.age(first[0].ID)
		}
	}
	for _, e := range entries {
		t, _ := e.Values["t"].(string)
		var want []string
		for _, ep := range d.eps.Load().list {
			if ep.wants(t) {
				want = append(want, ep.ID)
			}
		}
		call := fanoutCall{outbox: outbox, deliveries: dels, entry: e.ID,
			message: "msg_" + strconv.Itoa(shard) + "_" + e.ID, endpoints: want}
		if err := d.b.Runner.Run(ctx, call).Err(); err != nil {
			return handled, lag, redisx.Wrap(err)
		}
		handled++
	}
	todo, err := d.read(ctx, dels, int64(d.cfg.Workers)*4)
	if err != nil {
		return handled, lag, err
	}
	for _, e := range todo {
		ep, _ := e.Values["e"].(string)
		s.start(ep, func() error { return d.deliver(ctx, shard, e) })
	}
	return handled + len(todo), lag, nil
}

// read returns up to count entries of stream for this consumer: first those
// other consumers left unsettled past ClaimIdle (XAUTOCLAIM), then new ones.
func (d *Dispatcher) read(ctx context.Context, stream string, count int64) ([]redis.XMessage, error) {
	if err := d.ensureGroup(ctx, stream); err != nil {
		return nil, err
	}
	c := d.b.Client
	claimed, _, err := c.XAutoClaim(ctx, &redis.XAutoClaimArgs{Stream: stream, Group: group,
		MinIdle: d.cfg.ClaimIdle, Start: "0-0", Count: count, Consumer: d.cfg.Consumer}).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, redisx.Wrap(err)
	}
	if int64(len(claimed)) >= count {
		return claimed, nil
	}
	res, err := c.XReadGroup(ctx, &redis.XReadGroupArgs{Group: group, Consumer: d.cfg.Consumer,
		Streams: []string{stream, ">"}, Count: count - int64(len(claimed)), Block: -1}).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return claimed, redisx.Wrap(err)
	}
	for _, r := range res {
		claimed = append(claimed, r.Messages...)
	}
	return claimed, nil
}

// ensureGroup creates the group of stream (and the stream) once.
func (d *Dispatcher) ensureGroup(ctx context.Context, stream string) error {
	d.mu.Lock()
	ok := d.group[stream]
	d.mu.Unlock()
	if ok {
		return nil
	}
	err := d.b.Client.XGroupCreateMkStream(ctx, stream, group, "0").Err()
	if err != nil && !strings.Contains(err.Error(), "BUSYGROUP") {
		return redisx.Wrap(err)
	}
	d.mu.Lock()
	d.group[stream] = true
	d.mu.Unlock()
	return nil
}

// deliver sends one delivery entry and settles it.
func (d *Dispatcher) deliver(ctx context.Context, shard int, e redis.XMessage) error {
	str := func(f string) string { v, _ := e.Values[f].(string); return v }
	n, _ := strconv.Atoi(str("n"))
	wd := Delivery{MessageID: str("m"), Endpoint: str("e"), Type: str("t"), Event: []byte(str("d")), RetryCount: n}
	k := keys{d.b}
	dels := k.deliveries(shard)
	var sendErr error
	if _, ok := d.eps.Load().byID[wd.Endpoint]; !ok {
		sendErr = fmt.Errorf("endpoint %q is no longer configured", wd.Endpoint)
	} else {
		sendErr = d.cfg.Send(ctx, wd)
	}
	if sendErr == nil {
		_, err := d.b.Client.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.XAck(ctx, dels, group, e.ID)
			p.XDel(ctx, dels, e.ID)
			return nil
		})
		if err == nil && d.cfg.Metrics != nil {
			d.cfg.Metrics.WebhookDelivered(wd.Endpoint, "delivered")
		}
		return redisx.Wrap(err)
	}
	if ctx.Err() != nil { // shutting down: leave it pending for XAUTOCLAIM
		return nil
	}
	due := d.cfg.Now().Add(d.backoff(n + 1))
	out, err := d.b.Runner.Run(ctx, failCall{deliveries: dels, retries: k.retries(shard), dead: k.dead(shard),
		entry: e.ID, dueMs: due.UnixMilli(), maxAttempts: d.cfg.MaxAttempts, deadMaxLen: d.cfg.DeadMaxLen,
		nowMs: d.cfg.Now().UnixMilli(), lastErr: truncate(sendErr.Error(), 512)}).Text()
	if err != nil {
		return redisx.Wrap(err)
	}
	if d.cfg.Metrics != nil && out != "gone" {
		d.cfg.Metrics.WebhookDelivered(wd.Endpoint, out)
	}
	return nil
}

// backoff is the wait before the retry-th retry: full jitter over an
// exponential ceiling, min(BackoffBase·2^(retry-1), BackoffMax).
func (d *Dispatcher) backoff(retry int) time.Duration {
	ceil := d.cfg.BackoffMax
	if retry-1 < 40 {
		if c := d.cfg.BackoffBase << (retry - 1); c > 0 && c < ceil {
			ceil = c
		}
	}
	return time.Duration(d.cfg.Jitter() * float64(ceil))
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
