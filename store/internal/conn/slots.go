package conn

import (
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// SlotSource reads a Cluster's slot layout for the store's Cluster
// clients (redis.ClusterOptions.ClusterSlots) as go-redis would, CLUSTER
// SLOTS from the first node that answers, in random order, of the seeds
// (REALSYNC_REDIS_CLUSTER_ADDRS) and the nodes of the last layout read,
// but it passes over a node that answers with no slot at all. A master
// removed from the Cluster (redis-cli --cluster del-node makes the others
// forget it, resets it and leaves it running) knows no layout any more,
// and a node not yet joined none yet: go-redis took such an answer as the
// layout, for as long as it still knew the node (about a minute), and
// sent each call to a random node, which answered MOVED or, the removed
// node itself, CLUSTERDOWN (503). When every node that answers serves no
// slot, that empty layout is the answer while none was ever read (a
// Cluster not yet formed); once one was, the answer is an error, so that
// go-redis keeps the last layout it read (a removed master that answers
// while the others are briefly unreachable is not taken for the Cluster).
type SlotSource struct {
	seeds []string
	opt   redis.Options // a node's client: dial and read settings

	mu      sync.Mutex
	known   []string                 // the nodes of the last layout read
	last    []redis.ClusterSlot      // the last layout read
	clients map[string]*redis.Client // by address: the seeds and known
	closed  bool
}

// NewSlotSource is the layout source of a Cluster of seeds, whose nodes
// it dials and reads with the timeouts dial and read.
func NewSlotSource(seeds []string, dial, read time.Duration) *SlotSource {
	return &SlotSource{seeds: seeds, clients: map[string]*redis.Client{},
		opt: redis.Options{Protocol: 2, DialTimeout: dial, DialerRetries: 1, ReadTimeout: read,
			MaxRetries: -1, PoolSize: 2, MaxIdleConns: 1, ContextTimeoutEnabled: true}}
}

var (
	errLayoutClosed = errors.New("the slot source is closed")
	errNoSlots      = errors.New("no Cluster node serves a slot")
)

// Slots is the layout (redis.ClusterOptions.ClusterSlots).
func (l *SlotSource) Slots(ctx context.Context) ([]redis.ClusterSlot, error) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil, errLayoutClosed
	}
	addrs := append([]string(nil), l.seeds...)
	formed := len(l.known) > 0
	for _, a := range l.known {
		if !contains(addrs, a) {
			addrs = append(addrs, a)
		}
	}
	l.mu.Unlock()
	var (
		empty    []redis.ClusterSlot
		emptyOK  bool
		firstErr error
	)
	for _, i := range rand.Perm(len(addrs)) {
		c := l.client(addrs[i])
		if c == nil {
			return nil, errLayoutClosed
		}
		//lint:ignore SA1019 go-redis takes the layout in CLUSTER SLOTS' shape (ClusterOptions.ClusterSlots)
		slots, err := c.ClusterSlots(ctx).Result()
		switch {
		case err != nil:
			if firstErr == nil {
				firstErr = err
			}
		case len(slots) == 0:
			empty, emptyOK = slots, true
		default:
			fromOrigin(slots, addrs[i])
			l.remember(slots)
			return slots, nil
		}
	}
	if emptyOK && !formed {
		return empty, nil
	}
	if firstErr == nil {
		firstErr = errNoSlots
	}
	return nil, firstErr
}

// RTT is the round trip of a PING to the node at addr, through the
// node's client of the source.
func (l *SlotSource) RTT(ctx context.Context, addr string) (time.Duration, error) {
	c := l.client(addr)
	if c == nil {
		return 0, errLayoutClosed
	}
	start := time.Now()
	err := c.Ping(ctx).Err()
	return time.Since(start), err
}

// Replicas is how many replicas the last layout read lists beside the
// master of slot: Redis lists a replica that is not marked failed and has
// replicated something, whether its link to the master is up or not (0:
// none, or no layout read yet). The store's clients read the layout again
// after a MOVED, and at their next call once it is a second old
// (ClusterStateReloadInterval).
func (l *SlotSource) Replicas(slot int) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range l.last {
		if slot >= int(r.Start) && slot <= int(r.End) && len(r.Nodes) > 0 {
			return len(r.Nodes) - 1
		}
	}
	return 0
}

// client is the client of the node at addr, nil once closed.
func (l *SlotSource) client(addr string) *redis.Client {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	c := l.clients[addr]
	if c == nil {
		opt := l.opt
		opt.Addr = addr
		c = redis.NewClient(&opt)
		l.clients[addr] = c
	}
	return c
}

// remember records the nodes of slots as the known ones, and closes the
// clients of nodes neither known nor seeds.
func (l *SlotSource) remember(slots []redis.ClusterSlot) {
	var known []string
	for _, s := range slots {
		for _, n := range s.Nodes {
			if !contains(known, n.Addr) {
				known = append(known, n.Addr)
			}
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.known, l.last = known, slots
	for addr, c := range l.clients {
		if !contains(known, addr) && !contains(l.seeds, addr) {
			c.Close()
			delete(l.clients, addr)
		}
	}
}

// Close closes the nodes' clients; Slots fails from then on.
func (l *SlotSource) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	var err error
	for addr, c := range l.clients {
		err = errors.Join(err, c.Close())
		delete(l.clients, addr)
	}
	return err
}

// fromOrigin rewrites, as go-redis does with the layout it reads, a node's
// loopback address to the host of origin, the node that answered, when
// origin is not on loopback (a Cluster that announces 127.0.0.1, reached
// from another machine).
func fromOrigin(slots []redis.ClusterSlot, origin string) {
	oh, _, err := net.SplitHostPort(origin)
	if err != nil || isLoopback(oh) {
		return
	}
	for i := range slots {
		for j := range slots[i].Nodes {
			h, p, err := net.SplitHostPort(slots[i].Nodes[j].Addr)
			if err == nil && isLoopback(h) {
				slots[i].Nodes[j].Addr = net.JoinHostPort(oh, p)
			}
		}
	}
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
