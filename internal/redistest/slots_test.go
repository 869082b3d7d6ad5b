package redistest

import (
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// A Cluster that StartCluster returns is as redis-cli --cluster create
// leaves one once it is ok: every master has a config epoch of its own,
// not 0, and the nodes agree on every master's epoch and on the current
// one. Started at epoch 0, the nodes resolved the collisions themselves,
// by gossip, after cluster_state:ok, and one of them kept 0: a slot
// MoveSlot moved meanwhile was split for good, its new owner deleting
// its keys (see form).
func TestStartClusterSettlesEpochs(t *testing.T) {
	c, err := StartCluster(3)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	ctx := t.Context()
	if err := c.settled(ctx); err != nil {
		t.Errorf("the nodes disagree on the epochs once the Cluster is ok: %v", err)
	}
	owner := map[string]string{} // config epoch: the master that has it
	for _, n := range c.Nodes {
		cl := redis.NewClient(&redis.Options{Addr: n.Addr, Protocol: 2})
		info, err := cl.ClusterInfo(ctx).Result()
		cl.Close()
		if err != nil {
			t.Fatal(err)
		}
		epoch := ""
		for _, l := range strings.Split(info, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(l), "cluster_my_epoch:"); ok {
				epoch = v
			}
		}
		switch {
		case epoch == "" || epoch == "0":
			t.Errorf("%s: config epoch %q, want one of its own (not 0)", n.Addr, epoch)
		case owner[epoch] != "":
			t.Errorf("%s and %s share config epoch %s", owner[epoch], n.Addr, epoch)
		default:
			owner[epoch] = n.Addr
		}
	}
}
