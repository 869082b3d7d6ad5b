package redistest

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// MasterOf returns the master serving key's hash slot, and the slot, as
// the first node that answers sees them.
func (c *Cluster) MasterOf(ctx context.Context, key string) (master *Server, slot int, err error) {
	if slot, err = c.Slot(ctx, key); err != nil {
		return nil, 0, err
	}
	master, _, err = c.Shard(ctx, slot)
	return master, slot, err
}

// SlotMove says how MoveSlot moves a slot; the zero value migrates up to
// 100 keys a MIGRATE, with no pause, and tells the nodes in the order of
// Nodes.
type SlotMove struct {
	// KeysPerMigrate is how many keys one MIGRATE carries at most (0: 100).
	KeysPerMigrate int
	// Pause is how long MoveSlot waits after each MIGRATE, so that
	// requests meanwhile find the slot half moved (ASK to the new master).
	Pause time.Duration
	// OldMasterFirst tells the old master that the slot moved before any
	// other node: it unsubscribes its clients of the slot's sharded
	// channels at once (sunsubscribe), while the other nodes, and the
	// clients' layouts, still name it.
	OldMasterFirst bool
	// To is the master the slot moves to (nil: the first of Nodes that
	// does not serve it), e.g. one AddMaster added.
	To *Server
	// Migrated, when not nil, is called once every key of the slot was
	// migrated, before any node is told the slot's new master: requests
	// meanwhile are sent to the new master with ASK.
	Migrated func()
}

// AddMaster starts a cluster-enabled server, has it meet the Cluster as a
// master without slots (as redis-cli --cluster add-node does: no script
// or function loaded on it), appends it to Nodes and returns it once
// every node knows it and the Cluster is ok. Stop stops it with the rest.
func (c *Cluster) AddMaster(ctx context.Context) (*Server, error) {
	s, err := StartServer("--cluster-enabled", "yes", "--cluster-node-timeout", "2000",
		"--cluster-config-file", "nodes.conf")
	if err != nil {
		return nil, err
	}
	cl := redis.NewClient(&redis.Options{Addr: s.Addr, Protocol: 2})
	defer cl.Close()
	err = cl.ClusterMeet(ctx, "127.0.0.1", strconv.Itoa(c.Nodes[0].Port)).Err()
	if err == nil {
		s.ID, err = cl.ClusterMyID(ctx).Result()
	}
	c.Nodes = append(c.Nodes, s)
	if err != nil {
		return s, fmt.Errorf("adding a master: %w", err)
	}
	return s, c.waitOK(20 * time.Second)
}

// MoveSlot moves the hash slot of key from the master serving it to
// another master, how.To or else the first of Nodes that is not it (every
// node of a Cluster of StartCluster's is a master), as a resharding does: the new
// master is told it imports the slot and the old one that it migrates it,
// the slot's keys are migrated (MIGRATE, how.KeysPerMigrate at a time),
// then every node is told the new master serves the slot. It returns the
// new master, set once it was chosen even when a later step failed, and
// how many keys were migrated.
//
// It first waits (up to 10 s) for the nodes to agree on the epochs, as in a
// Cluster that has run a while (settled; redis-cli --cluster reshard
// moves slots of such a Cluster): a new master that claims the slot below
// an epoch it has not heard of yet can have it taken back by a node not yet
// told of the move, its keys deleted, the slot split for good (see form).
func (c *Cluster) MoveSlot(ctx context.Context, key string, how SlotMove) (to *Server, moved int, err error) {
	if err := c.waitSettled(ctx, 10*time.Second); err != nil {
		return nil, 0, err
	}
	from, slot, err := c.MasterOf(ctx, key)
	if err != nil {
		return nil, 0, err
	}
	to = how.To
	for _, n := range c.Nodes {
		if to == nil && n != from {
			to = n
		}
	}
	if to == nil || to == from {
		return nil, 0, fmt.Errorf("no master to move slot %d to", slot)
	}
	clients := map[*Server]*redis.Client{}
	defer func() {
		for _, cl := range clients {
			cl.Close()
		}
	}()
	client := func(n *Server) *redis.Client {
		if clients[n] == nil {
			clients[n] = redis.NewClient(&redis.Options{Addr: n.Addr, Protocol: 2})
		}
		return clients[n]
	}
	do := func(n *Server, args ...any) error {
		if err := client(n).Do(ctx, args...).Err(); err != nil {
			return fmt.Errorf("%s %v: %w", n.Addr, args, err)
		}
		return nil
	}
	if err := do(to, "CLUSTER", "SETSLOT", slot, "IMPORTING", from.ID); err != nil {
		return to, 0, err
	}
	if err := do(from, "CLUSTER", "SETSLOT", slot, "MIGRATING", to.ID); err != nil {
		return to, 0, err
	}
	per := how.KeysPerMigrate
	if per <= 0 {
		per = 100
	}
	host, port, _ := strings.Cut(to.Addr, ":")
	for {
		ks, err := client(from).ClusterGetKeysInSlot(ctx, slot, per).Result()
		if err != nil {
			return to, moved, fmt.Errorf("%s: keys in slot %d: %w", from.Addr, slot, err)
		}
		if len(ks) == 0 {
			break
		}
		args := []any{"MIGRATE", host, port, "", 0, 5000, "KEYS"}
		for _, k := range ks {
			args = append(args, k)
		}
		if err := do(from, args...); err != nil {
			return to, moved, err
		}
		moved += len(ks)
		time.Sleep(how.Pause)
	}
	if how.Migrated != nil {
		how.Migrated()
	}
	order := c.Nodes
	if how.OldMasterFirst {
		order = append([]*Server{from}, c.Nodes...)
	}
	told := map[*Server]bool{}
	for _, n := range order {
		if told[n] {
			continue
		}
		told[n] = true
		if err := do(n, "CLUSTER", "SETSLOT", slot, "NODE", to.ID); err != nil {
			return to, moved, err
		}
	}
	return to, moved, nil
}

// RemoveMaster removes master m, which must serve no slot any more, from
// the Cluster as redis-cli --cluster del-node does: every other node
// forgets it (CLUSTER FORGET), then it is reset (CLUSTER RESET SOFT) and
// left running, a lone node that knows no other and serves no slot. It is
// taken out of Nodes; the caller stops it.
func (c *Cluster) RemoveMaster(ctx context.Context, m *Server) error {
	var rest []*Server
	for _, n := range c.Nodes {
		if n == m {
			continue
		}
		rest = append(rest, n)
		cl := redis.NewClient(&redis.Options{Addr: n.Addr, Protocol: 2})
		err := cl.ClusterForget(ctx, m.ID).Err()
		cl.Close()
		if err != nil {
			return fmt.Errorf("%s: forgetting %s: %w", n.Addr, m.Addr, err)
		}
	}
	cl := redis.NewClient(&redis.Options{Addr: m.Addr, Protocol: 2})
	defer cl.Close()
	if err := cl.ClusterResetSoft(ctx).Err(); err != nil {
		return fmt.Errorf("%s: reset: %w", m.Addr, err)
	}
	c.Nodes = rest
	return c.waitOK(20 * time.Second)
}
