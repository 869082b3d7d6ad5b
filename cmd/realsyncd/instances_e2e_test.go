package main

import (
	"context"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/internal/redistest"
)

const e2eAdminToken = "e2e-admin-token-0123456789abcdef0123"

// listInstances reads GET /v1/admin/instances through in: id → instance.
func listInstances(t *testing.T, in *instance) map[string]map[string]any {
	t.Helper()
	status, body := call(t, "GET", in.url+"/v1/admin/instances", e2eAdminToken, nil)
	if status != 200 {
		t.Fatalf("list instances: %d %v", status, body)
	}
	out := map[string]map[string]any{}
	for _, x := range body["instances"].([]any) {
		m := x.(map[string]any)
		out[m["addr"].(string)] = m
	}
	return out
}

// addrOf is the address an instance started by start() registers (its
// REALSYNC_ADDR is a loopback host:port, so no hostname is derived).
func addrOf(in *instance) string { return strings.TrimPrefix(in.url, "http://") }

// waitInstances waits (bounded) until ok holds for the listing through in.
func waitInstances(t *testing.T, in *instance, within time.Duration, what string, ok func(map[string]map[string]any) bool) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		got := listInstances(t, in)
		if ok(got) {
			return time.Since(start)
		}
		if time.Since(start) > within {
			t.Fatalf("not within %v: %s; listed %v", within, what, got)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Two binaries on one Redis both appear in the instance list with their
// addresses, version and open streams; one killed with SIGKILL leaves the
// list within the registration TTL; one stopped with SIGTERM is gone at
// once; once all are gone, no registry key remains. The admin token never
// reaches a log line.
func TestInstanceRegistry(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	for _, backend := range []string{"standalone", "cluster"} {
		t.Run(backend, func(t *testing.T) { instanceRegistry(t, bin, backend) })
	}
}

func instanceRegistry(t *testing.T, bin, backend string) {
	// 3 s: the live instances' registrations (renewed every third of it)
	// must outlast a loaded machine's stall of their processes
	const ttl = 3 * time.Second
	env := append(backendEnv(t, backend), "REALSYNC_PRESENCE_TTL="+ttl.String(), "REALSYNC_ADMIN_TOKEN="+e2eAdminToken)
	a := start(t, bin, env...)
	b := start(t, bin, append(env, "REALSYNC_ADVERTISE_ADDR=b.example:7001")...)
	got := listInstances(t, a)
	if len(got) != 2 || got[addrOf(a)] == nil || got["b.example:7001"] == nil {
		t.Fatalf("listed %v, want %s and b.example:7001", got, addrOf(a))
	}
	for addr, in := range got {
		if in["version"] == "" || in["id"] == "" || in["streams"] != 0.0 || !settingsRE.MatchString(in["settings"].(string)) {
			t.Errorf("%s: %v", addr, in)
		}
	}
	// the same settings: one digest
	if got[addrOf(a)]["settings"] != got["b.example:7001"]["settings"] {
		t.Errorf("a and b, of the same settings, report digests %v and %v", got[addrOf(a)]["settings"], got["b.example:7001"]["settings"])
	}
	waitSettings(t, a, 1)

	// A stream on b shows in its next heartbeat.
	id, toks := party(t, b, 1)
	f := follow(t, []string{b.url}, id, toks[1], false)
	f.waitVersion(3, 10*time.Second)
	waitInstances(t, a, 3*ttl, "b reports its stream", func(m map[string]map[string]any) bool {
		return m["b.example:7001"] != nil && m["b.example:7001"]["streams"] == 1.0
	})

	b.kill() // the cleanup's stop waits for its exit
	took := waitInstances(t, a, 2*ttl, "the killed instance leaves the list", func(m map[string]map[string]any) bool {
		return len(m) == 1 && m[addrOf(a)] != nil
	})
	t.Logf("a killed instance left the list %v after its death (TTL %v)", took.Round(10*time.Millisecond), ttl)

	// c allows other modes: its settings differ (it would check and
	// match tickets otherwise), and the metric says two
	c := start(t, bin, append(env, "REALSYNC_MODES=duel,ranked")...)
	if got := listInstances(t, a); len(got) != 2 || got[addrOf(c)] == nil || got[addrOf(c)]["settings"] == got[addrOf(a)]["settings"] {
		t.Fatalf("after c started with other modes: %v", got)
	}
	waitSettings(t, a, 2)
	c.stop(t)
	if got := listInstances(t, a); len(got) != 1 || got[addrOf(c)] != nil {
		t.Fatalf("right after c stopped cleanly: %v", got)
	}
	waitSettings(t, a, 1)
	a.stop(t)
	if n := registryKeyCount(t, backend, env); n != 0 {
		t.Errorf("%d registry keys remain after every instance left", n)
	}
	for _, in := range []*instance{a, b, c} {
		if strings.Contains(in.logText(), e2eAdminToken) {
			t.Fatal("the admin token appears in the logs")
		}
	}
}

// settingsRE is a settings digest (fleet.Instance.Settings).
var settingsRE = regexp.MustCompile(`^[0-9a-f]{12}$`)

// waitSettings waits (bounded: the metric is read from Redis at most
// every few seconds) until in's realsync_instance_settings is n.
func waitSettings(t *testing.T, in *instance, n float64) {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		got := metricValue(scrapeMetrics(t, in.url+"/metrics"), "realsync_instance_settings")
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("realsync_instance_settings %v, want %v", got, n)
		}
	}
}

// registryKeyCount counts the keys of the instance registry of the
// deployment env describes, on every node.
func registryKeyCount(t *testing.T, backend string, env []string) int {
	t.Helper()
	var prefix string
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "REALSYNC_KEY_PREFIX="); ok {
			prefix = v
		}
	}
	ctx := context.Background()
	count := func(ctx context.Context, c *redis.Client) (int, error) {
		n := 0
		iter := c.Scan(ctx, 0, "{"+prefix+":instances}*", 1000).Iterator()
		for iter.Next(ctx) {
			n++
		}
		return n, iter.Err()
	}
	if backend == "cluster" {
		c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: redistest.ClusterAddrs(t)})
		defer c.Close()
		var total atomic.Int64 // ForEachMaster runs on every node at once
		err := c.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
			k, err := count(ctx, node)
			total.Add(int64(k))
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return int(total.Load())
	}
	c := redis.NewClient(mustParse(t, redistest.StandaloneURL(t)))
	defer c.Close()
	n, err := count(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
