// Package janitor runs the store's upkeep on a schedule: every interval,
// each instance visits each shard whose janitor lease it wins (one instance
// per shard per interval), the shards at once, and a visit runs the
// store's tasks on the shard in order (the root store's: lapsed presences,
// room lifecycles, sessions, holdings, the repair walk; those with a
// schedule only when it holds work), each reporting what it did. The leases of an
// instance that stopped or lapsed are released (Release) so that a live
// instance takes its shards at once. What a task does is its own package's
// concern; the janitor owns the schedule, the leases and the report.
package janitor

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/store/internal/redisx"
)

// Report counts what a visit did, by kind (each task's kinds: the root
// store's Report documents them); kinds with nothing done are absent.
type Report map[string]int

// Add counts n of kind (nothing when n ≤ 0).
func (r Report) Add(kind string, n int) {
	if n > 0 {
		r[kind] += n
	}
}

// Task is one kind of upkeep of a shard.
type Task struct {
	// Run does it, given the lease the visit holds (a task bounds its own
	// work by a share of it); it adds what it did to rep, also when it
	// returns an error, which ends the visit.
	Run func(ctx context.Context, shard int, lease time.Duration, rep Report) error
	// Due, when set, is the shard's key that holds Run's work, in the
	// lease's slot: a sorted set scored by when each member is due (ms;
	// due when its score is at most this instance's clock, as Run reads
	// it), or with List a list (work when not empty). A visit runs Run
	// only when the key held work as it took the lease (the lease's
	// script looks: an idle shard's visit is one call, batched with the
	// other shards') or an earlier task of the visit did something
	// (reported it: that may have given Run work); what falls due
	// otherwise waits for the next visit. Unset: Run runs on every visit.
	Due  func(shard int) string
	List bool
}

// Config is what a Janitor runs.
type Config struct {
	// Base runs the lease scripts (its Shards: the shards visited).
	Base *redisx.Base
	// Lease is shard's janitor lease key; Schedule a key of the shard
	// that a visit may write out of memory (its presence schedule: see
	// lua/janitor_lease.lua).
	Lease, Schedule func(shard int) string
	// Tick runs beside each round's visits (checks of Redis itself,
	// configuration rereads), one at a time; checks it starts beside it
	// are added to the group the janitor waits for when it ends. nil:
	// none.
	Tick func(ctx context.Context, checks *sync.WaitGroup, log *slog.Logger)
	// Tasks run in order on every shard visited.
	Tasks []Task
	// Actions, when set, is told what each visit did (kind, count), by
	// visits of several shards at once: it must be safe for concurrent use.
	Actions func(kind string, n int)
	// Peers, when set, is how many instances run janitors, this one
	// included (the instance registry's live count), read beside each
	// round's visits (the last count is used). With more than one, an
	// instance that took a shard's lease yieldAfter rounds in a row does
	// not try it the next round, so that another instance takes it: a
	// lease lapses before its holder's next round, which its holder would
	// otherwise win every time, and the visits of all the shards would
	// stay with the first instance to take them. nil: one instance.
	Peers func(ctx context.Context) (int, error)
}

// yieldAfter is how many rounds in a row an instance among others visits
// a shard before it leaves the shard's next round to them (Config.Peers).
const yieldAfter = 8

// Janitor visits shards; safe for concurrent use.
type Janitor struct{ cfg Config }

// New returns a janitor of cfg.
func New(cfg Config) *Janitor { return &Janitor{cfg: cfg} }

// Run visits, every interval until ctx ends, each shard whose lease
// instance wins (for 7/8 of the interval: leaseOf), but, among other
// instances (Config.Peers), not a shard it visited yieldAfter rounds in a
// row, which it leaves to them for a round; failures are logged.
// The shards are visited at once, so that their lease scripts bound for
// one node share its round trips, and their tasks run at most
// visitsPerNode at a time on one node: a visit that waits (its master hung
// or failing over, each call bounded by its own deadline) holds up no
// other node's, nor another shard's beyond one of its node's places, and a
// shard whose last visit has not ended is passed over until it has.
// cfg.Tick runs beside the visits, one at a time (a tick that has not
// ended is not started again). It returns once ctx ended and the visits,
// the ticks and the checks they started have ended too.
func (j *Janitor) Run(ctx context.Context, instance string, interval time.Duration, log *slog.Logger) {
	t := time.NewTicker(interval)
	defer t.Stop()
	var checks, visits sync.WaitGroup
	defer checks.Wait()
	defer visits.Wait() // first: a tick may still add checks
	var ticking, counting atomic.Bool
	busy := make([]atomic.Bool, j.cfg.Base.Shards) // a visit of the shard runs
	// the rounds in a row this instance took the shard's lease, and the
	// instances running janitors as last read (Config.Peers)
	streak := make([]atomic.Int32, j.cfg.Base.Shards)
	var peers atomic.Int64
	peers.Store(1)
	places := map[string]chan struct{}{} // by node (Base.MasterAddr)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if j.cfg.Tick != nil && ticking.CompareAndSwap(false, true) {
			visits.Go(func() {
				defer ticking.Store(false)
				j.cfg.Tick(ctx, &checks, log)
			})
		}
		if j.cfg.Peers != nil && counting.CompareAndSwap(false, true) {
			visits.Go(func() {
				defer counting.Store(false)
				if n, err := j.cfg.Peers(ctx); err == nil {
					peers.Store(int64(n))
				}
			})
		}
		among := peers.Load() > 1
		for shard := range busy {
			if among && streak[shard].Load() >= yieldAfter && !busy[shard].Load() {
				streak[shard].Store(0) // left to the others this round
				continue
			}
			if !busy[shard].CompareAndSwap(false, true) {
				continue
			}
			addr := j.cfg.Base.MasterAddr(ctx, j.cfg.Lease(shard))
			node := places[addr]
			if node == nil {
				node = make(chan struct{}, visitsPerNode)
				places[addr] = node
			}
			visits.Go(func() {
				defer busy[shard].Store(false)
				rep, took, err := j.visit(ctx, shard, instance, leaseOf(interval), node)
				if took {
					streak[shard].Add(1)
				} else {
					streak[shard].Store(0)
				}
				if err != nil && ctx.Err() == nil {
					log.Warn("janitor", "shard", shard, "err", err)
				}
				if j.cfg.Actions != nil {
					for kind, n := range rep {
						j.cfg.Actions(kind, n)
					}
				}
			})
		}
	}
}

// leaseOf is the lease a visit of Run's takes: 7/8 of the interval, so
// that it has lapsed by the next tick, unless the take that began it was
// an eighth of the interval later after its tick than the next take is
// (a lease lasting the whole interval was still held, most often, when
// its instance came back a tick later: an instance alone visited each
// shard every other interval).
func leaseOf(interval time.Duration) time.Duration { return interval - interval/8 }

// visitsPerNode bounds the visits whose tasks run at once on one Redis
// node (a Cluster master, or the one server; "" when the layout could
// not be read): the calls the batcher does not send together (a repair
// page, a sweep's reads) each hold one of the connections the store's
// requests take too (go-redis' pool: 10 a core by default, on a Cluster
// per node).
const visitsPerNode = 4

// Visit runs the tasks on shard if instance wins its lease for lease, and
// reports what they did (also when one stops at an error): those with a
// Due key only when it held work. A lease held by anyone is no error:
// nothing is done. Safe for concurrent use, on different shards (a
// task's own state is its concern).
func (j *Janitor) Visit(ctx context.Context, shard int, instance string, lease time.Duration) (Report, error) {
	rep, _, err := j.visit(ctx, shard, instance, lease, nil)
	return rep, err
}

// visit is Visit whose tasks, with places, wait for one of them once the
// lease is taken (the lease's script batched with the other shards'),
// and give it back. A visit that waited past half its lease confirms it
// before its tasks run, until the first lease's end (an eighth of lease
// at least, the lease its tasks are given): renewed while its own, taken
// again when it lapsed and is free; held by another instance, the visit
// ends there, doing nothing (that instance's visit does the work). took
// reports whether the visit took the lease (its tasks then ran, or an
// error ended them).
func (j *Janitor) visit(ctx context.Context, shard int, instance string, lease time.Duration, places chan struct{}) (rep Report, took bool, err error) {
	rep = Report{}
	// a script (not SET NX), so that a full Redis lets the visit that
	// gives memory back take its lease (lua/janitor_lease.lua)
	call := leaseTakeCall{lease: j.cfg.Lease(shard), schedule: j.cfg.Schedule(shard), instance: instance, ttl: lease,
		now: time.Now().UnixMilli()}
	for _, task := range j.cfg.Tasks {
		if task.Due != nil {
			call.due = append(call.due, task.Due(shard))
			call.lists = append(call.lists, task.List)
		}
	}
	taken := time.Now()
	work, held, err := j.take(ctx, call)
	if err != nil || !held {
		return rep, false, err
	}
	if places != nil {
		select {
		case places <- struct{}{}:
		case <-ctx.Done():
			return rep, true, ctx.Err()
		}
		defer func() { <-places }()
		// a visit that waited for its place past half its lease may have
		// let it lapse, and another instance may be visiting the shard:
		// the lease is renewed if still its own, taken if free, else
		// the visit ends (the other instance does the work). It is held
		// until the first lease's end, not a whole lease more, so that
		// the instance's next tick finds it lapsed (an eighth of the
		// lease at least: the tasks' share of it)
		if time.Since(taken) > lease/2 {
			lease = max(time.Until(taken.Add(lease)), lease/8, time.Millisecond) // PX takes whole ms
			call.now, call.ttl, call.renew = time.Now().UnixMilli(), lease, true
			if work, held, err = j.take(ctx, call); err != nil || !held {
				return rep, false, err
			}
		}
	}
	for _, task := range j.cfg.Tasks {
		if task.Due != nil {
			due := work[0] == int64(1)
			work = work[1:]
			// what an earlier task did may have given it work (a room
			// closed leaves its users' holdings stale)
			if !due && rep.total() == 0 {
				continue
			}
		}
		if err := task.Run(ctx, shard, lease, rep); err != nil {
			return rep, true, err
		}
	}
	return rep, true, nil
}

// take runs call: held is false when another instance holds the lease;
// work is a flag for each of its due keys, 1 when it held work.
func (j *Janitor) take(ctx context.Context, call leaseTakeCall) (work []any, held bool, err error) {
	res, err := j.cfg.Base.RunOK(ctx, call)
	if err != nil || res[0] != int64(1) {
		return nil, false, err
	}
	if len(res) != 1+len(call.due) {
		return nil, false, fmt.Errorf("janitor: the lease's reply %v, want %d flags after the lease's", res, len(call.due))
	}
	return res[1:], true, nil
}

// total is how many things r counts.
func (r Report) total() (n int) {
	for _, c := range r {
		n += c
	}
	return n
}

// Release deletes every shard's lease held by one of ids (instances that
// stopped or whose registration lapsed): one pipelined read of every
// lease, then the compare-and-delete script only on the shards one of ids
// held when read (it checks again).
func (j *Janitor) Release(ctx context.Context, ids []string) error {
	b := j.cfg.Base
	holders := make([]*redis.StringCmd, b.Shards)
	if _, err := b.Client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for shard := range b.Shards {
			holders[shard] = p.Get(ctx, j.cfg.Lease(shard))
		}
		return nil
	}); err != nil && !errors.Is(err, redis.Nil) {
		return redisx.Wrap(err)
	}
	var errs []error
	for shard, h := range holders {
		if !slices.Contains(ids, h.Val()) {
			continue
		}
		if _, err := b.RunOK(ctx, leaseReleaseCall{lease: j.cfg.Lease(shard), ids: ids}); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

//go:embed lua/janitor_lease.lua
var leaseLua string

//go:embed lua/janitor_release.lua
var releaseLua string

var (
	leaseScript   = redisx.Plain("janitor_lease", leaseLua)
	releaseScript = redisx.Plain("janitor_release", releaseLua)
)

// leaseTakeCall is janitor_lease.lua: the shard's janitor lease taken by
// instance for ttl unless someone holds it (with renew, renewed when
// instance holds it already); it runs out of memory. Taken, it tells
// which of the due keys hold work at now (ms; a list, lists[i]: any).
type leaseTakeCall struct {
	lease, schedule, instance string
	ttl                       time.Duration
	now                       int64
	renew                     bool
	due                       []string
	lists                     []bool
}

func (leaseTakeCall) Script() *redisx.Script { return leaseScript }
func (c leaseTakeCall) KeysArgs() ([]string, []any) {
	renew := ""
	if c.renew {
		renew = "r"
	}
	args := []any{c.instance, c.ttl.Milliseconds(), c.now, renew}
	for _, list := range c.lists {
		kind := "z"
		if list {
			kind = "l"
		}
		args = append(args, kind)
	}
	return append([]string{c.lease, c.schedule}, c.due...), args
}

// leaseReleaseCall is janitor_release.lua: the shard's janitor lease goes
// if one of ids holds it.
type leaseReleaseCall struct {
	lease string
	ids   []string
}

func (leaseReleaseCall) Script() *redisx.Script { return releaseScript }
func (c leaseReleaseCall) KeysArgs() ([]string, []any) {
	args := make([]any, len(c.ids))
	for i, id := range c.ids {
		args[i] = id
	}
	return []string{c.lease}, args
}
