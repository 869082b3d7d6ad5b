// Package webhooks delivers the webhook outbox (issue 16 item 6): the
// dispatcher every instance runs, and the dead-letter queue the admin
// routes read (deadletter.Queue). The outbox itself is written by the
// rooms' scripts (store/internal/roomlua/lua/prelude.lua emit) and the
// sessions' (store/sessions/lua: session_open, session_close) in the slot
// of the shard the event belongs to; this package reads it
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
// its shard's outbox stream in the script that makes it (store/internal/roomlua/lua/
// prelude.lua emit), and every online-status change its user shard's
// (session_open.lua, session_close.lua), so nothing committed is lost. A Dispatcher on
// every instance reads each shard's outbox and deliveries streams through
// the consumer group "wh" (consumer: the instance id), so each entry goes
// to one instance at a time:
//
//   - outbox → deliveries: webhook_fanout.lua turns an outbox entry into one
//     delivery per endpoint that wants its type and acknowledges and
//     deletes the entry, in one script: one endpoint's failure never
//     re-sends to another. An endpoint whose backlog in the shard (its
//     deliveries in the stream and in the retries) has reached MaxBacklog
//     gets none while another endpoint in force has room: the event goes
//     to the dead letters for it, untried, its lastError saying why
//     (ErrBacklogFull), replayable as any. With every endpoint in force
//     at its bound the entry stays in the outbox, and the round stops
//     there, in order, until one has room (fanout.go).
//   - deliveries → the endpoint: a bounded pool of workers sends each
//     (Config.Send); success acknowledges and deletes it; a failure moves it
//     (webhook_fail.lua) to the retry zset, due after an exponential backoff
//     with full jitter, its retry count one higher, or after MaxAttempts
//     tries to the dead-letter stream (capped MAXLEN ~ DeadMaxLen).
//   - retry zset → deliveries: webhook_due.lua, when due.
//   - an entry another consumer read and never settled (it crashed) is
//     taken over with XAUTOCLAIM after ClaimIdle: delivery is at least once.
//
// Run is continuous: the pool (Workers sends at most, to one endpoint all
// but one for each other endpoint, half at least, a worker kept for each endpoint with none in flight,
// one send at a time to an endpoint whose last try failed: see pool)
// lives across rounds, and a round never waits for the sends it started,
// so endpoints answering at their timeout hold their own workers, never
// the reading nor the other endpoints' deliveries. What waits in memory
// is bounded: a delivery read when the pool has no room to send it (its
// endpoint at its share, or every worker busy) waits there
// (32·Workers in all, 16·Workers for one endpoint, ClaimIdle/2 after it was
// read at most); one with no room to wait, or dropped after that time,
// stays pending for this consumer, unsent. Each round scans the consumer's
// pending deliveries of every shard (XREADGROUP from the id where the last
// round stopped, 4·Workers at a time; the embedded store returns them all
// at once) and takes those the pool has room for; then, while the pool has
// room, abandoned entries (XAUTOCLAIM) and new ones, 4·Workers of them, are
// read and taken likewise, wherever the scan is: a new delivery to a
// healthy endpoint never waits for the scan to pass a long list of
// deliveries to one the pool has no room for. What this instance holds
// pending is bounded by the deliveries stream (MaxDeliveries, plus
// MaxBacklog for each endpoint at its bound). A read resets an entry's
// idle time (Redis and the embedded store alike: the
// scan, XREADGROUP and XAUTOCLAIM; the scan's reset, a read of pending
// entries, is not replicated: after a failover what this instance holds
// looks idle since it first read it, and another instance may take it over
// at once, while this one sends it: a duplicate, at least once still): an
// entry this instance holds stays its own as long as the scan passes it
// within ClaimIdle (4·Workers entries a shard a round; after a round that
// took nothing, the next waits Poll or a worker falling idle); one not
// passed in time (a pending list of many thousands the pool has no room
// for) is taken over by the first XAUTOCLAIM to find it idle (another
// instance's, or this one's), and the instance that took it sends it. A
// send starts within ClaimIdle/2 of this instance's read of its entry, so
// it has ended (bounded by the sender's timeout, ClaimIdle/6 in realsyncd)
// before another instance could claim it; and never while the delivery's
// send runs or waits already, nor once it ended: a scan or this instance's
// own XAUTOCLAIM reading it again is skipped, and so is an entry a read
// returned before its send, ending meanwhile, settled it (the read's copy
// is stale). The deliveries stream keeps its bound: the entries held
// pending are in it.
//
// Keys (all of a shard's slot): {p:s}:webhooks (outbox, MAXLEN ~
// WebhookOutboxLen, entries deleted once fanned out: the cap only bounds a
// backlog no instance dispatches), {p:s}:webhooks:deliveries (entries
// deleted once settled), {p:s}:webhooks:retries (members leave when due),
// {p:s}:webhooks:dead (MAXLEN ~ DeadMaxLen), {p:s}:webhooks:backlog (a
// hash, endpoint → its deliveries and retries in the shard: a field is
// deleted at 0, the hash once the shard's deliveries and retries are
// empty; a count gone astray (a delivery deleted by hand, one settled by
// an instance that does not count, deliveries written before the hash
// existed) is repaired by the next recount, every RecountEvery, see
// Dispatcher.recount), {p:s}:webhooks:recount (a hash: the recount's walk,
// its cursors (the last retry walked, a copy of its member, then the last
// delivery) and counts, expiring a minute after its last step, or its
// pause, expiring after RecountEvery), {p:s}:webhooks:recount:checks (the
// recounts whose counts added up since the last walk: deleted when a walk
// ends, so a forced walk every instance left is walked again; expiring
// 2·RecountWalkEvery·RecountEvery after the last recount that checked).

// group is the consumer group of every instance on the outbox and
// deliveries streams.
const group = "wh"

// ErrBacklogFull starts the lastError of a delivery that went to the dead
// letters untried because its endpoint's backlog in the shard was at
// Config.MaxBacklog (the bound follows it: "… (10000 deliveries pending or
// retrying in its shard)").
const ErrBacklogFull = "not sent: the endpoint's backlog is full"

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
	// WebhookDeliveredAfter is, with a try delivered, how long after its
	// event was written to the outbox (the outbox entry's id: Redis' clock,
	// Config.Now's against it), retries included; not called for a
	// replayed dead letter (its time is the dead letter's wait, no
	// measure of delivery).
	WebhookDeliveredAfter(endpoint string, d time.Duration)
	// WebhookRefused counts a delivery to endpoint that went to the dead
	// letters untried, the endpoint's backlog in its shard at MaxBacklog
	// (and another endpoint's under it: see Config.MaxBacklog).
	// endpoint is one of the endpoints in force (Config.Endpoints,
	// SetEndpoints).
	WebhookRefused(endpoint string)
	// WebhookEndpoints is called with the ids of the endpoints put in
	// force (New, SetEndpoints), before any other call names them: an
	// observer starts each one's series (at 0, so that its first
	// refusal is an increase) and drops those of endpoints no longer in
	// force that WebhookBacklog set.
	WebhookEndpoints(ids []string)
	// WebhookBacklog is, every Config.BacklogEvery (at a round's end), the
	// backlog of each endpoint in force (its deliveries pending or
	// retrying, as counted) in the shard where it is largest, the figure
	// MaxBacklog is checked against (0: none in any shard). It is read
	// from Redis, the same figure on every instance. An endpoint that
	// WebhookEndpoints has since removed may still be named.
	WebhookBacklog(backlogs map[string]int64)
	// WebhookLag is, once per round (back to back while Run has work, every
	// Poll when idle), the age of the oldest outbox entry the
	// round read or left waiting (deliveries full, or every endpoint at
	// its backlog bound) over every shard; 0
	// when it found every outbox empty.
	WebhookLag(d time.Duration)
	// WebhookDeliveryLag is, with WebhookBacklog, how long the delivery
	// at the head of any shard's deliveries stream has waited there (since
	// its fan-out, its return from the retries or its replay; its try under
	// way, or waiting for a worker), read from Redis: the same on every
	// instance; 0 when they are empty. A retry waiting out its backoff is
	// not counted (WebhookBacklog counts it).
	// WebhookLag stops at the fan-out: an endpoint one try at a time
	// behind kept it at 0 while its deliveries waited 29 minutes (a
	// soak's find).
	WebhookDeliveryLag(d time.Duration)
}

// Config configures a Dispatcher. Zero values take the defaults
// documented on each field.
type Config struct {
	// Endpoints are the endpoints at start (SetEndpoints replaces them).
	Endpoints []Endpoint
	// Send delivers one try; an error (or a panic-free timeout inside it)
	// is a failed try. It must bound its own time (an HTTP client timeout).
	// An error with a method Answered() bool answering true says the
	// endpoint is up and refused this delivery (a 4xx: retried as any
	// failure, but the endpoint is not sent one try at a time for it).
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
	// taken over by another (XAUTOCLAIM); default 1 min. Must exceed twice
	// the sender's timeout: a send starts up to ClaimIdle/2 after the read
	// of its entry, and must have ended before another instance may take
	// the entry over (realsyncd: 6 times).
	ClaimIdle time.Duration
	// DeadMaxLen caps each shard's dead-letter stream (MAXLEN ~); default 10000.
	DeadMaxLen int
	// DeadMaxBytes bounds each shard's dead letters by their size too:
	// a letter of S bytes (its event, endpoint, error...) trims the stream
	// to DeadMaxBytes / S letters when that is fewer than DeadMaxLen, so
	// that events a player can make large (a state patch, up to 96 KiB)
	// cannot fill Redis while an endpoint is down (a tester's find: 10 000
	// letters of 32 KiB patches, 320 MiB a shard); default 16 MiB.
	DeadMaxBytes int
	// MaxDeliveries bounds each shard's deliveries stream, the deliveries
	// of endpoints whose backlog is at MaxBacklog aside while another
	// endpoint in force is not (each of those holds MaxBacklog at most):
	// a round fans out no more outbox entries than leave the rest at most
	// this long (each instance may add one round's fan-out, 256 entries
	// times the endpoints wanting them, past it). While deliveries run
	// behind (every endpoint's, or those of endpoints under their bound),
	// the backlog waits in the outbox, capped MAXLEN ~ (oldest dropped),
	// where the lag metric sees it; default 10000.
	MaxDeliveries int
	// MaxBacklog bounds one endpoint's backlog in a shard: its deliveries
	// in the deliveries stream (pending, in flight) and in the retries;
	// the fan-out never takes it past (a replay neither). An event fanned
	// out while its endpoint's backlog is at the bound, and another
	// endpoint in force has room, goes to the dead letters for that
	// endpoint, untried (0 attempts), its lastError ErrBacklogFull's text,
	// and Metrics.WebhookRefused counts it; the other endpoints get
	// theirs. So a dead or slow endpoint's backlog, which leaves only as
	// each try times out, never holds the others' events in the outbox.
	// When every endpoint in force is at its bound in a shard (the only
	// one is down), the shard's events wait in the outbox instead, in
	// order, none refused, until one has room (see fanoutShard: until
	// 2026-12-07 the round that brought the last one to its bound, and
	// each round after its backlog dipped below it, refused the rest of
	// what it read). Default and at most MaxDeliveries (a larger
	// bound would let one endpoint's deliveries fill the stream before
	// they count as its own). A dead letter's replay keeps it too
	// (NewDeadLetters: give it this Config).
	MaxBacklog int
	// RecountEvery is the pause between two recounts of a shard's
	// backlog counts (MaxBacklog is checked against them) from what its
	// deliveries and retries hold, cluster-wide: a count gone astray is
	// repaired within it and a walk of the deliveries (RecountStep a
	// round, by every instance); default a minute, at least a millisecond.
	RecountEvery time.Duration
	// RecountStep is how many entries (retries, then deliveries) a
	// round's step of a recount walks at most (a script: its time, about
	// 3 µs an entry of a small event, every client of the shard's Redis
	// waiting; a step also stops once it has read about 1 MiB of them,
	// recountStepBytes); default 1000.
	RecountStep int
	// RecountWalkEvery: a recount whose counts add up to the deliveries
	// and retries held walks them anyway every this many recounts, for
	// counts gone astray one way for an endpoint and the other way for
	// another, which add up: repaired within RecountWalkEvery·RecountEvery
	// and a walk; default 60 (an hour: a walk costs about 3 µs an entry
	// of Redis time, in steps of RecountStep, and such drift is rare: a
	// rolling upgrade, a hand edit). A forced walk left unfinished (every
	// instance stopped) is walked by the next recount.
	RecountWalkEvery int
	// BacklogEvery is how often a round reads every shard's backlog
	// counts (one HGETALL a shard, pipelined) for Metrics.WebhookBacklog;
	// default 5 s.
	BacklogEvery time.Duration
	// ConsumerIdle is how long another instance's consumer of a stream,
	// holding no entry, stays in the group (an instance that died); the
	// sweep that removes such consumers runs that often; default 10
	// minutes.
	ConsumerIdle time.Duration
	// Poll is the pause between rounds that started nothing (cut short
	// when a send ends); default 250 ms.
	Poll time.Duration
	// ShutdownWait bounds how long Run, its ctx ended, waits for the sends
	// in flight to end and settle before it cuts them (their deliveries
	// stay pending for another instance); default 5 s.
	ShutdownWait time.Duration
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
	if c.DeadMaxBytes <= 0 {
		c.DeadMaxBytes = 16 << 20
	}
	if c.MaxDeliveries <= 0 {
		c.MaxDeliveries = 10000
	}
	if c.MaxBacklog <= 0 || c.MaxBacklog > c.MaxDeliveries {
		c.MaxBacklog = c.MaxDeliveries
	}
	if c.ConsumerIdle <= 0 {
		c.ConsumerIdle = 10 * time.Minute
	}
	if c.RecountEvery < time.Millisecond {
		c.RecountEvery = time.Minute
	}
	if c.RecountStep <= 0 {
		c.RecountStep = 1000
	}
	if c.RecountWalkEvery <= 0 {
		c.RecountWalkEvery = 60
	}
	if c.Poll <= 0 {
		c.Poll = 250 * time.Millisecond
	}
	if c.BacklogEvery <= 0 {
		c.BacklogEvery = 5 * time.Second
	}
	if c.ShutdownWait <= 0 {
		c.ShutdownWait = 5 * time.Second
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
	group map[string]bool   // streams whose group exists
	scan  map[int]string    // per shard: the last pending delivery the scan passed
	claim map[string]string // per stream: where the next XAUTOCLAIM starts
	held  map[int]bool      // per shard: outbox entries pending for this consumer, left by a round (fanoutShard)
	pool  *pool
	// backlogAt is when the last round read the backlogs for
	// Metrics.WebhookBacklog (d.mu)
	backlogAt time.Time
	// sweptAt is when the last round swept the streams' consumers
	// (sweepConsumers; d.mu)
	sweptAt time.Time
	// refusedErr is the lastError of a delivery refused for its
	// endpoint's backlog.
	refusedErr string
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
	d := &Dispatcher{b: b, cfg: cfg, group: map[string]bool{}, scan: map[int]string{}, claim: map[string]string{}, held: map[int]bool{}, pool: newPool(cfg.Workers, cfg.ClaimIdle),
		refusedErr: fmt.Sprintf("%s (%d deliveries pending or retrying in its shard)", ErrBacklogFull, cfg.MaxBacklog)}
	d.SetEndpoints(cfg.Endpoints)
	return d, nil
}

// SetEndpoints puts eps in force (the endpoints file reloaded): events
// fanned out from now on go to the endpoints of eps that want them; a
// pending delivery to an endpoint no longer in eps fails its tries (and
// ends in the dead letters), one to an endpoint still there is sent as it
// is now configured.
//
// Metrics.WebhookEndpoints learns the ids of eps (New calls it too), so
// every endpoint of the file has its series from the file's load on.
func (d *Dispatcher) SetEndpoints(eps []Endpoint) {
	e := &endpoints{list: slices.Clone(eps), byID: make(map[string]Endpoint, len(eps))}
	ids := make([]string, 0, len(eps))
	for _, ep := range eps {
		e.byID[ep.ID] = ep
		ids = append(ids, ep.ID)
	}
	d.eps.Store(e)
	d.pool.setEndpoints(ids)
	if d.cfg.Metrics != nil {
		d.cfg.Metrics.WebhookEndpoints(ids)
	}
}

// Run dispatches until ctx ends, continuously: a round reads and starts
// what it can and the next one follows at once, while the sends it started
// run (a slow endpoint's sends hold their workers, never the reading); it
// pauses Poll, or until a worker falls idle, after a round that took
// nothing (or failed: reported to onErr, which may be nil), though its
// scan of the pending deliveries has not reached their end (the next
// round goes on from where it stopped): a pending list the pool has no
// room for is read 4·Workers entries a shard a Poll, not over and over
// back to back. Once ctx ends
// it starts nothing more (the sends waiting in the pool are dropped) and
// waits up to ShutdownWait for the sends in flight to end and settle;
// those still running then are cut and left pending in the consumer
// group, as every delivery read and not sent is, for another instance to
// take over after ClaimIdle. Then it removes its consumer from the
// streams where it holds nothing (see consumers.go), within leaveWait.
func (d *Dispatcher) Run(ctx context.Context, onErr func(error)) {
	sendCtx, cut := context.WithCancel(context.WithoutCancel(ctx))
	defer cut()
	report := func(err error) {
		if err != nil && onErr != nil && ctx.Err() == nil {
			onErr(err)
		}
	}
	for ctx.Err() == nil {
		n, err := d.round(ctx, sendCtx)
		report(errors.Join(append([]error{err}, d.pool.takeErrs()...)...))
		if n == 0 || err != nil {
			select {
			case <-ctx.Done():
			case <-d.pool.freed:
			case <-time.After(d.cfg.Poll):
			}
		}
	}
	d.pool.dropWaiting()
	ended := make(chan struct{})
	go func() { d.pool.wg.Wait(); close(ended) }()
	select {
	case <-ended:
	case <-time.After(d.cfg.ShutdownWait):
		cut()
		<-ended
	}
	leaveCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), leaveWait)
	defer cancel()
	if err := d.leave(leaveCtx); err != nil && onErr != nil {
		onErr(err)
	}
}

// leaveWait bounds Run's removal of its consumer (leave) as it stops.
const leaveWait = 2 * time.Second

// Step runs one round over every shard (see round) and then waits for
// every send in flight to end and settle: a deterministic round for tests
// and benchmarks (Run does not wait). It returns the number of entries the
// round handled (retries moved, outbox entries fanned out, deliveries
// started), and the errors of the round and of the sends.
func (d *Dispatcher) Step(ctx context.Context) (int, error) {
	n, err := d.round(ctx, ctx)
	d.pool.wg.Wait()
	return n, errors.Join(append([]error{err}, d.pool.takeErrs()...)...)
}

// round runs one round over every shard: due retries back into
// deliveries, the outbox fanned out (its abandoned entries claimed first),
// then this consumer's pending deliveries scanned from where the last
// round left off and those the pool has room for taken (sent, or waiting
// in it); then, if the pool has room, new deliveries (abandoned ones
// claimed first) are read and taken likewise. A delivery
// the pool has no room for stays pending for this consumer and a later
// scan takes it (see pool). Sends run with sendCtx, settled after the
// round returns. n counts the entries handled (retries moved, outbox
// entries fanned out, deliveries taken).
func (d *Dispatcher) round(ctx, sendCtx context.Context) (n int, err error) {
	var errs []error
	var lag time.Duration
	for shard := range d.b.Shards {
		h, l, err := d.roundShard(ctx, sendCtx, shard)
		n += h
		lag = max(lag, l)
		if err != nil {
			errs = append(errs, fmt.Errorf("webhooks shard %d: %w", shard, err))
		}
		if err := d.recount(ctx, shard); err != nil {
			errs = append(errs, fmt.Errorf("webhooks shard %d: the backlog's recount: %w", shard, err))
		}
	}
	if err := d.sweepConsumers(ctx); err != nil {
		errs = append(errs, err)
	}
	if d.cfg.Metrics != nil {
		d.cfg.Metrics.WebhookLag(lag)
		if err := d.reportBacklog(ctx); err != nil {
			errs = append(errs, fmt.Errorf("webhooks: the backlogs' gauge: %w", err))
		}
	}
	return n, errors.Join(errs...)
}

// reportBacklog gives Metrics.WebhookBacklog each endpoint in force's
// backlog in its fullest shard, and Metrics.WebhookDeliveryLag the wait
// of the deliveries streams' heads, once BacklogEvery has passed since
// the last report: one pipelined HGETALL of every shard's backlog hash (a
// field per endpoint with deliveries there) and XRANGE of its first
// delivery. The fullest shard's is the
// figure the fan-out checks MaxBacklog against, so its gauge over the
// bound says how close the endpoint's first refusal is; a sum over the
// shards would not (it may be several times the bound before any).
func (d *Dispatcher) reportBacklog(ctx context.Context) error {
	if !d.due(&d.backlogAt, d.cfg.BacklogEvery) {
		return nil
	}
	k := keys{d.b}
	cmds := make([]*redis.MapStringStringCmd, d.b.Shards)
	oldest := make([]*redis.XMessageSliceCmd, d.b.Shards)
	_, err := d.b.Client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for sh := range cmds {
			cmds[sh] = p.HGetAll(ctx, k.backlog(sh))
			oldest[sh] = p.XRangeN(ctx, k.deliveries(sh), "-", "+", 1)
		}
		return nil
	})
	if err != nil {
		return redisx.Wrap(err)
	}
	eps := d.eps.Load().list
	out := make(map[string]int64, len(eps))
	for _, ep := range eps {
		out[ep.ID] = 0
	}
	for _, c := range cmds {
		for ep, v := range c.Val() {
			if cur, ok := out[ep]; ok {
				n, _ := strconv.ParseInt(v, 10, 64)
				out[ep] = max(cur, n)
			}
		}
	}
	d.cfg.Metrics.WebhookBacklog(out)
	var lag time.Duration
	for _, c := range oldest {
		for _, e := range c.Val() {
			// the delivery's own id: when it entered the stream (its
			// fan-out, its return from the retries, its replay), so that
			// the stream's head is the longest waiting, a backoff's wait
			// is no lag, and a replayed dead letter does not read as its
			// event's age (a reviewer's finds, with the event's time)
			lag = max(lag, d.age(e.ID))
		}
	}
	d.cfg.Metrics.WebhookDeliveryLag(lag)
	return nil
}

// deadCap is the dead letters' bound of every shard.
func (d *Dispatcher) deadCap() deadCap { return deadCap{d.cfg.DeadMaxLen, d.cfg.DeadMaxBytes} }

// age is how long ago, by Config.Now, the stream entry id was added.
func (d *Dispatcher) age(id string) time.Duration {
	ms, _, _ := strings.Cut(id, "-")
	t, err := strconv.ParseInt(ms, 10, 64)
	if err != nil {
		return 0
	}
	return max(d.cfg.Now().Sub(time.UnixMilli(t)), 0)
}

// roundShard runs round over one shard, its sends started in d.pool with
// sendCtx; lag is the age of the oldest outbox entry it read, or left
// there for want of room (0: none; see fanoutShard).
func (d *Dispatcher) roundShard(ctx, sendCtx context.Context, shard int) (int, time.Duration, error) {
	k := keys{d.b}
	dels := k.deliveries(shard)
	now := d.cfg.Now()
	moved, err := d.b.Runner.Run(ctx, dueCall{retries: k.retries(shard), deliveries: dels, recount: k.recount(shard),
		nowMs: now.UnixMilli(), limit: 256}).Int()
	if err != nil {
		return 0, 0, redisx.Wrap(err)
	}
	fanned, lag, err := d.fanoutShard(ctx, shard)
	handled := moved + fanned
	if err != nil {
		return handled, lag, err
	}
	count := int64(d.cfg.Workers) * 4
	// this consumer's pending deliveries, from where the last scan stopped
	if err := d.ensureGroup(ctx, dels); err != nil {
		return handled, lag, err
	}
	d.mu.Lock()
	from := d.scan[shard]
	d.mu.Unlock()
	if from == "" {
		from = "0-0"
	}
	d.pool.mark()
	res, err := d.b.Client.XReadGroup(ctx, &redis.XReadGroupArgs{Group: group, Consumer: d.cfg.Consumer,
		Streams: []string{dels, from}, Count: count, Block: -1}).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return handled, lag, redisx.Wrap(d.groupLost(dels, err))
	}
	var pending []redis.XMessage
	for _, r := range res {
		pending = append(pending, r.Messages...)
	}
	next := "0-0"
	if int64(len(pending)) >= count {
		next = pending[len(pending)-1].ID
	}
	d.mu.Lock()
	d.scan[shard] = next
	d.mu.Unlock()
	handled += d.startAll(ctx, sendCtx, shard, dels, pending)
	if !d.pool.hasRoom() {
		return handled, lag, nil
	}
	d.pool.mark()
	todo, err := d.read(ctx, dels, count)
	if err != nil {
		return handled, lag, err
	}
	return handled + d.startAll(ctx, sendCtx, shard, dels, todo), lag, nil
}

// recountWalkTTL is how long a recount's walk left by every instance
// (each round steps it) lasts before another may start.
const recountWalkTTL = time.Minute

// recountStepBytes is how many bytes of entries (retry members, delivery
// fields) a recount step reads at most, give or take 16 entries: a step's
// time follows the bytes it reads, and an entry holds its event (a state
// change up to some 80 KiB), so RecountStep entries alone let one script
// read 80 MB (about 700 ms, every client of the shard's Redis waiting,
// measured on a loaded 2-core machine, 2026-11-30). 1 MiB is about the
// 1 000 entries of small events a step reads.
const recountStepBytes = 1 << 20

// recount runs a step of shard's backlog recount (webhook_recount.lua):
// each round of every instance walks the next RecountStep entries of the
// recount under way, the shard's retries first, then its deliveries, or
// starts one once RecountEvery has passed since the last one ended, if
// the counts do not add up to the deliveries and retries held, or every
// RecountWalkEvery-th time they do; the step that reaches the
// deliveries' end replaces the backlog counts with what the retries and
// deliveries hold. The walk is exact though its steps are apart: a
// retry or delivery that moves meanwhile is added to or taken off the
// walk's counts by the script that moves it (fail, due, settle) when it
// is at or before the walk's cursor (see webhook_recount.lua). So a
// count gone astray (a delivery deleted by hand, one settled by an
// instance that does not count, one written before the counts) refuses
// a healthy endpoint for RecountEvery and a walk at most, where it
// lasted until the shard's deliveries and retries were empty at once,
// which a busy shard's never are; and counts gone astray that cancel out
// over the endpoints (one +5, another -5: they add up) for
// RecountWalkEvery·RecountEvery and a walk at most, where they lasted as
// long. A forced walk that every instance left (the walk expired after
// recountWalkTTL) keeps its turn: the recount after it walks again. That
// walk costs a shard a step of at most RecountStep entries (1 000: about
// 3 ms of Redis for deliveries, a little more for retries) and about
// recountStepBytes of them (large events) each round until the end,
// every RecountWalkEvery pauses; no step's work grows with the backlog
// nor with its events' size: until 2026-11-30 the last step counted the retries
// whole, one script (about 1.5 µs each: 45 ms for the 30 000 of 3 dead
// endpoints at the default bound, a stall of every client of the
// shard's Redis; see BenchmarkRecountWalk).
func (d *Dispatcher) recount(ctx context.Context, shard int) error {
	_, err := d.recountStep(ctx, shard)
	return err
}

// recountStep is recount, also returning the entries (retries and
// deliveries) its script read: at most RecountStep.
func (d *Dispatcher) recountStep(ctx context.Context, shard int) (int, error) {
	k := keys{d.b}
	out, err := d.b.Runner.Run(ctx, recountCall{deliveries: k.deliveries(shard), retries: k.retries(shard),
		backlog: k.backlog(shard), recount: k.recount(shard), checks: k.recountChecks(shard), step: d.cfg.RecountStep,
		stepBytes: recountStepBytes, ttlMs: recountWalkTTL.Milliseconds(), pauseMs: d.cfg.RecountEvery.Milliseconds(),
		walkEvery: d.cfg.RecountWalkEvery, checksTTLMs: 2 * int64(d.cfg.RecountWalkEvery) * d.cfg.RecountEvery.Milliseconds()}).Int64Slice()
	if err != nil {
		return 0, redisx.Wrap(err)
	}
	if len(out) != 2 {
		return 0, fmt.Errorf("webhook_recount: unexpected reply %v", out)
	}
	return int(out[1]), nil
}

// startAll (until ctx ends) gives the pool the sends of the delivery
// entries es of shard and returns how many it took; the others stay
// pending for this consumer. An entry deleted while pending (read back
// without its fields) is acknowledged: there is nothing left to send.
func (d *Dispatcher) startAll(ctx, sendCtx context.Context, shard int, dels string, es []redis.XMessage) int {
	n := 0
	for _, e := range es {
		if len(e.Values) == 0 {
			d.b.Client.XAck(sendCtx, dels, group, e.ID) //nolint:errcheck // the next scan tries again
			continue
		}
		ep, _ := e.Values["e"].(string)
		if d.pool.start(ctx, strconv.Itoa(shard)+"/"+e.ID, ep, func() (bool, error) { return d.deliver(sendCtx, shard, e) }) {
			n++
		}
	}
	return n
}

// read returns up to count entries of stream for this consumer: first those
// consumers left unsettled past ClaimIdle (XAUTOCLAIM), then new ones. The
// XAUTOCLAIM goes on from where the last one of stream stopped (back to
// the start once it reached the end): one looks at 10·count pending
// entries at most (Redis 7), so starting from the first every time it
// never reached the entries of a dead instance pending behind hundreds
// that live ones hold.
func (d *Dispatcher) read(ctx context.Context, stream string, count int64) ([]redis.XMessage, error) {
	if err := d.ensureGroup(ctx, stream); err != nil {
		return nil, err
	}
	c := d.b.Client
	d.mu.Lock()
	from := d.claim[stream]
	d.mu.Unlock()
	if from == "" {
		from = "0-0"
	}
	claimed, next, err := c.XAutoClaim(ctx, &redis.XAutoClaimArgs{Stream: stream, Group: group,
		MinIdle: d.cfg.ClaimIdle, Start: from, Count: count, Consumer: d.cfg.Consumer}).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, redisx.Wrap(d.groupLost(stream, err))
	}
	d.mu.Lock()
	d.claim[stream] = next
	d.mu.Unlock()
	if int64(len(claimed)) >= count {
		return claimed, nil
	}
	res, err := c.XReadGroup(ctx, &redis.XReadGroupArgs{Group: group, Consumer: d.cfg.Consumer,
		Streams: []string{stream, ">"}, Count: count - int64(len(claimed)), Block: -1}).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return claimed, redisx.Wrap(d.groupLost(stream, err))
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

// groupLost returns err, and when it says the group of stream does not
// exist (NOGROUP: the stream was deleted, by hand, or with everything by
// a Redis restarted without persistence; a script writing to it made it
// again, without a group) forgets that it was created, and where the
// stream's XAUTOCLAIM was, so the next round creates it again: the
// dispatcher read nothing of that stream again until it restarted.
func (d *Dispatcher) groupLost(stream string, err error) error {
	if redis.HasErrorPrefix(err, "NOGROUP") {
		d.mu.Lock()
		delete(d.group, stream)
		delete(d.claim, stream)
		d.mu.Unlock()
	}
	return err
}

// deliver sends one delivery entry and settles it: up says whether the
// endpoint showed itself up (it took the try, or refused it answering: see
// Config.Send; a try cut by ctx, shutting down, says true: it says nothing
// of the endpoint), err whether the settling failed.
func (d *Dispatcher) deliver(ctx context.Context, shard int, e redis.XMessage) (up bool, err error) {
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
		// a script, not MULTI: a full Redis refuses whatever a MULTI
		// queues, and a delivery left pending is sent again
		err := d.b.Runner.Run(ctx, settleCall{deliveries: dels, backlog: k.backlog(shard), retries: k.retries(shard), recount: k.recount(shard), entry: e.ID}).Err()
		if err == nil && d.cfg.Metrics != nil {
			d.cfg.Metrics.WebhookDelivered(wd.Endpoint, "delivered")
			if at, ok := outboxTime(wd.MessageID); ok && str("r") == "" {
				d.cfg.Metrics.WebhookDeliveredAfter(wd.Endpoint, max(0, d.cfg.Now().Sub(at))) // 0: clocks apart
			}
		}
		return true, redisx.Wrap(err)
	}
	if ctx.Err() != nil { // shutting down: leave it pending for XAUTOCLAIM
		return true, nil
	}
	due := d.cfg.Now().Add(d.backoff(n + 1))
	out, err := d.b.Runner.Run(ctx, failCall{deliveries: dels, retries: k.retries(shard), dead: k.dead(shard), backlog: k.backlog(shard), recount: k.recount(shard),
		entry: e.ID, dueMs: due.UnixMilli(), maxAttempts: d.cfg.MaxAttempts, deadCap: d.deadCap(),
		nowMs: d.cfg.Now().UnixMilli(), lastErr: truncate(sendErr.Error(), 512)}).Text()
	up = answered(sendErr)
	if err != nil {
		return up, redisx.Wrap(err)
	}
	if d.cfg.Metrics != nil && out != "gone" {
		d.cfg.Metrics.WebhookDelivered(wd.Endpoint, out)
	}
	return up, nil
}

// outboxTime is when the event of a delivery's message id
// ("msg_<shard>_<outbox entry id>") was written to its outbox: the entry
// id's milliseconds, Redis' clock.
func outboxTime(messageID string) (time.Time, bool) {
	id := messageID[strings.LastIndexByte(messageID, '_')+1:]
	ms, err := strconv.ParseInt(id[:max(0, strings.IndexByte(id, '-'))], 10, 64)
	return time.UnixMilli(ms), err == nil
}

// answered says whether a failed try's err says the endpoint is up (it
// answered, refusing this delivery: Config.Send).
func answered(err error) bool {
	var a interface{ Answered() bool }
	return errors.As(err, &a) && a.Answered()
}

// due says whether every has passed since *at (d.mu), and if so sets it
// to now.
func (d *Dispatcher) due(at *time.Time, every time.Duration) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if time.Since(*at) < every {
		return false
	}
	*at = time.Now()
	return true
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
