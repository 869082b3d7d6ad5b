// Package batch is a go-redis hook that sends concurrent script runs,
// room reads and their transactions bound for the same Redis node in one
// pipeline (issue 15 item 2).
package batch

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/internal/growstack"
	"github.com/realsync/realsync/store/internal/redisx"
)

// Config sends concurrent script runs bound for the same Redis node in
// one pipeline, so that under load a node reads and answers many scripts
// per round trip (one read and one write system call each side) instead of
// one: the server approaches Redis' pipelined rate rather than its
// one-command-per-round-trip rate (docs/BENCHMARKS.md, "Pipelining scripts
// per node").
//
// It is a go-redis hook on the store's client, so every caller (Script.Run,
// TxPipelined, a runner handed s.client) is batched without knowing it.
// Batched are single script runs (EVAL, EVALSHA, their _RO forms, FCALL,
// FCALL_RO); transactions made of script runs and the hash reads a room
// read sends (HGETALL, HKEYS, HMGET): a script with the room read after it
// (runThenRead), or a room read alone (readRoom, GET room); and pipelines
// of reads alone (those, ZRANGE, ZSCAN and HSCAN: a list's index ranges,
// then its rooms; the matchers' lists of modes; the repair walk's pages).
// Every other command and pipeline goes to Redis as before. The reader
// client of browsing reads (store/internal/conn/replicas.go) has a Batcher of its own, so its
// batches go where its reads would (replicas when so configured).
//
// A lane holds the calls bound for one place: the script runs for one node
// (standalone and embedded: the one server; Cluster: the master of the
// first key's slot), the read pipelines for one node (the same; go-redis
// routes each command of the batch's pipeline to its own slot's node, or a
// replica of it on the reader client), or the transactions for one slot (a
// Cluster refuses a transaction over several slots; standalone and
// embedded: one lane; transactions that only read have lanes of their
// own). A lane sends one batch at a time: a call that finds its lane idle leaves at
// once (after Window, when set); calls that arrive while a batch is out
// wait for it to return and then leave together, up to MaxSize per batch.
// Script runs leave in one pipeline, each with its own reply and error (a
// NOSCRIPT is that command's alone, so Script.Run's EVAL fallback works per
// caller); the transactions of a batch leave as one MULTI/EXEC, which keeps
// each of them atomic, and each caller gets its own commands' replies and
// first error. A batch that fails in transport fails the callers whose
// commands had no reply yet; a command's error reply is its caller's only.
// On a Cluster the pipelines are go-redis' own, which follow MOVED and ASK
// as for an unbatched call; a batch holding a script run sent once (any
// but a redisx.ReadOnly or Idempotent one: redisx.sentOnce) is not sent
// again after a transport failure, as such a run alone is not. Only a batch that timed out fails the calls queued behind it (the
// node does not answer); after any other failure they leave in the next
// batch, on another connection.
//
// A caller whose context ends is answered at once with its error when its
// command has not left yet: the command is dropped, and the error says so
// (redisx.NeverSent). A caller whose command has left waits for Redis'
// answer (see callSent), which the batch's pipeline waits for until the
// latest deadline of its callers' contexts (latest).
//
// A script run inside Watch (an optimistic transaction on a connection of
// its own) must not be batched: it would leave on another connection. The
// store runs none; pass Unbatched(ctx) to one that would.
type Config struct {
	// Window is how long a call that finds its lane idle waits for others
	// before leaving: 0 (natural batching) sends it at once, and batches
	// form only from the calls that arrive while a batch is out.
	Window time.Duration
	// MaxSize bounds the calls (script runs or transactions) of one batch;
	// default DefaultMaxSize.
	MaxSize int
}

// DefaultMaxSize bounds a batch: 128 joins take Redis about 10 ms, so
// a larger batch would only lengthen the wait of its first caller.
const DefaultMaxSize = 128

// errBatcherClosed answers a call that arrives after Close.
var errBatcherClosed = fmt.Errorf("batch: closed: %w", redis.ErrClosed)

// batchCtx marks the context of a batch's own pipeline, and of calls that
// must not be batched.
type batchCtx struct{}

// Unbatched returns ctx with batching off for the calls made with it.
func Unbatched(ctx context.Context) context.Context {
	return context.WithValue(ctx, batchCtx{}, true)
}

// Batcher is the go-redis hook that batches; see Config.
type Batcher struct {
	client  redis.UniversalClient
	cluster *redis.ClusterClient // nil: one node
	window  time.Duration
	max     int
	observe func(kind string, size int)

	mu      sync.Mutex
	lanes   map[laneName]*lane
	closed  bool
	closing chan struct{} // closed by Close: cuts a Window short
	running sync.WaitGroup
}

var _ redis.Hook = (*Batcher)(nil)

// lane is the queue of one node's script runs or read pipelines, or of one
// slot's transactions.
type lane struct {
	kind    string  // laneScript, laneRead or laneTx
	pending []*call // guarded by Batcher.mu
	busy    bool    // a flush goroutine serves the lane
	full    chan struct{}
	// sentAt is when the batch out was sent (zero: none out); guarded by
	// Batcher.mu. A batch out for longer than stalledBatch has met a node
	// that does not answer: calls then go alone rather than queue behind
	// it (see run).
	sentAt time.Time
}

// stalledBatch is how long a batch may be out before the calls that come
// after it stop waiting for it: far longer than a healthy batch takes
// (128 joins, about 10 ms of Redis time), far shorter than a read
// timeout, so a call to a node that stopped answering waits for its own
// timeout only, not for the batch's first.
const stalledBatch = 500 * time.Millisecond

// call is one caller's command, or the commands of one transaction.
type call struct {
	cmds  []redis.Cmder // the caller's commands, sent as they are: only once the caller may no longer give up (callSent)
	state atomic.Int32  // callWaiting, callSent, callAnswered or callAbandoned
	done  chan struct{} // closed once answered
	err   error         // the first error of cmds, for the hook to return
	// deadline is the caller's context's (zero: none): a batch is given
	// the latest of its calls' (send)
	deadline time.Time
}

// A call waits in its lane until a batch takes it (sent) or its caller
// gives up (abandoned: never sent); a sent call is answered with Redis'
// replies, and its caller waits for them whatever its context says, for
// Redis may have run it: a caller told "canceled" must be able to trust
// that nothing happened (an opening that took a stream's place cleans up
// only what it knows it took).
const (
	callWaiting int32 = iota
	callSent
	callAnswered
	callAbandoned
)

// New batches the script runs of client; install it with AddHook
// before any other hook, so a batch's pipeline is observed by them once.
func New(client redis.UniversalClient, cfg Config, observe func(string, int)) *Batcher {
	if cfg.MaxSize <= 0 {
		cfg.MaxSize = DefaultMaxSize
	}
	if observe == nil {
		observe = func(string, int) {}
	}
	b := &Batcher{client: client, window: cfg.Window, max: cfg.MaxSize, observe: observe,
		lanes: map[laneName]*lane{}, closing: make(chan struct{})}
	b.cluster, _ = client.(*redis.ClusterClient)
	return b
}

func (b *Batcher) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook batches single script runs.
func (b *Batcher) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if ctx.Value(batchCtx{}) != nil {
			return next(ctx, cmd)
		}
		c, key, ok := newCall([]redis.Cmder{cmd}, callScript)
		if !ok {
			return next(ctx, cmd)
		}
		if err := b.run(ctx, b.nodeLane(ctx, laneScript, key), c); err != errStalled {
			return err
		}
		return next(ctx, cmd)
	}
}

// ProcessPipelineHook batches transactions of script runs and room reads
// (go-redis hands a transaction over with its MULTI and EXEC), and
// pipelines of reads alone.
func (b *Batcher) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if ctx.Value(batchCtx{}) != nil || len(cmds) == 0 {
			return next(ctx, cmds)
		}
		if len(cmds) >= 3 && cmds[0].Name() == "multi" && cmds[len(cmds)-1].Name() == "exec" {
			c, key, ok := newCall(cmds[1:len(cmds)-1], callTx)
			if !ok {
				return next(ctx, cmds)
			}
			if err := b.run(ctx, b.txLane(ctx, key, c.runsScript()), c); err != errStalled {
				return err
			}
			return next(ctx, cmds)
		}
		c, key, ok := newCall(cmds, callReads)
		if !ok {
			return next(ctx, cmds)
		}
		if err := b.run(ctx, b.nodeLane(ctx, laneRead, key), c); err != errStalled {
			return err
		}
		return next(ctx, cmds)
	}
}

// The kinds of lanes, as BatchMetrics names their batches.
const (
	laneScript = "script"      // script runs in one pipeline, to one node
	laneRead   = "read"        // pipelines of reads in one pipeline, led to one node
	laneTx     = "transaction" // transactions in one MULTI/EXEC, on one slot
)

// nodeLane is the lane of kind for the node that serves key (the master
// of its slot: on the reader client go-redis still sends each read of the
// batch to a replica of it when so configured).
func (b *Batcher) nodeLane(ctx context.Context, kind, key string) *lane {
	patient := redisx.IsPatient(ctx)
	if b.cluster != nil && key != "" {
		if n, err := b.cluster.MasterForKey(ctx, key); err == nil {
			return b.lane(kind, n.Options().Addr, patient)
		}
	}
	return b.lane(kind, "", patient)
}

// txLane is the lane of key's slot (of its hash tag, which decides it),
// for transactions that run a script, or for those that only read: a room
// read never waits for a batch of scripts to come back.
func (b *Batcher) txLane(ctx context.Context, key string, script bool) *lane {
	place := "r"
	if script {
		place = "s"
	}
	if b.cluster != nil {
		place += hashTag(key)
	}
	return b.lane(laneTx, place, redisx.IsPatient(ctx))
}

// laneName names a lane in Batcher.lanes. The calls of a patient context
// (redisx.Patient: a stream's opening, bounded by redisx.OpeningBound)
// have lanes of their own: a batch's pipeline ends at its callers' latest
// deadline (latest), so a call of the client's own bound (3 s) batched
// with one of 24 s would wait for a node that stopped answering eight
// times as long as its bound.
type laneName struct {
	kind, place string
	patient     bool
}

func (b *Batcher) lane(kind, place string, patient bool) *lane {
	b.mu.Lock()
	defer b.mu.Unlock()
	name := laneName{kind, place, patient}
	l := b.lanes[name]
	if l == nil {
		l = &lane{kind: kind, full: make(chan struct{}, 1)}
		b.lanes[name] = l
	}
	return l
}

// hashTag is the part of key that decides its Cluster slot.
func hashTag(key string) string {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			return key[i+1 : i+1+j]
		}
	}
	return key
}

// errStalled: the lane's batch out has stalled; the call goes alone.
var errStalled = errors.New("batch: stalled")

// run queues c on l and waits for its answer, or for ctx to end while c
// is still queued (once sent, for its answer: see callSent);
// errStalled, with c untouched, when the lane's batch out has been out
// longer than stalledBatch (the caller sends c alone).
func (b *Batcher) run(ctx context.Context, l *lane, c *call) error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return c.fail(errBatcherClosed)
	}
	if !l.sentAt.IsZero() && time.Since(l.sentAt) > stalledBatch {
		b.mu.Unlock()
		return errStalled
	}
	c.deadline, _ = ctx.Deadline()
	l.pending = append(l.pending, c)
	start, full := !l.busy, len(l.pending) >= b.max
	if start {
		l.busy = true
		b.running.Add(1)
	}
	b.mu.Unlock()
	if start {
		go b.flush(l)
	} else if full {
		select {
		case l.full <- struct{}{}:
		default:
		}
	}
	select {
	case <-c.done:
		return c.err
	case <-ctx.Done():
		if c.state.CompareAndSwap(callWaiting, callAbandoned) {
			return c.fail(redisx.GaveUp(ctx.Err())) // never sent: nothing ran
		}
		// sent (or answered) meanwhile: Redis may have run it, so its
		// answer is awaited (within the client's read timeout), not
		// guessed
		<-c.done
		return c.err
	}
}

// flush sends l's batches until l is empty; one goroutine per busy lane.
func (b *Batcher) flush(l *lane) {
	defer b.running.Done()
	growstack.Grow() // started for the lane's batches, which go deep at once
	if b.window > 0 {
		b.linger(l)
	}
	for {
		b.mu.Lock()
		n := min(len(l.pending), b.max)
		if n == 0 {
			l.busy = false
			b.mu.Unlock()
			return
		}
		batch := slices.Clone(l.pending[:n])
		l.pending = slices.Delete(l.pending, 0, n)
		l.sentAt = time.Now()
		b.mu.Unlock()
		err := b.send(l, batch)
		b.mu.Lock()
		l.sentAt = time.Time{}
		var behind []*call
		if timedOut(err) {
			// the node did not answer: the calls queued behind the batch
			// would wait as long again for the same answer; they get it
			// now (a connection reset or a refused dial fails fast: they go)
			behind, l.pending = l.pending, nil
		}
		b.mu.Unlock()
		for _, c := range behind {
			c.answer(err, false)
		}
	}
}

// linger waits Window for more calls, less when the batch fills or the
// Batcher closes.
func (b *Batcher) linger(l *lane) {
	b.mu.Lock()
	full := len(l.pending) >= b.max
	b.mu.Unlock()
	if full {
		return
	}
	t := time.NewTimer(b.window)
	defer t.Stop()
	select {
	case <-t.C:
	case <-l.full:
	case <-b.closing:
	}
}

// send sends the calls of batch that still wait (from then on their
// callers wait for the answer), and answers them; returns the pipeline's
// error.
func (b *Batcher) send(l *lane, batch []*call) error {
	live := batch[:0]
	for _, c := range batch {
		if c.state.CompareAndSwap(callWaiting, callSent) {
			live = append(live, c)
		}
	}
	if len(live) == 0 {
		return nil
	}
	ctx := Unbatched(context.Background())
	if d, ok := latest(live); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, d)
		defer cancel()
	}
	var p redis.Pipeliner
	if l.kind == laneTx {
		p = b.client.TxPipeline()
	} else {
		p = b.client.Pipeline()
	}
	for _, c := range live {
		for _, cmd := range c.cmds {
			_ = p.Process(ctx, cmd)
		}
	}
	_, err := p.Exec(ctx)
	b.observe(l.kind, len(live))
	for _, c := range live {
		c.answer(err, true)
	}
	return err
}

// latest is the latest deadline of calls, false when one has none. A
// batch ends by it (on a client with ContextTimeoutEnabled): no caller
// waits for a batch, once sent, past the end of every caller's context
// in it, and a batch of calls that all have a deadline (the store's
// callers, each bounded by redisx.Bound) is not waited for longer than
// its latest. A call whose own deadline is earlier still waits for the
// batch's answer (see callSent), at most until that latest one: within
// the client's bound (redisx.Bound), since calls with a longer bound of
// their own (redisx.Patient) have lanes of their own (laneName).
func latest(calls []*call) (time.Time, bool) {
	var d time.Time
	for _, c := range calls {
		if c.deadline.IsZero() {
			return time.Time{}, false
		}
		if c.deadline.After(d) {
			d = c.deadline
		}
	}
	return d, true
}

// Close stops taking calls, sends the ones queued, and returns once every
// batch has been answered. Calls after it fail with redis.ErrClosed.
func (b *Batcher) Close() {
	b.mu.Lock()
	if !b.closed {
		b.closed = true
		close(b.closing)
	}
	b.mu.Unlock()
	b.running.Wait()
}

// What newCall is asked to make a call of.
type callShape int

const (
	callScript callShape = iota // one command, batched when it runs a script
	callTx                      // a transaction's commands: script runs and hash reads
	callReads                   // a plain pipeline's commands: reads alone
)

// newCall makes the call of cmds when they can be batched as shape says:
// one script run; a transaction's script runs and hash reads (HGETALL,
// HKEYS, HMGET), every key of one hash tag (a transaction over several
// slots would fail the whole batch on a Cluster); or a pipeline of reads
// (those, ZRANGE, ZSCAN and HSCAN), of any keys. key is the first key of the first
// command (of its first script in a transaction), which names the lane.
func newCall(cmds []redis.Cmder, shape callShape) (c *call, key string, ok bool) {
	c = &call{cmds: cmds, done: make(chan struct{})}
	tag, tagged := "", false
	sameTag := func(k any) bool {
		if shape != callTx {
			return true
		}
		t := hashTag(keyString(k))
		if !tagged {
			tag, tagged = t, true
		}
		return t == tag
	}
	readKey := ""
	for _, cmd := range cmds {
		args := cmd.Args()
		switch name := cmd.Name(); name {
		case "eval", "evalsha", "eval_ro", "evalsha_ro", "fcall", "fcall_ro":
			if _, isCmd := redisx.AsCmd(cmd); !isCmd || len(args) < 3 || shape == callReads {
				return nil, "", false
			}
			n, _ := strconv.Atoi(keyString(args[2]))
			if n > len(args)-3 {
				return nil, "", false
			}
			if n > 0 {
				cmd.SetFirstKeyPos(3) // go-redis' EvalSha and FCall do too: where the batch routes it
				if key == "" {
					key = keyString(args[3])
				}
			}
			for _, k := range args[3 : 3+n] {
				if !sameTag(k) {
					return nil, "", false
				}
			}
			ok = true
		case "hgetall", "hkeys", "hmget", "zrange", "zscan", "hscan":
			hashRead := name == "hgetall" || name == "hkeys" || name == "hmget"
			if shape == callScript || len(args) != readArity(name, len(args)) ||
				(!hashRead && shape != callReads) || !sameTag(args[1]) {
				return nil, "", false
			}
			if !replyTyped(cmd) {
				return nil, "", false
			}
			if readKey == "" {
				readKey = keyString(args[1])
			}
			ok = ok || shape != callScript
		default:
			return nil, "", false
		}
	}
	if key == "" {
		key = readKey
	}
	return c, key, ok
}

// readArity is the argument count a read of name with n arguments must
// have to be batched (its key, then its fields or range), n when any is fine.
func readArity(name string, n int) int {
	switch name {
	case "hgetall", "hkeys":
		return 2
	case "hmget":
		return max(n, 3)
	case "zscan", "hscan":
		return max(n, 3) // key cursor [options]
	}
	return max(n, 4) // zrange key start stop [options]
}

// runsScript reports whether one of c's commands runs a script.
func (c *call) runsScript() bool {
	for _, cmd := range c.cmds {
		if _, ok := redisx.AsCmd(cmd); ok {
			return true
		}
	}
	return false
}

// keyString is a command argument as a string (keys and numbers are passed
// as strings).
func keyString(a any) string {
	if s, ok := a.(string); ok {
		return s
	}
	return fmt.Sprint(a)
}

// replyTyped says whether cmd is of a read type the Batcher takes (its
// reply keeps its type on the way: no generic reply to convert).
func replyTyped(cmd redis.Cmder) bool {
	switch cmd.(type) {
	case *redis.StringSliceCmd, *redis.MapStringStringCmd, *redis.ZSliceCmd, *redis.ScanCmd:
		return true
	}
	return false
}

// answer gives the caller the replies of its commands, unless it gave up
// before it was sent. A call sent gets each command's own error: go-redis
// sets it on every command a failure reached (a transport failure on the
// commands of its node, an error reply on its own command); batchErr, what
// the batch's Exec returned, is the first error of any command, maybe
// another caller's (a TRYAGAIN of another slot, a dial to another node),
// and given to this one it would send again a script that ran
// (redisx.NotSent). A call never sent gets batchErr on each command.
func (c *call) answer(batchErr error, sent bool) {
	if !c.state.CompareAndSwap(callSent, callAnswered) && !c.state.CompareAndSwap(callWaiting, callAnswered) {
		return
	}
	for _, cmd := range c.cmds {
		err := cmd.Err()
		if !sent {
			err = batchErr
		}
		if err != nil {
			cmd.SetErr(err)
			if c.err == nil {
				c.err = err
			}
		}
	}
	close(c.done)
}

// fail answers the caller with err alone; only its own goroutine calls it,
// once no batch will write to its commands.
func (c *call) fail(err error) error {
	for _, cmd := range c.cmds {
		cmd.SetErr(err)
	}
	return err
}

// BusyLanes is how many lanes have a goroutine sending (0 once idle or
// closed).
func (b *Batcher) BusyLanes() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for _, l := range b.lanes {
		if l.busy {
			n++
		}
	}
	return n
}

// timedOut: err is a reply, or a pooled connection, that did not come in
// time.
func timedOut(err error) bool {
	ne, ok := errors.AsType[net.Error](err)
	return ok && ne.Timeout() || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, redis.ErrPoolTimeout)
}
