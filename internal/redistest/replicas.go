package redistest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// FailoverNodeTimeout is the cluster-node-timeout of a Cluster started by
// StartClusterWithReplicas: a dead master's replica is promoted about twice
// this after the master stopped answering. Shorter, a machine starved by
// parallel tests fails healthy masters over too.
const FailoverNodeTimeout = 2000 * time.Millisecond

// StartClusterWithReplicas starts masters masters with replicas replicas
// each (Nodes: the masters first, then the replicas of the first master,
// and so on), splits the slots evenly over the masters and returns once
// the cluster is ok and every replica is in sync with its master. The node
// timeout is FailoverNodeTimeout, so killing a master promotes one of its
// replicas within seconds. Every test that kills a node starts a Cluster of
// its own and stops it when done.
func StartClusterWithReplicas(masters, replicas int) (*Cluster, error) {
	c, err := startNodes(masters*(1+replicas), int(FailoverNodeTimeout.Milliseconds()))
	if err != nil {
		return nil, err
	}
	if err := c.replicate(masters, replicas); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

func (c *Cluster) replicate(masters, replicas int) error {
	if err := c.form(masters); err != nil {
		return err
	}
	// A replica can only follow a master it knows: wait for the gossip.
	if err := c.waitOK(20 * time.Second); err != nil {
		return err
	}
	ctx := context.Background()
	for i, s := range c.Nodes[masters:] {
		m := c.Nodes[i/replicas]
		cl := redis.NewClient(&redis.Options{Addr: s.Addr})
		err := cl.ClusterReplicate(ctx, m.ID).Err()
		cl.Close()
		if err != nil {
			return fmt.Errorf("replica %s of %s: %w", s.Addr, m.Addr, err)
		}
	}
	if err := c.waitReplicas(masters*replicas, 20*time.Second); err != nil {
		return err
	}
	for _, m := range c.Nodes[:masters] {
		if err := c.WaitReplicated(m, 20*time.Second); err != nil {
			return err
		}
	}
	return nil
}

// waitReplicas waits until every node is ok and sees n replicas.
func (c *Cluster) waitReplicas(n int, timeout time.Duration) error {
	ctx := context.Background()
	deadline := time.Now().Add(timeout)
	for !time.Now().After(deadline) {
		if c.allOK() && c.allSee(ctx, n) {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("cluster did not see its %d replicas within %s", n, timeout)
}

func (c *Cluster) allSee(ctx context.Context, n int) bool {
	for _, s := range c.Nodes {
		cl := redis.NewClient(&redis.Options{Addr: s.Addr})
		nodes, err := cl.ClusterNodes(ctx).Result()
		cl.Close()
		if err != nil || strings.Count(nodes, "slave ") != n && strings.Count(nodes, "slave,") != n {
			return false
		}
	}
	return true
}

// Node returns the node listening on addr (nil when none).
func (c *Cluster) Node(addr string) *Server {
	for _, s := range c.Nodes {
		if s.Addr == addr {
			return s
		}
	}
	return nil
}

// Shard returns the master serving slot and its replicas (those not
// marked failed), as the first node that answers sees them.
func (c *Cluster) Shard(ctx context.Context, slot int) (master *Server, replicas []*Server, err error) {
	err = c.ask(ctx, func(cl *redis.Client) error {
		text, err := cl.ClusterNodes(ctx).Result()
		if err != nil {
			return err
		}
		master, replicas, err = c.shard(text, slot)
		return err
	})
	return master, replicas, err
}

// ReplicatedShard returns the master serving key's slot and its one
// replica once the replica has every write the master took so far
// (WaitReplicated, within wait): a failover test's starting point, the
// test's data on both. An error when the slot has not exactly one
// replica.
func (c *Cluster) ReplicatedShard(ctx context.Context, key string, wait time.Duration) (master, replica *Server, err error) {
	slot, err := c.Slot(ctx, key)
	if err != nil {
		return nil, nil, err
	}
	master, replicas, err := c.Shard(ctx, slot)
	if err != nil {
		return nil, nil, err
	}
	if len(replicas) != 1 {
		return nil, nil, fmt.Errorf("redistest: slot %d has %d replicas, want 1", slot, len(replicas))
	}
	if err := c.WaitReplicated(master, wait); err != nil {
		return nil, nil, err
	}
	return master, replicas[0], nil
}

// shard reads a CLUSTER NODES reply: "<id> <ip:port@bus> <flags> <master
// id or -> <ping> <pong> <epoch> <link> <slot ranges...>".
func (c *Cluster) shard(text string, slot int) (*Server, []*Server, error) {
	var lines [][]string
	for _, l := range strings.Split(strings.TrimSpace(text), "\n") {
		if f := strings.Fields(l); len(f) >= 8 {
			f[1], _, _ = strings.Cut(f[1], "@")
			lines = append(lines, f)
		}
	}
	var id string
	var master *Server
	for _, f := range lines {
		if strings.Contains(f[2], "master") && servesSlot(f[8:], slot) {
			id, master = f[0], c.Node(f[1])
		}
	}
	if master == nil {
		return nil, nil, fmt.Errorf("slot %d is served by no node of this cluster", slot)
	}
	var replicas []*Server
	for _, f := range lines {
		if f[3] == id && !strings.Contains(f[2], "fail") {
			if s := c.Node(f[1]); s != nil {
				replicas = append(replicas, s)
			}
		}
	}
	return master, replicas, nil
}

// servesSlot reports whether slot is in ranges ("a-b" or "a"; migration
// markers "[...]" are ignored).
func servesSlot(ranges []string, slot int) bool {
	for _, r := range ranges {
		lo, hi, ok := strings.Cut(r, "-")
		if !ok {
			hi = lo
		}
		a, err1 := strconv.Atoi(lo)
		b, err2 := strconv.Atoi(hi)
		if err1 == nil && err2 == nil && a <= slot && slot <= b {
			return true
		}
	}
	return false
}

// Slot returns the hash slot of key.
func (c *Cluster) Slot(ctx context.Context, key string) (int, error) {
	var slot int64
	err := c.ask(ctx, func(cl *redis.Client) (err error) {
		slot, err = cl.ClusterKeySlot(ctx, key).Result()
		return err
	})
	return int(slot), err
}

// ask runs f against the first node that answers.
func (c *Cluster) ask(ctx context.Context, f func(*redis.Client) error) error {
	var errs []error
	for _, s := range c.Nodes {
		cl := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
		err := f(cl)
		cl.Close()
		if err == nil {
			return nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", s.Addr, err))
	}
	return errors.Join(errs...)
}

// WaitReplicated waits until every replica of master is connected to it
// and has applied everything it wrote so far.
func (c *Cluster) WaitReplicated(master *Server, timeout time.Duration) error {
	ctx := context.Background()
	deadline := time.Now().Add(timeout)
	mc := redis.NewClient(&redis.Options{Addr: master.Addr})
	defer mc.Close()
	for {
		done, err := replicated(ctx, mc)
		if done {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("replicas of %s not in sync within %s (%v)", master.Addr, timeout, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func replicated(ctx context.Context, mc *redis.Client) (bool, error) {
	info, err := mc.Info(ctx, "replication").Result()
	if err != nil {
		return false, err
	}
	want := infoField(info, "master_repl_offset")
	n, _ := strconv.Atoi(infoField(info, "connected_slaves"))
	if n == 0 {
		return false, fmt.Errorf("no replica connected")
	}
	for i := range n {
		// slaveN:ip=127.0.0.1,port=P,state=online,offset=O,lag=L
		line := infoField(info, "slave"+strconv.Itoa(i))
		if !strings.Contains(line, "state=online") || !strings.Contains(line, "offset="+want+",") {
			return false, fmt.Errorf("replica %s", line)
		}
	}
	return true, nil
}

// infoField returns field's value in an INFO reply.
func infoField(info, field string) string {
	for _, l := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			return v
		}
	}
	return ""
}

// CutReplication makes master's replicas fall behind for good, as a
// replication lag does before a failover, but for certain: it drops their
// connections and refuses their resynchronization (an ACL that denies
// PSYNC and SYNC to the default user, whom clients keep using as before).
// From then on master acknowledges writes that none of its replicas will
// ever have: whatever it writes is lost when a replica takes over.
func CutReplication(ctx context.Context, master *Server) error {
	cl := redis.NewClient(&redis.Options{Addr: master.Addr})
	defer cl.Close()
	if err := cl.Do(ctx, "ACL", "SETUSER", "default", "-psync", "-sync").Err(); err != nil {
		return err
	}
	return cl.Do(ctx, "CLIENT", "KILL", "TYPE", "replica").Err()
}

// RestoreReplication undoes CutReplication for master's replica: master
// allows resynchronization again and the replica is restarted (same
// directory, so the same Cluster node), which resynchronizes in full,
// until it has every write master took and every node's layout lists it
// again (CLUSTER SLOTS), within wait each. Clients read the layout again
// in their own time: until they do, they may know the slot's master
// without its replica. Allowed again without a restart, a link refused
// meanwhile could stay listed online without ever acknowledging (offset
// 0, lag growing), even with both ends dropped and three tries (1 CI run
// of many, 2026-12-03).
func (c *Cluster) RestoreReplication(ctx context.Context, master, replica *Server, wait time.Duration) error {
	mc := redis.NewClient(&redis.Options{Addr: master.Addr})
	defer mc.Close()
	if err := mc.Do(ctx, "ACL", "SETUSER", "default", "+psync", "+sync").Err(); err != nil {
		return err
	}
	replica.Kill()
	if err := replica.Start(); err != nil {
		return err
	}
	if err := c.WaitReplicated(master, wait); err != nil {
		return err
	}
	return c.WaitSlotsListReplicas(wait)
}

// WaitMaster polls s (every 10 ms) until it reports the master role and
// returns when it first did.
func WaitMaster(s *Server, timeout time.Duration) (time.Time, error) {
	ctx := context.Background()
	cl := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1, DialTimeout: 200 * time.Millisecond,
		ReadTimeout: 500 * time.Millisecond})
	defer cl.Close()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		role, err := cl.Do(ctx, "ROLE").Slice()
		if err == nil && len(role) > 0 && role[0] == "master" {
			return time.Now(), nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return time.Time{}, fmt.Errorf("%s did not become master within %s", s.Addr, timeout)
}

// WaitSlotsListReplicas waits until every node's CLUSTER SLOTS lists at
// least one replica beside the master of every slot range: where clients
// (go-redis) learn which replicas to read. Redis lists a replica only once
// it gossiped a non-zero replication offset, so the replicas' masters must
// have written something since the replicas synced.
func (c *Cluster) WaitSlotsListReplicas(timeout time.Duration) error {
	ctx := context.Background()
	listed := func() bool {
		for _, n := range c.Nodes {
			cl := redis.NewClient(&redis.Options{Addr: n.Addr})
			//lint:ignore SA1019 the layout as go-redis reads it (CLUSTER SLOTS)
			slots, err := cl.ClusterSlots(ctx).Result()
			cl.Close()
			if err != nil || len(slots) == 0 {
				return false
			}
			for _, r := range slots {
				if len(r.Nodes) < 2 {
					return false
				}
			}
		}
		return true
	}
	for deadline := time.Now().Add(timeout); !listed(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			return fmt.Errorf("CLUSTER SLOTS lists no replica of some slots within %s", timeout)
		}
	}
	return nil
}

// OwnReplicatedPair starts a Cluster of tb's own of one master, holding
// every slot, and its replica, stopped when tb ends, and returns the
// master and the replica once the replica is in sync. It skips tb under
// -short.
func OwnReplicatedPair(tb testing.TB) (master, replica *Server) {
	tb.Helper()
	if testing.Short() {
		tb.Skip("starts a Cluster of its own")
	}
	c, err := StartClusterWithReplicas(1, 1)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(c.Stop)
	master, replica = c.Nodes[0], c.Nodes[1]
	if err := c.WaitReplicated(master, 20*time.Second); err != nil {
		tb.Fatal(err)
	}
	return master, replica
}
