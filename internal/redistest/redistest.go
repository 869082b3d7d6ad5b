// Package redistest starts real redis-server processes for tests: a
// standalone server and a 3-master Cluster on free loopback ports, shared
// by the tests of one test binary and stopped by StopAll (call it from
// TestMain); and, for a test of its own, a Cluster with replicas to fail
// over (StartClusterWithReplicas). Set REALSYNC_TEST_REDIS_URL and REALSYNC_TEST_CLUSTER_ADDRS to
// use servers that already run instead. With REALSYNC_BENCH_REDIS_CPUS
// set (a taskset CPU list, e.g. "0-1"; scripts/bench.sh sets it), every
// server started here runs on those CPUs, apart from the benchmark that
// drives it.
package redistest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Server is one redis-server process.
type Server struct {
	Addr string
	Port int
	Dir  string
	ID   string // Cluster node ID; empty outside a Cluster
	args []string
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd's process has ended
}

// StartServer starts redis-server on a free loopback port with extra
// arguments (e.g. "--appendonly", "yes"). Data lives in a fresh directory.
// A port taken between its choice and the server's bind (by a parallel
// test's server, an outgoing connection) is given up for another.
func StartServer(extra ...string) (*Server, error) {
	for try := 1; ; try++ {
		s, err := NewServer(extra...)
		if err != nil {
			return nil, err
		}
		err = s.Start()
		if err == nil || !errors.Is(err, errPortTaken) || try == 5 {
			return s, err
		}
		s.Stop()
	}
}

// errPortTaken: the server started did not get its port.
var errPortTaken = errors.New("redistest: the port was taken")

// NewServer is StartServer without the start: the port and directory are
// chosen, nothing listens until Start (for tests of a Redis that comes up
// late). Stop removes the directory.
func NewServer(extra ...string) (*Server, error) {
	dir, err := os.MkdirTemp("", "redistest-")
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return &Server{Addr: "127.0.0.1:" + strconv.Itoa(port), Port: port, Dir: dir,
		args: append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
			"--save", "", "--appendonly", "no", "--protected-mode", "no", "--logfile", filepath.Join(dir, "redis.log")}, extra...)}, nil
}

// Start (re)starts the process with its arguments and waits until it
// answers PING.
func (s *Server) Start() error {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return fmt.Errorf("redis-server not found (the README's test command installs it): %w", err)
	}
	s.cmd, err = placed(bin, s.args)
	if err != nil {
		return err
	}
	// The server dies with the test process, even when that one is killed.
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := s.cmd.Start(); err != nil {
		return err
	}
	done, cmd := make(chan struct{}), s.cmd
	s.done = done
	go func() { cmd.Wait(); close(done) }()
	if err := waitPing(s.Addr, 10*time.Second, done); err != nil {
		return err
	}
	// what answers is this process, not another that holds the port
	if pid, err := serverPid(s.Addr); err != nil || pid != s.cmd.Process.Pid {
		return fmt.Errorf("%w: %s answers as process %d (%v), not %d", errPortTaken, s.Addr, pid, err, s.cmd.Process.Pid)
	}
	return nil
}

// serverPid is the process id the server at addr reports.
func serverPid(addr string) (int, error) {
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	info, err := c.Info(ctx, "server").Result()
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "process_id:"); ok {
			return strconv.Atoi(v)
		}
	}
	return 0, fmt.Errorf("no process_id in INFO server")
}

// placed is the command that runs bin with args, on the CPUs of
// REALSYNC_BENCH_REDIS_CPUS when set (through taskset, so that every
// thread of the server inherits them).
func placed(bin string, args []string) (*exec.Cmd, error) {
	cpus := os.Getenv("REALSYNC_BENCH_REDIS_CPUS")
	if cpus == "" {
		return exec.Command(bin, args...), nil
	}
	ts, err := exec.LookPath("taskset")
	if err != nil {
		return nil, fmt.Errorf("REALSYNC_BENCH_REDIS_CPUS=%s needs taskset (util-linux): %w", cpus, err)
	}
	return exec.Command(ts, append([]string{"-c", cpus, bin}, args...)...), nil
}

// Kill stops the process at once with SIGKILL.
func (s *Server) Kill() {
	if s.cmd != nil && s.cmd.Process != nil {
		s.cmd.Process.Kill()
		select {
		case <-s.done:
		case <-time.After(2 * time.Second):
		}
	}
}

// Pause stops the process with SIGSTOP: connections are still accepted
// (by the kernel) and nothing is answered, as from a Redis that hangs.
// Resume (SIGCONT) lets it go on; Stop kills it paused or not.
func (s *Server) Pause() { s.signal(syscall.SIGSTOP) }

// Resume continues a paused process (SIGCONT).
func (s *Server) Resume() { s.signal(syscall.SIGCONT) }

func (s *Server) signal(sig syscall.Signal) {
	if s.cmd != nil && s.cmd.Process != nil {
		s.cmd.Process.Signal(sig)
	}
}

// Stop kills the process and removes its directory.
func (s *Server) Stop() {
	s.Kill()
	os.RemoveAll(s.Dir)
}

// waitPing waits until the server at addr answers PING; it gives up when
// exited is closed (the process ended: a port it could not bind).
func waitPing(addr string, timeout time.Duration, exited <-chan struct{}) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if pingOK(addr) {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("%w: redis-server for %s exited", errPortTaken, addr)
		case <-time.After(20 * time.Millisecond):
		}
	}
	return fmt.Errorf("redis at %s did not answer within %s", addr, timeout)
}

func pingOK(addr string) bool {
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	return c.Ping(ctx).Err() == nil
}

// freePort finds a loopback port p with p+10000 (the Cluster bus port) also
// free.
func freePort() (int, error) {
	for i := 0; i < 100; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		p := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if p+10000 > 65535 {
			continue
		}
		if bus, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p+10000)); err == nil {
			bus.Close()
			return p, nil
		}
	}
	return 0, fmt.Errorf("no free port pair")
}

// Cluster is a Redis Cluster: masters, and replicas when it was started
// by StartClusterWithReplicas.
type Cluster struct {
	Nodes []*Server
}

// Addrs are the nodes' addresses.
func (c *Cluster) Addrs() []string {
	out := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		out[i] = n.Addr
	}
	return out
}

// PartialCoverage sets cluster-require-full-coverage no on every node, so
// that the slots of the masters up are served while another is down (a
// master down with no replica to take over, as tests of that case make).
func (c *Cluster) PartialCoverage(ctx context.Context) error {
	for _, addr := range c.Addrs() {
		rc := redis.NewClient(&redis.Options{Addr: addr})
		err := rc.ConfigSet(ctx, "cluster-require-full-coverage", "no").Err()
		rc.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// Stop stops every node.
func (c *Cluster) Stop() {
	for _, n := range c.Nodes {
		n.Stop()
	}
}

// StartCluster starts n masters, splits the 16384 slots evenly and waits
// until every node reports cluster_state:ok.
func StartCluster(n int) (*Cluster, error) {
	c, err := startNodes(n, 2000)
	if err != nil {
		return nil, err
	}
	if err := c.form(n); err != nil {
		c.Stop()
		return nil, err
	}
	if err := c.waitOK(20 * time.Second); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

// startNodes starts n cluster-enabled servers, not yet a cluster.
func startNodes(n, nodeTimeoutMs int) (*Cluster, error) {
	c := &Cluster{}
	for i := 0; i < n; i++ {
		s, err := StartServer("--cluster-enabled", "yes", "--cluster-node-timeout", strconv.Itoa(nodeTimeoutMs),
			"--cluster-config-file", "nodes.conf")
		if err != nil {
			c.Stop()
			return nil, err
		}
		c.Nodes = append(c.Nodes, s)
	}
	return c, nil
}

// form gives every node a config epoch of its own (1, 2, ...), splits the
// slots evenly over the first masters nodes, has every node meet the first
// one, and records each node's ID.
//
// The epochs are what redis-cli --cluster create sets (CLUSTER
// SET-CONFIG-EPOCH, on nodes that know no other yet). Without them every
// node starts at epoch 0 and the nodes resolve the collisions themselves
// once they met, each bump reaching the others by gossip up to a second
// later, after cluster_state:ok. A slot moved then (MoveSlot) was split
// for good in 2 runs of 80 with both cores busy: its new owner, which had not
// heard yet of its old owner's bump, claimed it with an epoch below that
// one; a third node, not yet told of the move and knowing the bump, sent
// it an UPDATE naming the old owner, which it took: it gave the slot back
// to the old owner, deleting the slot's keys (a dirty slot), while the old
// owner said it was the new one's, and every call was MOVED back and
// forth from then on: what TestFeedFollowsASlotMove's one CI failure
// looked like ("no write succeeded within 10s of the move").
func (c *Cluster) form(masters int) error {
	ctx := context.Background()
	for i, s := range c.Nodes {
		cl := redis.NewClient(&redis.Options{Addr: s.Addr})
		err := cl.Do(ctx, "CLUSTER", "SET-CONFIG-EPOCH", i+1).Err()
		if err == nil && i < masters {
			lo, hi := i*16384/masters, (i+1)*16384/masters-1
			err = cl.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", lo, hi).Err()
		}
		if err == nil && i > 0 {
			err = cl.ClusterMeet(ctx, "127.0.0.1", strconv.Itoa(c.Nodes[0].Port)).Err()
		}
		if err == nil {
			s.ID, err = cl.ClusterMyID(ctx).Result()
		}
		cl.Close()
		if err != nil {
			return fmt.Errorf("forming cluster: %w", err)
		}
	}
	return nil
}

// waitOK waits until every node reports cluster_state:ok and knows every
// node of Nodes, then until the nodes agree on the epochs (waitSettled).
// Every 3 s without it, a node that does not know every node meets the
// first one again: Redis drops a handshake that took longer than the node
// timeout and never tries it again, which on a loaded machine left a node
// out for good (a CI run: "cluster not ok within 20s").
func (c *Cluster) waitOK(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	nextMeet := time.Now().Add(3 * time.Second)
	for !c.allOK() {
		if time.Now().After(deadline) {
			return fmt.Errorf("cluster not ok within %s: %s", timeout, c.states())
		}
		if time.Now().After(nextMeet) {
			c.meetAgain()
			nextMeet = time.Now().Add(3 * time.Second)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return c.waitSettled(context.Background(), time.Until(deadline))
}

// meetAgain has every node that does not know every node of Nodes meet
// the first one (a node known already is met without harm: the handshake
// ends when its ID turns out known).
func (c *Cluster) meetAgain() {
	ctx := context.Background()
	want := "cluster_known_nodes:" + strconv.Itoa(len(c.Nodes))
	for _, s := range c.Nodes[1:] {
		cl := redis.NewClient(&redis.Options{Addr: s.Addr})
		if info, err := cl.ClusterInfo(ctx).Result(); err == nil && !strings.Contains(info, want) {
			cl.ClusterMeet(ctx, "127.0.0.1", strconv.Itoa(c.Nodes[0].Port))
		}
		cl.Close()
	}
}

// states is each node's cluster_state and known nodes, for an error.
func (c *Cluster) states() string {
	var out []string
	for _, s := range c.Nodes {
		cl := redis.NewClient(&redis.Options{Addr: s.Addr})
		info, err := cl.ClusterInfo(context.Background()).Result()
		cl.Close()
		state, known := "?", "?"
		for _, line := range strings.Split(info, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "cluster_state:"); ok {
				state = v
			} else if v, ok := strings.CutPrefix(strings.TrimSpace(line), "cluster_known_nodes:"); ok {
				known = v
			}
		}
		if err != nil {
			state = err.Error()
		}
		out = append(out, fmt.Sprintf("%s %s, knows %s", s.Addr, state, known))
	}
	return strings.Join(out, "; ")
}

// waitSettled waits until the nodes agree on the epochs (settled), within
// timeout.
func (c *Cluster) waitSettled(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		err := c.settled(ctx)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the Cluster's nodes disagree on the epochs after %s: %w", timeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (c *Cluster) allOK() bool {
	for _, s := range c.Nodes {
		cl := redis.NewClient(&redis.Options{Addr: s.Addr})
		info, err := cl.ClusterInfo(context.Background()).Result()
		cl.Close()
		want := "cluster_known_nodes:" + strconv.Itoa(len(c.Nodes))
		if err != nil || !strings.Contains(info, "cluster_state:ok") || !strings.Contains(info, want) {
			return false
		}
	}
	return true
}

// settled says (nil) that the nodes agree on the epochs, as in a Cluster
// that has run a while: every node has the same current epoch, and sees
// each master with the same config epoch, so that a slot's new owner,
// which takes an epoch above every one it knows (CLUSTER SETSLOT NODE on
// the importing node), claims it above its old owner's everywhere (see
// form). Its error names the first disagreement.
func (c *Cluster) settled(ctx context.Context) error {
	current := map[string]string{}   // node's address: its current epoch
	epochs := map[string][2]string{} // master's ID: its config epoch, and who said so
	for _, s := range c.Nodes {
		cl := redis.NewClient(&redis.Options{Addr: s.Addr, Protocol: 2})
		info, err := cl.ClusterInfo(ctx).Result()
		var nodes string
		if err == nil {
			nodes, err = cl.ClusterNodes(ctx).Result()
		}
		cl.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", s.Addr, err)
		}
		for _, l := range strings.Split(info, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(l), "cluster_current_epoch:"); ok {
				current[s.Addr] = v
			}
		}
		// "<id> <ip:port@bus> <flags> <master id or -> <ping> <pong> <config epoch> ..."
		for _, l := range strings.Split(strings.TrimSpace(nodes), "\n") {
			f := strings.Fields(l)
			if len(f) < 8 || !strings.Contains(f[2], "master") {
				continue
			}
			seen, ok := epochs[f[0]]
			if !ok {
				epochs[f[0]] = [2]string{f[6], s.Addr}
			} else if seen[0] != f[6] {
				return fmt.Errorf("master %.8s has config epoch %s as %s sees it, %s as %s does", f[0], seen[0], seen[1], f[6], s.Addr)
			}
		}
	}
	first := ""
	for addr, e := range current {
		if first == "" {
			first = addr
		} else if e != current[first] {
			return fmt.Errorf("current epoch %s on %s, %s on %s", current[first], first, e, addr)
		}
	}
	return nil
}

var (
	mu         sync.Mutex
	standalone *Server
	cluster    *Cluster
)

// StandaloneURL returns the redis:// URL of the shared standalone server,
// starting it on first use, with the event contract checked on it
// (events.go) unless a benchmark starts it: a process that runs only
// benchmarks measures them without the checker's pattern subscriber in
// Redis (every publish matched and sent to it) and its decoding in the
// process.
func StandaloneURL(tb testing.TB) string {
	tb.Helper()
	if u := os.Getenv("REALSYNC_TEST_REDIS_URL"); u != "" {
		return u
	}
	mu.Lock()
	defer mu.Unlock()
	if standalone == nil {
		s, err := StartServer()
		if err != nil {
			tb.Fatalf("starting redis-server: %v", err)
		}
		if _, bench := tb.(*testing.B); !bench {
			if err := watchEvents(s.Addr); err != nil {
				s.Stop()
				tb.Fatalf("event contract: %v", err)
			}
		}
		standalone = s
	}
	return "redis://" + standalone.Addr
}

// ClusterAddrs returns the seed addresses of the shared 3-master Cluster,
// starting it on first use.
func ClusterAddrs(tb testing.TB) []string {
	tb.Helper()
	if a := os.Getenv("REALSYNC_TEST_CLUSTER_ADDRS"); a != "" {
		return strings.Split(a, ",")
	}
	mu.Lock()
	defer mu.Unlock()
	if cluster == nil {
		c, err := StartCluster(3)
		if err != nil {
			tb.Fatalf("starting redis cluster: %v", err)
		}
		cluster = c
	}
	return cluster.Addrs()
}

// Main runs a package's tests, then stops the shared servers and exits:
// call it as the whole body of TestMain. The package fails when an event
// published on the shared standalone server broke the event contract
// (events.go), or when one of after, run after the tests, returns an error.
func Main(m *testing.M, after ...func() error) {
	code := m.Run()
	for _, f := range after {
		if err := f(); err != nil {
			fmt.Fprintln(os.Stderr, "FAIL:", err)
			if code == 0 {
				code = 1
			}
		}
	}
	mu.Lock()
	ok := finishEvents()
	mu.Unlock()
	if !ok && code == 0 {
		code = 1
	}
	StopAll()
	os.Exit(code)
}

// StopAll stops the shared servers. Call it from TestMain after m.Run.
func StopAll() {
	mu.Lock()
	defer mu.Unlock()
	if events != nil {
		events.stop()
		events = nil
	}
	if standalone != nil {
		standalone.Stop()
		standalone = nil
	}
	if cluster != nil {
		cluster.Stop()
		cluster = nil
	}
}

// Prefix returns a key prefix unique to this test, so tests sharing a
// server never see each other's keys.
func Prefix(tb testing.TB) string {
	tb.Helper()
	b := make([]byte, 6)
	rand.Read(b)
	return "t" + hex.EncodeToString(b)
}

// Backend names one kind of Redis a contract suite runs against.
type Backend struct {
	Name         string
	URL          string   // standalone
	ClusterAddrs []string // cluster
	// Neither: the embedded in-process store.
}

// Backends returns standalone, Cluster and embedded, starting the shared
// servers as needed.
func Backends(tb testing.TB) []Backend {
	tb.Helper()
	return []Backend{
		{Name: "standalone", URL: StandaloneURL(tb)},
		{Name: "cluster", ClusterAddrs: ClusterAddrs(tb)},
		{Name: "embedded"},
	}
}

// Each runs f as a subtest of t on each of Backends, named by it.
func Each(t *testing.T, f func(t *testing.T, b Backend)) {
	t.Helper()
	for _, b := range Backends(t) {
		t.Run(b.Name, func(t *testing.T) { f(t, b) })
	}
}
