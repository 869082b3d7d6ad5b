package conn

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// nearest routes the browsing reads of ReplicasLatency: the reader's
// layout (redis.ClusterOptions.ClusterSlots) keeps, of each slot range's
// nodes, the master and the node (master or replica) of the lowest
// measured round trip, so go-redis, which reads a ReadOnly client's
// commands from a range's replicas and from its master while they fail,
// reads them from that node. Not go-redis' own RouteByLatency: it starts
// each node's latency probe before the node's client is set up, a data
// race inside go-redis v9.23.0 (the race detector caught it in CI), and
// measures a node once a minute of use at most.
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

// route is slots with each range's nodes cut to its master and its node of
// the lowest round trip in rtt (the master alone when it is that node);
// a range with no node measured in rtt, or only failed ones, is kept
// whole.
func route(slots []redis.ClusterSlot, rtt map[string]time.Duration) []redis.ClusterSlot {
	out := make([]redis.ClusterSlot, len(slots))
	for i, s := range slots {
		out[i] = s
		best := -1
		for j, node := range s.Nodes {
			d, ok := rtt[node.Addr]
			if ok && d != failed && (best < 0 || d < rtt[s.Nodes[best].Addr]) {
				best = j
			}
		}
		switch {
		case best == 0:
			out[i].Nodes = []redis.ClusterNode{s.Nodes[0]}
		case best > 0:
			out[i].Nodes = []redis.ClusterNode{s.Nodes[0], s.Nodes[best]}
		}
	}
	return out
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
