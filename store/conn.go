package store

import (
	"context"

	"github.com/realsync/realsync/store/internal/conn"
)

// ReplicaReads says where a Cluster's browsing reads go
// (REALSYNC_REDIS_READ_FROM_REPLICAS): the room list and the lobby stats
// only, from replicas that may lag their masters (conn.ReplicaReads says
// what each mode does, and the staleness).
type ReplicaReads = conn.ReplicaReads

// The modes of ReplicaReads.
const (
	ReplicasOff     = conn.ReplicasOff
	ReplicasOn      = conn.ReplicasOn
	ReplicasRandom  = conn.ReplicasRandom
	ReplicasLatency = conn.ReplicasLatency
)

// ParseReplicaReads reads a REALSYNC_REDIS_READ_FROM_REPLICAS value; ""
// is off.
func ParseReplicaReads(s string) (ReplicaReads, error) { return conn.ParseReplicaReads(s) }

// Ping reports whether this instance reaches Redis: on a Cluster, the
// masters of at least half of the store's shards (conn.Clients.Ping),
// through connections of its own, so that it answers as fast while every
// request connection is taken.
func (s *Store) Ping(ctx context.Context) error { return s.conn.Ping(ctx, s.keys, s.shards) }
