package redisx

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/internal/redistest"
)

var setScript = Plain("test_set", "redis.call('SET', KEYS[1], ARGV[1]) return 'OK'")

// setCall sets key to value.
type setCall struct{ key, value string }

func (setCall) Script() *Script               { return setScript }
func (c setCall) KeysArgs() ([]string, []any) { return []string{c.key}, []any{c.value} }

// A call pinned to the master the client's layout names, when that layout
// is a failover behind (the node named is the slot's replica now), is
// answered MOVED and did not run: it is sent again once the layout was
// read again, to the slot's master, and waits for its replica there. It
// failed with the MOVED before, and a match's commit waited for a repair
// (a chaos tester's graceful failovers: matches told 5 s late).
func TestRunReplicatedFollowsAMovedSlot(t *testing.T) {
	master, replica := redistest.OwnReplicatedPair(t)
	ctx := t.Context()
	var reads atomic.Int32
	layout := func(context.Context) ([]redis.ClusterSlot, error) {
		owner, other := master.Addr, replica.Addr
		if reads.Add(1) == 1 { // the first read: before the failover
			owner, other = other, owner
		}
		return []redis.ClusterSlot{{Start: 0, End: 16383, Nodes: []redis.ClusterNode{{Addr: owner}, {Addr: other}}}}, nil
	}
	cc := redis.NewClusterClient(&redis.ClusterOptions{ClusterSlots: layout, Protocol: 2, ClusterStateReloadInterval: time.Hour})
	defer cc.Close()
	b := &Base{Client: cc, Runner: NewRunner(cc, nil), Replicas: func(int) int { return 1 }}
	reply, acked, err := b.RunReplicated(ctx, setCall{"{t}:k", "v"}, 1, 2*time.Second)
	if err != nil || !acked || reply != "OK" {
		t.Fatalf("run: %v, acked %v, reply %v; want OK on the slot's master, acknowledged", err, acked, reply)
	}
	mc := redis.NewClient(&redis.Options{Addr: master.Addr})
	defer mc.Close()
	if v, err := mc.Get(ctx, "{t}:k").Result(); err != nil || v != "v" {
		t.Fatalf("the master holds %q (%v), want v", v, err)
	}
	if n := reads.Load(); n < 2 {
		t.Fatalf("the layout was read %d times, want again after the MOVED", n)
	}
}

// incrScript counts its runs in a key.
var incrScript = Plain("test_incr", "return redis.call('INCR', KEYS[1])")

type incrCall struct{ key string }

func (incrCall) Script() *Script               { return incrScript }
func (c incrCall) KeysArgs() ([]string, []any) { return []string{c.key}, nil }

// A call whose master is made a replica while its WAIT blocks (a graceful
// failover: Redis ends the WAIT with UNBLOCKED) is run again on the new
// master, and that master's replicas are waited for: its reply is the
// second run's, which found the first run's write kept, and a shortfall
// is the new master's. Before, the UNBLOCKED was taken for a refused
// WAIT: the old master's shortfall, and a match's commit held until a
// repair (a chaos tester's graceful failovers: matches told 4.7 s late).
// One of the master's two replicas never acknowledges (its link refused),
// so that the wait blocks while the other takes over.
func TestRunReplicatedRunsAgainAfterAFailoverMidWait(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Cluster of its own")
	}
	c, err := redistest.StartClusterWithReplicas(1, 2)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	ctx := t.Context()
	master, taker, mute := c.Nodes[0], c.Nodes[1], c.Nodes[2]
	mc := redis.NewClient(&redis.Options{Addr: mute.Addr})
	defer mc.Close()
	// its link to the master refused from now on (AUTH of a user that
	// does not exist), and ended
	for _, kv := range [][2]string{{"masteruser", "nobody"}, {"masterauth", "wrong"}} {
		if err := mc.ConfigSet(ctx, kv[0], kv[1]).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := mc.Do(ctx, "CLIENT", "KILL", "TYPE", "master").Err(); err != nil {
		t.Fatal(err)
	}
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs(), Protocol: 2})
	defer cc.Close()
	b := &Base{Client: cc, Runner: NewRunner(cc, nil), Replicas: func(int) int { return 2 }}
	type result struct {
		reply any
		err   error
	}
	done := make(chan result, 1)
	go func() {
		reply, _, err := b.RunReplicated(ctx, incrCall{"{t}:runs"}, 2, 3*time.Second)
		done <- result{reply, err}
	}()
	// the WAIT blocks on the master: the taker takes over, gracefully
	watch := redis.NewClient(&redis.Options{Addr: master.Addr})
	defer watch.Close()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no client blocked on the master within 10 s")
		}
		if info, err := watch.Info(ctx, "clients").Result(); err == nil && strings.Contains(info, "blocked_clients:1") {
			break
		}
	}
	tc := redis.NewClient(&redis.Options{Addr: taker.Addr})
	defer tc.Close()
	if err := tc.Do(ctx, "CLUSTER", "FAILOVER").Err(); err != nil {
		t.Fatal(err)
	}
	var got result
	select {
	case got = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("RunReplicated did not return within 30 s of the failover")
	}
	var short *ShortOfReplicasError
	if !errors.As(got.err, &short) || short.Addr != taker.Addr || short.Refused != nil || short.Acked >= 2 {
		t.Fatalf("run: %v (%#v); want the new master's (%s) replicas short, not a refused WAIT", got.err, short, taker.Addr)
	}
	if got.reply != int64(2) {
		t.Fatalf("reply %v, want 2: run again on the new master, which has the first run's write", got.reply)
	}
	if v, err := tc.Get(ctx, "{t}:runs").Result(); err != nil || v != "2" {
		t.Fatalf("the new master holds %q runs (%v), want 2", v, err)
	}
}

// rvPrelude, rvIncr and rvLibrary are a mutation in a library (FCALL
// where the library is loaded) counting its runs in a key.
var (
	rvPrelude = "local function begin() end"
	rvIncr    = Mutation(rvPrelude, "test_rv_incr", "return redis.call('INCR', KEYS[1])")
	rvLibrary = NewLibrary(rvPrelude, rvIncr)
)

type rvIncrCall struct{ key string }

func (rvIncrCall) Script() *Script               { return rvIncr }
func (c rvIncrCall) KeysArgs() ([]string, []any) { return []string{c.key}, nil }

// The call goes as Runner.Run sends it, by its script's hash or its
// library's function: a node that lacks the code (the first run, and
// after a flush) gets it loaded, and the call is sent again; nothing ran
// the first time, so the run's write is still the one waited for, and
// the code never goes with the call (it did with every commit before).
func TestRunReplicatedSendsTheCodeOnlyWhenMissing(t *testing.T) {
	master, replica := redistest.OwnReplicatedPair(t)
	ctx := t.Context()
	layout := func(context.Context) ([]redis.ClusterSlot, error) {
		return []redis.ClusterSlot{{Start: 0, End: 16383, Nodes: []redis.ClusterNode{{Addr: master.Addr}, {Addr: replica.Addr}}}}, nil
	}
	cc := redis.NewClusterClient(&redis.ClusterOptions{ClusterSlots: layout, Protocol: 2})
	defer cc.Close()
	mc := redis.NewClient(&redis.Options{Addr: master.Addr})
	defer mc.Close()
	calls := func() map[string]int {
		t.Helper()
		info, err := mc.Info(ctx, "commandstats").Result()
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]int{}
		for _, l := range strings.Split(info, "\r\n") {
			name, stats, _ := strings.Cut(l, ":")
			if v, ok := strings.CutPrefix(stats, "calls="); ok {
				v, _, _ = strings.Cut(v, ",")
				n := 0
				fmt.Sscan(v, &n)
				out[strings.TrimPrefix(name, "cmdstat_")] = n
			}
		}
		return out
	}
	for _, c := range []struct {
		name  string
		lib   *Library
		call  Call
		flush func() error
		// by run: the calls by hash or function, and the loads
		sent, loads []int
		by, load    string
	}{
		{"script", nil, incrCall{"{t}:script"}, func() error { return mc.ScriptFlush(ctx).Err() },
			[]int{2, 3, 5}, []int{1, 1, 2}, "evalsha", "script|load"},
		{"function", rvLibrary, rvIncrCall{"{t}:function"}, func() error { return mc.FunctionFlush(ctx).Err() },
			[]int{1, 2, 4}, []int{1, 1, 2}, "fcall", "function|load"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := mc.ConfigResetStat(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			r := NewRunner(cc, c.lib)
			if c.lib != nil {
				if err := r.LoadLibrary(ctx); err != nil || !r.Functions() {
					t.Fatalf("library: %v, functions %v", err, r.Functions())
				}
			}
			b := &Base{Client: cc, Runner: r, Replicas: func(int) int { return 1 }}
			for i := range 3 {
				if i == 2 {
					if err := c.flush(); err != nil {
						t.Fatal(err)
					}
				}
				reply, acked, err := b.RunReplicated(ctx, c.call, 1, 2*time.Second)
				if err != nil || !acked || reply != int64(i+1) {
					t.Fatalf("run %d: %v, acked %v, reply %v", i+1, err, acked, reply)
				}
				got := calls()
				if got[c.by] != c.sent[i] || got[c.load] != c.loads[i] || got["eval"] != 0 {
					t.Fatalf("after run %d: %d %s, %d %s, %d eval; want %d, %d, 0", i+1,
						got[c.by], c.by, got[c.load], c.load, got["eval"], c.sent[i], c.loads[i])
				}
			}
		})
	}
}
