package redistest

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// A server started with REALSYNC_BENCH_REDIS_CPUS runs on those CPUs
// (scripts/bench.sh places Redis apart from the servers and the load);
// without it, where the test runs.
func TestStartServerPlacesRedis(t *testing.T) {
	mine := allowedCPUs(t, os.Getpid())
	first := strings.FieldsFunc(mine, func(r rune) bool { return r == ',' || r == '-' })[0]
	for _, tc := range []struct {
		name, cpus, want string
	}{
		{"unset", "", mine},
		{"one CPU of this test's", first, first},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("REALSYNC_BENCH_REDIS_CPUS", tc.cpus)
			srv, err := StartServer()
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Stop()
			if got := allowedCPUs(t, srv.cmd.Process.Pid); got != tc.want {
				t.Fatalf("redis-server runs on CPUs %q, want %q", got, tc.want)
			}
			if !pingOK(srv.Addr) {
				t.Fatal("the placed server does not answer")
			}
		})
	}
}

// allowedCPUs is the Cpus_allowed_list of process pid.
func allowedCPUs(t *testing.T, pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "Cpus_allowed_list:"); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatalf("no Cpus_allowed_list in /proc/%d/status", pid)
	return ""
}

// A node whose meet was lost (Redis drops a handshake that outlasts the
// node timeout, and never tries it again) is met again while the Cluster
// is awaited: it forms within the wait, where it stayed out for good.
func TestWaitOKMeetsALostNodeAgain(t *testing.T) {
	c, err := startNodes(3, 2000)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	ctx := t.Context()
	for i, s := range c.Nodes {
		cl := redis.NewClient(&redis.Options{Addr: s.Addr})
		err := cl.Do(ctx, "CLUSTER", "SET-CONFIG-EPOCH", i+1).Err()
		if err == nil {
			lo, hi := i*16384/3, (i+1)*16384/3-1
			err = cl.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", lo, hi).Err()
		}
		if err == nil && i == 1 { // the last node's meet is the lost one
			err = cl.ClusterMeet(ctx, "127.0.0.1", strconv.Itoa(c.Nodes[0].Port)).Err()
		}
		if err == nil {
			s.ID, err = cl.ClusterMyID(ctx).Result()
		}
		cl.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := c.waitOK(20 * time.Second); err != nil {
		t.Fatal(err)
	}
}
