package conn

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// nearest routes the browsing reads of ReplicasLatency: the reader's
// layout (redis.ClusterOptions.ClusterSlots) keeps, of each slot range's
// nodes, the node (master or replica) of the lowest measured round trip
// and one to fall back on (route), so go-redis, which reads a ReadOnly
// client's commands from a range's second node and from its first while
// the second fails, reads them from that node. Not go-redis' own
// RouteByLatency: it starts each node's latency probe before the node's
// client is set up, a data race inside go-redis v9.23.0 (the race detector
// caught it in CI), and measures a node once a minute of use at most.
//
// Every node of the last layout is measured every nearestEvery, and
// first as soon as a layout names it: PING nearestPings times, the mean of
// the round trips. A node whose PING fails is left out until it answers
// one again; a range none of whose nodes was measured yet, or all of whose
// nodes failed, keeps all its nodes (its replicas read in turn, as with
// ReplicasOn). go-redis reads the layout again every second while commands
// flow, so a new measurement routes the reads within a second or so.
type nearest struct {
	layout func(context.Context) ([]redis.ClusterSlot, error)
	rtt    func(context.Context, string) (time.Duration, error)

	mu     sync.Mutex
	nodes  []string                 // of the last layout
	last   map[string]time.Duration // measured (failed: its PING failed); absent: not yet
	kick   chan struct{}
	cancel context.CancelFunc
	done   chan struct{}
}

const (
	nearestEvery = 10 * time.Second
	nearestPings = 3
	failed       = time.Duration(-1) // a node's measurement: PING failed
)

// newNearest measures, with rtt, the nodes of the layouts layout reads
// until Close.
func newNearest(layout func(context.Context) ([]redis.ClusterSlot, error), rtt func(context.Context, string) (time.Duration, error)) *nearest {
	ctx, cancel := context.WithCancel(context.Background())
	n := &nearest{layout: layout, rtt: rtt, last: map[string]time.Duration{},
		kick: make(chan struct{}, 1), cancel: cancel, done: make(chan struct{})}
	go n.run(ctx)
	return n
}

// Slots is the reader's layout (redis.ClusterOptions.ClusterSlots).
func (n *nearest) Slots(ctx context.Context) ([]redis.ClusterSlot, error) {
	slots, err := n.layout(ctx)
	if err != nil {
		return nil, err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.nodes = n.nodes[:0]
	unmeasured := false
	for _, s := range slots {
		for _, node := range s.Nodes {
			if !contains(n.nodes, node.Addr) {
				n.nodes = append(n.nodes, node.Addr)
				_, ok := n.last[node.Addr]
				unmeasured = unmeasured || !ok
			}
		}
	}
	if unmeasured {
		select {
		case n.kick <- struct{}{}:
		default:
		}
	}
	return route(slots, n.last), nil
}

// route is slots with each range's nodes cut to two (the master alone
// when it has no replica): go-redis reads a ReadOnly client's commands of
// a two-node range from its second node, and from its first while the
// second is failing or loading. A replica of the lowest round trip in rtt
// is second, after the master; a master of the lowest round trip is second,
// after its replica of the next lowest (or its first replica, when none was
// measured to answer), so that a dead master's reads still go to a replica
// within the call, as with go-redis' RouteByLatency or ReplicasOn, and not
// nowhere until the next measurement. go-redis takes a range's first node
// for its master, which the reader's commands, all read-only (browsing
// reads), are never sent to for that; only the batcher's lanes are named
// after it (store/internal/batch, nodeLane), one lane per node still. A
// range with no node measured in rtt, or only failed ones, is kept whole.
func route(slots []redis.ClusterSlot, rtt map[string]time.Duration) []redis.ClusterSlot {
	out := make([]redis.ClusterSlot, len(slots))
	for i, s := range slots {
		out[i] = s
		best := nearestOf(s.Nodes, rtt, -1)
		switch {
		case best == 0 && len(s.Nodes) > 1:
			next := nearestOf(s.Nodes, rtt, 0)
			if next < 0 {
				next = 1
			}
			out[i].Nodes = []redis.ClusterNode{s.Nodes[next], s.Nodes[0]}
		case best == 0:
			out[i].Nodes = []redis.ClusterNode{s.Nodes[0]}
		case best > 0:
			out[i].Nodes = []redis.ClusterNode{s.Nodes[0], s.Nodes[best]}
		}
	}
	return out
}

// nearestOf is the index in nodes of the node of the lowest round trip in
// rtt, but skip, measured and not failed; -1: none.
func nearestOf(nodes []redis.ClusterNode, rtt map[string]time.Duration, skip int) int {
	best := -1
	for j, node := range nodes {
		d, ok := rtt[node.Addr]
		if j != skip && ok && d != failed && (best < 0 || d < rtt[nodes[best].Addr]) {
			best = j
		}
	}
	return best
}

func (n *nearest) run(ctx context.Context) {
	defer close(n.done)
	t := time.NewTicker(nearestEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-n.kick:
		}
		n.measure(ctx)
	}
}

// measure measures every node of the last layout.
func (n *nearest) measure(ctx context.Context) {
	n.mu.Lock()
	nodes := append([]string(nil), n.nodes...)
	n.mu.Unlock()
	last := make(map[string]time.Duration, len(nodes))
	for _, addr := range nodes {
		var sum time.Duration
		for range nearestPings {
			d, err := n.rtt(ctx, addr)
			if err != nil {
				sum = failed * nearestPings
				break
			}
			sum += d
		}
		last[addr] = sum / nearestPings
	}
	if ctx.Err() != nil {
		return
	}
	n.mu.Lock()
	n.last = last
	n.mu.Unlock()
}

// Close stops the measurements.
func (n *nearest) Close() {
	n.cancel()
	<-n.done
}
