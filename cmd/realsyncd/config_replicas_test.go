package main

import (
	"testing"

	"github.com/realsync/realsync/store"
)

// REALSYNC_REDIS_READ_FROM_REPLICAS: off by default, its values parse on a
// Cluster, the flag wins, and a bad value or one without a Cluster is
// reported naming the variable; the store gets what was parsed.
func TestParseConfigReplicaReads(t *testing.T) {
	cluster := "REALSYNC_REDIS_CLUSTER_ADDRS"
	tests := []struct {
		name string
		env  map[string]string
		args []string
		want store.ReplicaReads
		err  string // want an error naming this, "" for none
	}{
		{name: "Default", want: store.ReplicasOff},
		{name: "DefaultOnCluster", env: map[string]string{cluster: "10.0.0.1:7000"}, want: store.ReplicasOff},
		{name: "OffWithoutCluster", env: map[string]string{"REALSYNC_REDIS_READ_FROM_REPLICAS": "off"}, want: store.ReplicasOff},
		{name: "On", env: map[string]string{cluster: "10.0.0.1:7000", "REALSYNC_REDIS_READ_FROM_REPLICAS": "on"}, want: store.ReplicasOn},
		{name: "Random", env: map[string]string{cluster: "10.0.0.1:7000", "REALSYNC_REDIS_READ_FROM_REPLICAS": "random"}, want: store.ReplicasRandom},
		{name: "Latency", env: map[string]string{cluster: "10.0.0.1:7000", "REALSYNC_REDIS_READ_FROM_REPLICAS": "latency"}, want: store.ReplicasLatency},
		{name: "FlagWins", env: map[string]string{cluster: "10.0.0.1:7000", "REALSYNC_REDIS_READ_FROM_REPLICAS": "on"},
			args: []string{"-redis-read-from-replicas", "off"}, want: store.ReplicasOff},
		{name: "Bad", env: map[string]string{cluster: "10.0.0.1:7000", "REALSYNC_REDIS_READ_FROM_REPLICAS": "yes"}, err: "REALSYNC_REDIS_READ_FROM_REPLICAS"},
		{name: "Standalone", env: map[string]string{"REALSYNC_REDIS_URL": "redis://localhost:6379", "REALSYNC_REDIS_READ_FROM_REPLICAS": "on"},
			err: "REALSYNC_REDIS_READ_FROM_REPLICAS"},
		{name: "Embedded", args: []string{"-redis-read-from-replicas", "random"}, err: "REALSYNC_REDIS_READ_FROM_REPLICAS"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, ok := parseCase(t, tc.env, tc.args, tc.err)
			if !ok {
				return
			}
			if c.ReplicaReads != tc.want {
				t.Errorf("ReplicaReads %q, want %q", c.ReplicaReads, tc.want)
			}
			if got := storeConfig(c).ReadFromReplicas; got != tc.want {
				t.Errorf("store gets ReadFromReplicas %q, want %q", got, tc.want)
			}
		})
	}
}
