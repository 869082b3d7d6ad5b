package main

import (
	"strconv"
	"strings"
	"testing"

	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/store"
)

// replicatedCluster starts a Cluster of 3 masters with a replica each,
// stopped when t ends, and returns it with a key prefix of t's own and the
// environment of an instance on it under that prefix (more appended).
func replicatedCluster(t *testing.T, more ...string) (*redistest.Cluster, string, []string) {
	t.Helper()
	cluster, err := redistest.StartClusterWithReplicas(3, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Stop)
	prefix := redistest.Prefix(t)
	env := append([]string{"REALSYNC_KEY_PREFIX=" + prefix, "REALSYNC_JWT_SECRET=e2e-secret",
		"REALSYNC_REDIS_CLUSTER_ADDRS=" + strings.Join(cluster.Addrs(), ","), loadTestLimits}, more...)
	return cluster, prefix, env
}

// masterOfRoom is the master holding the room's shard (its id's first two
// characters in base 36) and the shard's slot.
func masterOfRoom(t *testing.T, cluster *redistest.Cluster, prefix, room string) (*redistest.Server, int) {
	t.Helper()
	shard, err := strconv.ParseInt(room[:2], 36, 32)
	if err != nil {
		t.Fatalf("room id %q: %v", room, err)
	}
	master, slot, err := cluster.MasterOf(t.Context(), store.ShardTags(prefix, 16, store.SchemaVersion)[shard])
	if err != nil {
		t.Fatal(err)
	}
	return master, slot
}
