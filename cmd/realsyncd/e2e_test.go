package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/realsync/realsync/internal/invariants"
	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/internal/wait"
	"github.com/realsync/realsync/store"
	"github.com/redis/go-redis/v9"
)

func TestMain(m *testing.M) { redistest.Main(m, removeBinary) }

// binaries are the realsyncd builds the tests run, each built for the
// whole package the first time a test asks, and removed by TestMain: [0]
// as deployed (buildBinary: static, -trimpath, as
// scripts/build-realsyncd.sh and the image build it, so that it reuses
// the packages scripts/test.sh compiled for its checks and the SDKs'
// binary: built with cgo, it was a fourth compile of the module), [1]
// with the race detector (raceBinary, which needs cgo). A
// race build's server takes about three times the CPU: on CI's 2 cores
// the package took 500 s with every test on it. The tests that drive the
// most of the server at once (instances sharing rooms, streams,
// matchmaking, personal streams, limits) run the race build, so that a
// data race of the wiring (main's goroutines, shutdown) shows; the rest
// check behaviour that the race-built suites of the store, the API and
// the streams run line by line.
var binaries [2]struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// buildBinary returns the package's realsyncd binary, building it the
// first time.
func buildBinary(t *testing.T) string { return binaryOf(t, 0) }

// raceBinary returns the package's realsyncd binary built with -race,
// building it the first time.
func raceBinary(t *testing.T) string { return binaryOf(t, 1) }

func binaryOf(t *testing.T, race int) string {
	t.Helper()
	b := &binaries[race]
	b.once.Do(func() {
		if b.dir, b.err = os.MkdirTemp("", "realsyncd-test-"); b.err != nil {
			return
		}
		b.path = filepath.Join(b.dir, "realsyncd")
		cmd := exec.Command("go", "build", "-trimpath", "-o", b.path, ".")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if race == 1 {
			cmd = exec.Command("go", "build", "-race", "-o", b.path, ".")
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			b.err = fmt.Errorf("build: %v\n%s", err, out)
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

func removeBinary() error {
	var errs []error
	for i := range binaries {
		if binaries[i].dir != "" {
			errs = append(errs, os.RemoveAll(binaries[i].dir))
		}
	}
	return errors.Join(errs...)
}

// instance is a running realsyncd process.
type instance struct {
	url    string
	logs   *bytes.Buffer
	mu     *sync.Mutex
	cmd    *exec.Cmd
	exited chan error // the process' exit, once
	killed bool
	once   sync.Once
	probe  *http.Client // of /healthz and /readyz: trusts any certificate on https
}

// kill ends the process with SIGKILL, as a crash would.
func (in *instance) kill() {
	in.killed = true
	in.cmd.Process.Kill()
}

// stop sends SIGTERM and waits for a clean exit; it fails the test
// otherwise. Later calls do nothing.
func (in *instance) stop(t *testing.T) {
	in.once.Do(func() {
		if in.killed {
			<-in.exited
			return
		}
		in.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-in.exited:
			if err != nil {
				t.Errorf("realsyncd exited with %v after SIGTERM", err)
			}
		case <-time.After(20 * time.Second):
			in.cmd.Process.Kill()
			t.Error("realsyncd did not stop within 20s of SIGTERM")
		}
	})
}

func (in *instance) logText() string {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.logs.String()
}

// awaitLog waits up to 20 s until the log holds each of pieces and
// returns the log; the test fails otherwise.
func (in *instance) awaitLog(t *testing.T, pieces ...string) string {
	t.Helper()
	return in.awaitLogThat(t, fmt.Sprintf("%q", pieces), func(l string) bool {
		for _, p := range pieces {
			if !strings.Contains(l, p) {
				return false
			}
		}
		return true
	})
}

// awaitLogThat waits until ok holds of the log (wait.Until) and returns
// the log; the test fails otherwise, saying what was awaited and showing
// the log. The log reaches
// the test through a pipe, read apart from the answers the test sees: a
// line written before an answer may be read after it, so a test that
// asserts a line waits for it.
func (in *instance) awaitLogThat(t *testing.T, what string, ok func(log string) bool) string {
	t.Helper()
	var l string
	found := false
	defer func() {
		if !found { // wait.Until failed the test
			t.Logf("the log:\n%s", l)
		}
	}()
	wait.Until(t, "logged: "+what, func() bool {
		l = in.logText()
		return ok(l)
	})
	found = true
	return l
}

// streamCut tells whether the log says the stream of player pid was cut
// for being slow or failing a write.
func streamCut(pid int) func(string) bool {
	return func(log string) bool {
		l := grep(log, fmt.Sprint("player=", pid))
		return strings.Contains(l, "why=slow") || strings.Contains(l, "why=write_error")
	}
}

// complaints returns the last n log lines at level WARN or ERROR.
func (in *instance) complaints(n int) string {
	var out []string
	for _, l := range strings.Split(in.logText(), "\n") {
		if strings.Contains(l, "level=WARN") || strings.Contains(l, "level=ERROR") ||
			strings.Contains(l, `"level":"WARN"`) || strings.Contains(l, `"level":"ERROR"`) {
			out = append(out, l)
		}
	}
	return strings.Join(out[max(0, len(out)-n):], "\n")
}

func freeAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// start runs the binary with env and waits for /readyz; the process is
// stopped with SIGTERM when the test ends, and must exit cleanly.
func start(t *testing.T, bin string, env ...string) *instance {
	t.Helper()
	return ready(t, launchCmd(t, exec.Command(bin), "127.0.0.1:0", env...))
}

// startPatience bounds each step of an instance's start (its listening
// line, /healthz, /readyz): many start at once in a run of the tests, on
// a busy machine.
const startPatience = 30 * time.Second

// ready waits until in answers /readyz with 200.
func ready(t *testing.T, in *instance) *instance {
	t.Helper()
	for deadline := time.Now().Add(startPatience); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if r, err := in.probe.Get(in.url + "/readyz"); err == nil && r.StatusCode == 200 {
			r.Body.Close()
			return in
		}
	}
	t.Fatalf("realsyncd did not become ready:\n%s", in.logText())
	return nil
}

// launch runs the binary with env and waits until it serves /healthz
// (ready or not).
func launch(t *testing.T, bin string, env ...string) *instance {
	t.Helper()
	return launchCmd(t, exec.Command(bin), "127.0.0.1:0", env...)
}

// launchCmd is launch for a command that runs the binary (in a network
// namespace, say) and the address it is to listen on (port 0: the one
// the kernel gives, read from its "listening" log line, so that tests run
// in parallel never race for a port); the process is stopped with SIGTERM
// when the test ends, and must exit cleanly. With REALSYNC_TLS_CERT in
// env its url is https.
func launchCmd(t *testing.T, cmd *exec.Cmd, addr string, env ...string) *instance {
	t.Helper()
	// The streams a test leaves open end at once on SIGTERM, not over the
	// default spread (10 s): TestShutdownSpreadsStreamEnds undoes it.
	cmd.Env = append(os.Environ(), append([]string{"REALSYNC_ADDR=" + addr, "REALSYNC_LOG_LEVEL=debug", "REALSYNC_SSE_SHUTDOWN_SPREAD=0"}, env...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	in := &instance{url: "http://" + addr, logs: &bytes.Buffer{}, mu: &sync.Mutex{}, cmd: cmd, exited: make(chan error, 1),
		probe: http.DefaultClient}
	for _, e := range env {
		if strings.HasPrefix(e, "REALSYNC_TLS_CERT=") {
			in.url = "https://" + addr
			in.probe = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
		}
	}
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	copied := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			in.mu.Lock()
			in.logs.WriteString(sc.Text() + "\n")
			in.mu.Unlock()
		}
		close(copied)
	}()
	go func() { <-copied; in.exited <- cmd.Wait() }()
	t.Cleanup(func() {
		in.stop(t)
		if t.Failed() {
			t.Logf("realsyncd %s, its warnings and errors:\n%s", in.url, in.complaints(40))
		}
	})
	if strings.HasSuffix(addr, ":0") {
		bound := ""
		for deadline := time.Now().Add(startPatience); bound == "" && time.Now().Before(deadline); {
			if m := listeningRE.FindStringSubmatch(in.logText()); m != nil {
				bound = m[1] + m[2]
			} else {
				time.Sleep(50 * time.Millisecond)
			}
		}
		if bound == "" {
			t.Fatalf("realsyncd logged no listening address:\n%s", in.logText())
		}
		in.url = strings.Replace(in.url, addr, bound, 1)
	}
	for deadline := time.Now().Add(startPatience); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if r, err := in.probe.Get(in.url + "/healthz"); err == nil && r.StatusCode == 200 {
			r.Body.Close()
			return in
		}
	}
	t.Fatalf("realsyncd did not start:\n%s", in.logText())
	return nil
}

// listeningRE finds the address in realsyncd's "listening" log line, as
// text or JSON.
var listeningRE = regexp.MustCompile(`msg="?listening"?[^\n]*? addr=(\S+)|"msg":"listening"[^\n]*?"addr":"([^"]+)"`)

// calls is call's client, its pool apart from the streams' and probes'
// (http.DefaultClient): a burst of requests opening at once leaves
// connections dialed and never used in its client's pool, which realsyncd
// closes 10 s after their accept (no request came); a POST or PATCH sent
// on one just then gets EOF, and Go's transport does not resend it (see
// the followers' client, and docs/SECURITY.md).
var calls = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}

func call(t *testing.T, method, url, token string, body any) (int, map[string]any) {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, url, rd)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := calls.Do(req)
	if err != nil {
		t.Error(err)
		return 0, nil
	}
	defer res.Body.Close()
	var out map[string]any
	json.NewDecoder(res.Body).Decode(&out)
	return res.StatusCode, out
}

func guest(t *testing.T, in *instance, name string) string {
	status, body := call(t, "POST", in.url+"/v1/auth/guest", "", map[string]any{"name": name})
	if status != 201 {
		t.Fatalf("guest: %d %v", status, body)
	}
	return body["token"].(string)
}

// Two instances share one Redis: 50 players join a 4-seat room through
// both at once; exactly 3 get in, 47 get ROOM_FULL, and the data is
// consistent afterwards. No token ever reaches a log line.
func TestTwoInstancesShareRooms(t *testing.T) {
	t.Parallel()
	bin := raceBinary(t)
	for _, backend := range []string{"standalone", "cluster"} {
		t.Run(backend, func(t *testing.T) { twoInstancesShareRooms(t, bin, backend) })
	}
}

// sharedBackend is the environment of instances sharing backend
// ("standalone" or "cluster") under a key prefix of their own, and a client
// of that backend, closed when the test ends.
func sharedBackend(t *testing.T, backend string) (env []string, prefix string, c redis.UniversalClient) {
	t.Helper()
	prefix = redistest.Prefix(t)
	env = []string{"REALSYNC_KEY_PREFIX=" + prefix, "REALSYNC_JWT_SECRET=e2e-secret"}
	if backend == "cluster" {
		addrs := redistest.ClusterAddrs(t)
		env = append(env, "REALSYNC_REDIS_CLUSTER_ADDRS="+strings.Join(addrs, ","))
		c = redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
	} else {
		url := redistest.StandaloneURL(t)
		env = append(env, "REALSYNC_REDIS_URL="+url)
		c = redis.NewClient(mustParse(t, url))
	}
	t.Cleanup(func() { c.Close() })
	return env, prefix, c
}

// shardTag is the hash tag of shard of the deployment under prefix, as
// its layout record (written by the first instance's start) says.
func shardTag(t *testing.T, c redis.UniversalClient, prefix string, shard int) string {
	t.Helper()
	rec, err := c.HMGet(t.Context(), prefix+":meta", "shards", "schema").Result()
	if err != nil {
		t.Fatal(err)
	}
	shards, _ := strconv.Atoi(fmt.Sprint(rec[0]))
	schema, _ := strconv.Atoi(fmt.Sprint(rec[1]))
	tags := store.ShardTags(prefix, shards, schema)
	if shard >= len(tags) {
		t.Fatalf("no shard %d in the layout record %v of %s", shard, rec, prefix)
	}
	return tags[shard]
}

func twoInstancesShareRooms(t *testing.T, bin, backend string) {
	env, prefix, c := sharedBackend(t, backend)
	a, b := start(t, bin, env...), start(t, bin, env...)
	for _, in := range []*instance{a, b} { // a new deployment: spread tags
		in.awaitLog(t, "store: layout", "schema=4 shardTags=spread")
	}

	owner := guest(t, a, "owner")
	status, created := call(t, "POST", a.url+"/v1/rooms", owner, map[string]any{"name": "Rush", "mode": "battle", "region": "eu", "maxPlayers": 4})
	if status != 201 {
		t.Fatalf("create: %d %v", status, created)
	}
	id := created["room"].(map[string]any)["id"].(string)

	tokens := make([]string, 50)
	for i := range tokens {
		tokens[i] = guest(t, []*instance{a, b}[i%2], fmt.Sprintf("p%d", i))
	}
	var ok, full atomic.Int32
	var wg sync.WaitGroup
	for i, tok := range tokens {
		wg.Add(1)
		go func() {
			defer wg.Done()
			in := []*instance{b, a}[i%2] // tokens work on the other instance too
			status, body := call(t, "POST", in.url+"/v1/rooms/"+id+"/join", tok, nil)
			switch {
			case status == 200:
				ok.Add(1)
			case status == 409 && body["code"] == "ROOM_FULL":
				full.Add(1)
			default:
				t.Errorf("join: %d %v", status, body)
			}
		}()
	}
	wg.Wait()
	if ok.Load() != 3 || full.Load() != 47 {
		t.Fatalf("joined %d, full %d; want 3 and 47", ok.Load(), full.Load())
	}
	_, room := call(t, "GET", b.url+"/v1/rooms/"+id, owner, nil)
	if room["playerCount"] != float64(4) || len(room["players"].([]any)) != 4 {
		t.Fatalf("room after the rush: %v", room)
	}
	bad, err := invariants.Check(t.Context(), c, prefix)
	if err != nil || len(bad) > 0 {
		t.Fatalf("invariants: %v %v", bad, err)
	}
	for _, in := range []*instance{a, b} {
		in.mu.Lock()
		logs := in.logs.String()
		in.mu.Unlock()
		if !strings.Contains(logs, "request") {
			t.Fatalf("no request logged:\n%s", logs)
		}
		for _, tok := range append(tokens, owner) {
			if strings.Contains(logs, tok) || strings.Contains(logs, tok[strings.LastIndex(tok, ".")+1:]) {
				t.Fatal("a token appears in the logs")
			}
		}
	}
}

func mustParse(t *testing.T, url string) *redis.Options {
	o, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// Bad configuration: a clear message naming the variable and exit code 2;
// a shard count or key schema other than the one stored in Redis: refusal
// to start (exit 1), saying what to do.
func TestRefusesBadConfig(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	url := redistest.StandaloneURL(t)
	prefix := redistest.Prefix(t)
	addr := mustParse(t, url).Addr
	fifo := filepath.Join(t.TempDir(), "keys")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	tests := []struct {
		name string
		env  []string
		code int
		want string
	}{
		{"BadShards", []string{"REALSYNC_SHARDS=0"}, 2, "REALSYNC_SHARDS"},
		{"BadAddr", []string{"REALSYNC_ADDR=:99999"}, 2, "REALSYNC_ADDR: must be host:port"},
		{"ExtraArguments", []string{"-shards", "8", "serve"}, 2, `unexpected argument "serve"`},
		{"BadGuest", []string{"REALSYNC_GUEST_AUTH=maybe"}, 2, "REALSYNC_GUEST_AUTH"},
		{"BadURL", []string{"REALSYNC_REDIS_URL=http://x"}, 2, "REALSYNC_REDIS_URL"},
		{"BadURLPort", []string{"REALSYNC_REDIS_URL=redis://:S3cretRedisPw@127.0.0.1:63x93"}, 2, "REALSYNC_REDIS_URL: parse \"redis://xxxxx@127.0.0.1:63x93\""},
		{"BadHeartbeat", []string{"REALSYNC_SSE_HEARTBEAT=soon"}, 2, "REALSYNC_SSE_HEARTBEAT"},
		{"TinyHeartbeat", []string{"REALSYNC_SSE_HEARTBEAT=1ns"}, 2, "REALSYNC_SSE_HEARTBEAT: must be a duration from 1s to 5m"},
		{"ShortPresenceTTL", []string{"REALSYNC_PRESENCE_TTL=10ms"}, 2, "REALSYNC_PRESENCE_TTL"},
		{"NegativeGrace", []string{"REALSYNC_DISCONNECT_GRACE=-1s"}, 2, "REALSYNC_DISCONNECT_GRACE"},
		{"BadIdleTimeout", []string{"REALSYNC_ROOM_IDLE_TIMEOUT=-1m"}, 2, "REALSYNC_ROOM_IDLE_TIMEOUT"},
		{"BadRetention", []string{"REALSYNC_FINISHED_RETENTION=later"}, 2, "REALSYNC_FINISHED_RETENTION"},
		{"BadLifetime", []string{"REALSYNC_ROOM_MAX_LIFETIME=1"}, 2, "REALSYNC_ROOM_MAX_LIFETIME"},
		{"PprofNotLoopback", []string{"REALSYNC_PPROF_ADDR=0.0.0.0:6060"}, 2, "REALSYNC_PPROF_ADDR"},
		{"ShortAdminToken", []string{"REALSYNC_ADMIN_TOKEN=only-31-characters-long-secret!"}, 2, "REALSYNC_ADMIN_TOKEN"},
		{"BadAdvertiseAddr", []string{"REALSYNC_ADVERTISE_ADDR=no-port"}, 2, "REALSYNC_ADVERTISE_ADDR"},
		{"BadLogFormat", []string{"REALSYNC_LOG_FORMAT=yaml"}, 2, "REALSYNC_LOG_FORMAT"},
		{"BadMetricsAddr", []string{"REALSYNC_METRICS_ADDR=9090"}, 2, "REALSYNC_METRICS_ADDR"},
		{"MetricsAddrInUse", []string{"REALSYNC_METRICS_ADDR=" + busy.Addr().String()}, 1, "REALSYNC_METRICS_ADDR"},
		{"AddrInUse", []string{"REALSYNC_ADDR=" + busy.Addr().String()}, 1, "REALSYNC_ADDR: listen tcp"},
		{"RetriesNever", []string{"REALSYNC_REDIS_URL=redis://" + addr + "/0?max_retries=-2"}, 2, "REALSYNC_REDIS_URL: max_retries=-2"},
		{"PprofAddrInUse", []string{"REALSYNC_PPROF_ADDR=" + busy.Addr().String()}, 1, "REALSYNC_PPROF_ADDR"}, // it ran without the profiler
		{"BadShutdownTimeout", []string{"REALSYNC_SHUTDOWN_TIMEOUT=0s"}, 2, "REALSYNC_SHUTDOWN_TIMEOUT"},
		{"TLSCertWithoutKey", []string{"REALSYNC_TLS_CERT=/nonexistent/cert.pem"}, 2, "REALSYNC_TLS_KEY"},
		{"BadH2C", []string{"REALSYNC_H2C=on"}, 2, "REALSYNC_H2C"},
		{"ProductionWithoutSecret", []string{"REALSYNC_ENV=production", "REALSYNC_JWT_SECRET="}, 2, "REALSYNC_JWT_SECRET"},
		{"ProductionWithoutRedis", []string{"REALSYNC_ENV=production", "REALSYNC_JWT_SECRET=0f3c9a7e51d24b68aa9e7c03b5d1f2e4", "REALSYNC_REDIS_URL=",
			"REALSYNC_REDIS_CLUSTER_ADDRS=,"}, 2, "for trying RealSync only"},
		{"ClusterSeedsNone", []string{"REALSYNC_REDIS_CLUSTER_ADDRS= , "}, 2, "REALSYNC_REDIS_CLUSTER_ADDRS: names no seed"}, // it ran on the embedded store
		{"ClientNameSpace", []string{"REALSYNC_REDIS_URL=redis://" + addr + "/0?client_name=game%20a"}, 2, `REALSYNC_REDIS_URL: client_name "game a"`},
		{"DatabaseOutOfRange", []string{"REALSYNC_REDIS_URL=redis://" + addr + "/99", "REALSYNC_KEY_PREFIX=" + prefix}, 1,
			"redis refused the connection's settings (REALSYNC_REDIS_URL): ERR DB index is out of range"}, // it retried for good
		// a FIFO waited for a writer for good, a device was read for good
		{"KeysFileFIFO", []string{"REALSYNC_API_KEYS_FILE=" + fifo}, 2, "REALSYNC_API_KEYS_FILE: " + fifo + ": not a regular file"},
		{"TLSCertDevice", []string{"REALSYNC_TLS_CERT=/dev/zero", "REALSYNC_TLS_KEY=/dev/zero"}, 2, "/dev/zero: not a regular file"},
		{"MissingKeysFile", []string{"REALSYNC_JWT_KEYS_FILE=/nonexistent/jwks.json"}, 2, "REALSYNC_JWT_KEYS_FILE: open /nonexistent/jwks.json"},
		{"ShardMismatch", []string{"REALSYNC_REDIS_URL=" + url, "REALSYNC_KEY_PREFIX=" + prefix, "REALSYNC_SHARDS=8"}, 1, "fixed for a deployment"},
		{"OldSchema", []string{"REALSYNC_REDIS_URL=" + url, "REALSYNC_KEY_PREFIX=" + prefix}, 1, "realsyncd migrate"},
		{"MigrateEmbedded", []string{"migrate"}, 2, "REALSYNC_REDIS_URL"},
		{"MigrateBadFlag", []string{"migrate", "-dry-runn"}, 2, "dry-runn"},
	}
	// The deployment is created with 16 shards first.
	r := redis.NewClient(mustParse(t, url))
	defer r.Close()
	r.HSet(t.Context(), prefix+":meta", "shards", 16, "schema", 1)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var args, env []string
			for _, e := range tc.env { // words without "=" are arguments
				if strings.Contains(e, "=") {
					env = append(env, e)
				} else {
					args = append(args, e)
				}
			}
			// bounded: a configuration error waited out instead of refused
			// would otherwise hang the test
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, args...)
			cmd.Env = append(os.Environ(), append([]string{"REALSYNC_ADDR=" + freeAddr(t)}, env...)...)
			out, err := cmd.CombinedOutput()
			exit, _ := err.(*exec.ExitError)
			if exit == nil || exit.ExitCode() != tc.code || !strings.Contains(string(out), tc.want) {
				t.Fatalf("exit %v, output:\n%s\nwant code %d mentioning %q", err, out, tc.code, tc.want)
			}
		})
	}
}
