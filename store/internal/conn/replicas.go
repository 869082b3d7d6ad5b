package conn

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// ReplicaReads says where a Cluster's browsing reads go
// (REALSYNC_REDIS_READ_FROM_REPLICAS). Browsing reads are exactly: the room
// list (List) and the lobby stats (Stats). Everything else, joins,
// quick-join, a room and its state, my rooms, messages, the lobby stream's
// list and per-change reads (Joinable, Rooms: a change made before the
// stream subscribed has no notice to come, so a room a replica behind
// listed would stay in the client's view) and every script, always reads
// the shard's master: a client reads those back right after writing them.
//
// A replica applies a master's writes after a replication lag (well under a
// millisecond on a LAN), so a browsing read may miss the latest changes: a
// room just created may be missing from a list, a full one may still be
// listed (its join then says ROOM_FULL), and stats may lag. A replica whose
// link to its master broke keeps answering with its last data unless it runs
// with replica-serve-stale-data no: then it refuses reads (MASTERDOWN) and
// they go to the master (browse), which bounds the staleness by the time a
// replica takes to notice a silent link loss, its repl-timeout (60 s by
// default).
type ReplicaReads string

const (
	// ReplicasOff reads everything from masters (the default).
	ReplicasOff ReplicaReads = "off"
	// ReplicasOn reads browsing reads from a random replica of the shard,
	// from its master while every replica of the shard is failing.
	ReplicasOn ReplicaReads = "on"
	// ReplicasRandom spreads browsing reads over the shard's master and
	// replicas at random (skipping failing nodes).
	ReplicasRandom ReplicaReads = "random"
	// ReplicasLatency reads browsing reads from the shard's node (master or
	// replica) of the lowest measured latency (nearest.go).
	ReplicasLatency ReplicaReads = "latency"
)

// ParseReplicaReads reads a REALSYNC_REDIS_READ_FROM_REPLICAS value; ""
// is off.
func ParseReplicaReads(s string) (ReplicaReads, error) {
	switch r := ReplicaReads(s); r {
	case "":
		return ReplicasOff, nil
	case ReplicasOff, ReplicasOn, ReplicasRandom, ReplicasLatency:
		return r, nil
	}
	return "", fmt.Errorf("must be off, on, random or latency")
}

// ReplicaReadTimeout bounds the wait for each reply to a browsing read
// (readerClient), where the store's other calls wait ReadTimeout (2 s;
// a shorter Config.ReadTimeout wins). A replica that hangs (CLIENT PAUSE,
// a stopped process, a stalled disk under appendfsync always) answers
// nothing: the read that finds it waits this long, then goes to the
// master within the same call (go-redis marks the replica failing, for
// 15 s, and routes the read again; a failure there too is read once more
// through the store's client, listing.browse). With the 2 s of the other
// calls a hung replica cost a listing 2 s, again every 15 s for as long
// as it hung (a tester's 2.02 s). Browsing reads take Redis well under a
// millisecond; a healthy node's longest stall is a fork for a save or
// an AOF rewrite, about 10 ms a GB of its data (more on some
// hypervisors), so a node of 30 GB or more may pass 300 ms while it
// forks. One that fired so is marked failing for 15 s: the shard's
// browsing reads go to its master meanwhile (with `random` or `latency`,
// where this client reads masters too, to another node of the shard),
// which costs them no error.
const ReplicaReadTimeout = 300 * time.Millisecond

// readerClient is the Cluster client of browsing reads: the options of the
// main one with read-only commands (ZRANGE, HGETALL) routed per mode,
// whose replies are waited for ReplicaReadTimeout at most.
// Every connection says READONLY (a replica serves reads only after it;
// a master ignores it): go-redis sends none itself to the nodes of a
// client whose layout is supplied (ClusterSlots, slots.go), and the
// reader takes the store's, which passes over a removed master's empty
// layout (read by go-redis itself, that layout sent the reads to random
// nodes, the removed master among them, for a minute). go-redis marks a
// node that fails (refused, timed out, LOADING) as failing for a while and
// routes the failed commands again, so a dead replica's reads go to its
// master within the same call. A second client, not ReadOnly on the main one: that would
// send every read-only command of the store to replicas, joins' and room
// reads' included. With ReplicasLatency, near measures the nodes with rtt
// until closed (nil otherwise).
func readerClient(opt redis.ClusterOptions, mode ReplicaReads, rtt func(context.Context, string) (time.Duration, error)) (_ redis.UniversalClient, near *nearest) {
	opt.ReadOnly = true
	if opt.ReadTimeout >= 0 { // negative: no deadline, as the main client
		opt.ReadTimeout = min(opt.ReadTimeout, ReplicaReadTimeout)
	}
	opt.OnConnect = func(ctx context.Context, cn *redis.Conn) error {
		return cn.ReadOnly(ctx).Err()
	}
	switch mode {
	case ReplicasRandom:
		opt.RouteRandomly = true
	case ReplicasLatency:
		near = newNearest(opt.ClusterSlots, rtt)
		opt.ClusterSlots = near.Slots
	}
	return redis.NewClusterClient(&opt), near
}
