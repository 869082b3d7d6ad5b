package janitor_test

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/internal/redistest"

	"github.com/realsync/realsync/store/internal/redisx/scripttest"
	"github.com/realsync/realsync/store/janitor"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// recorded is what the tasks of a test janitor saw: a visit per entry,
// "<task> <shard>".
type recorded struct {
	mu    sync.Mutex
	calls []string
}

// task returns a task named name that records its call, counts one of
// kind (none for "") and ends with err.
func (r *recorded) task(name, kind string, err error) janitor.Task {
	return janitor.Task{Run: func(_ context.Context, shard int, _ time.Duration, rep janitor.Report) error {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.calls = append(r.calls, name+" "+string(rune('0'+shard)))
		if kind != "" {
			rep.Add(kind, 1)
		}
		return err
	}}
}

// seen returns the calls recorded so far.
func (r *recorded) seen() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

// newJanitor returns a janitor of 4 shards on backend b with tasks, its
// leases under a prefix of the test's own, the client it runs on, and
// its lease key.
func newJanitor(t *testing.T, b redistest.Backend, tasks ...janitor.Task) (*janitor.Janitor, redis.UniversalClient, func(int) string) {
	return newJanitorOf(t, b, 4, tasks...)
}

// newJanitorOf is newJanitor of shards shards.
func newJanitorOf(t *testing.T, b redistest.Backend, shards int, tasks ...janitor.Task) (*janitor.Janitor, redis.UniversalClient, func(int) string) {
	t.Helper()
	cfg, client := janitorConfig(t, b, shards)
	cfg.Tasks = tasks
	return janitor.New(cfg), client, cfg.Lease
}

// janitorConfig is the Config of a janitor of shards shards on a
// deployment of its own (a prefix) on b, with no task.
func janitorConfig(t *testing.T, b redistest.Backend, shards int) (janitor.Config, redis.UniversalClient) {
	t.Helper()
	base := scripttest.Base(t, b.URL, b.ClusterAddrs, redistest.Prefix(t), shards)
	return janitor.Config{Base: base, Lease: func(shard int) string { return base.Tag(shard) + ":jtest" },
		Schedule: func(shard int) string { return base.Tag(shard) + ":jtestdue" }}, base.Client
}

// One instance per shard per lease: a visit whose lease another instance
// holds runs no task and reports nothing; once the lease expired, the
// other instance's visit runs them. The tasks run in order, and a task's
// error ends the visit with what was counted up to it.
func TestVisitTakesTheLease(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := t.Context()
		var r recorded
		boom := errors.New("boom")
		j, client, lease := newJanitor(t, b, r.task("a", "x", nil), r.task("b", "y", boom), r.task("c", "z", nil))
		// long enough that no pause of a loaded machine lets it lapse
		// between the visits; its end is brought forward below
		const ttl = time.Minute
		rep, err := j.Visit(ctx, 2, "i1", ttl)
		if !errors.Is(err, boom) {
			t.Fatalf("visit: %v, want the task's error", err)
		}
		if want := (janitor.Report{"x": 1, "y": 1}); !maps.Equal(rep, want) || !slices.Equal(r.calls, []string{"a 2", "b 2"}) {
			t.Fatalf("report %v, calls %q; want %v, [a 2 b 2]", rep, r.calls, want)
		}
		if got := client.Get(ctx, lease(2)).Val(); got != "i1" {
			t.Fatalf("lease held by %q, want i1", got)
		}
		if pttl := client.PTTL(ctx, lease(2)).Val(); pttl <= 0 || pttl > ttl {
			t.Fatalf("lease's PTTL %v, want within (0, %v]: held for the visit's lease", pttl, ttl)
		}
		rep, err = j.Visit(ctx, 2, "i2", ttl)
		if err != nil || len(rep) != 0 || len(r.calls) != 2 {
			t.Fatalf("a visit while another instance holds the lease: %v, %v, calls %q; want nothing done", rep, err, r.calls)
		}
		if _, err := j.Visit(ctx, 3, "i2", ttl); !errors.Is(err, boom) || len(r.calls) != 4 {
			t.Fatalf("another shard's lease is free: %v, calls %q", err, r.calls)
		}
		if err := client.PExpire(ctx, lease(2), time.Millisecond).Err(); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(10 * time.Second); client.Exists(ctx, lease(2)).Val() == 1; time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the lease did not expire")
			}
		}
		if _, err := j.Visit(ctx, 2, "i2", ttl); !errors.Is(err, boom) || len(r.calls) != 6 {
			t.Fatalf("the lease expired: %v, calls %q; want the tasks run", err, r.calls)
		}
	})
}

// Release deletes the leases held by the instances named, and only those.
func TestReleaseOnlyTheNamedHolders(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := t.Context()
		j, client, lease := newJanitor(t, b)
		holders := []string{"dead1", "live", "dead2", ""} // shard 3: nobody
		for shard, h := range holders {
			if h == "" {
				continue
			}
			if _, err := j.Visit(ctx, shard, h, time.Minute); err != nil {
				t.Fatal(err)
			}
		}
		if err := j.Release(ctx, []string{"dead1", "dead2", "gone"}); err != nil {
			t.Fatal(err)
		}
		for shard, want := range []string{"", "live", "", ""} {
			if got := client.Get(ctx, lease(shard)).Val(); got != want {
				t.Errorf("shard %d: lease held by %q, want %q", shard, got, want)
			}
		}
		client.Del(ctx, lease(1))
	})
}

// A task with a due key runs only when the key held work as the lease
// was taken (a member of its sorted set due by the visit's clock, or an
// entry of its list), or when an earlier task of the visit did something;
// the others run on every visit, all in their order.
func TestVisitRunsATaskWithWork(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := t.Context()
		var r recorded
		var lease func(int) string // the due keys are the lease's with a suffix: in its slot
		zkey := func(shard int) string { return lease(shard) + "z" }
		due, list := r.task("z", "", nil), r.task("l", "", nil)
		due.Due = zkey
		list.Due, list.List = func(shard int) string { return lease(shard) + "l" }, true
		var did bool // the first task reports something
		first := janitor.Task{Run: func(ctx context.Context, shard int, lease time.Duration, rep janitor.Report) error {
			if did {
				rep.Add("did", 1)
			}
			return r.task("a", "", nil).Run(ctx, shard, lease, rep)
		}}
		j, client, lease := newJanitor(t, b, first, due, list, r.task("b", "", nil))
		t.Cleanup(func() { client.Del(context.WithoutCancel(ctx), lease(1), zkey(1), list.Due(1)) })
		now := time.Now().UnixMilli()
		for i, c := range []struct {
			setup func()
			want  []string
		}{
			{func() {}, []string{"a 1", "b 1"}},
			{func() {
				client.ZAdd(ctx, zkey(1), redis.Z{Score: float64(now + time.Hour.Milliseconds()), Member: "later"})
			}, []string{"a 1", "b 1"}},
			{func() { client.ZAdd(ctx, zkey(1), redis.Z{Score: float64(now - 1), Member: "due"}) }, []string{"a 1", "z 1", "b 1"}},
			{func() { client.ZRem(ctx, zkey(1), "due"); client.RPush(ctx, list.Due(1), "x") }, []string{"a 1", "l 1", "b 1"}},
			{func() { client.ZAdd(ctx, zkey(1), redis.Z{Score: float64(now - 1), Member: "due"}) }, []string{"a 1", "z 1", "l 1", "b 1"}},
			{func() { client.Del(ctx, zkey(1), list.Due(1)) }, []string{"a 1", "b 1"}},
			{func() { did = true }, []string{"a 1", "z 1", "l 1", "b 1"}},
		} {
			c.setup()
			before := len(r.seen())
			if _, err := j.Visit(ctx, 1, "i1", time.Minute); err != nil {
				t.Fatal(err)
			}
			if got := r.seen()[before:]; !slices.Equal(got, c.want) {
				t.Errorf("case %d: calls %q, want %q", i, got, c.want)
			}
			if err := client.Del(ctx, lease(1)).Err(); err != nil {
				t.Fatal(err)
			}
		}
		// a lease held by another: no task, whatever work there is
		client.Set(ctx, lease(1), "other", time.Minute)
		before := len(r.seen())
		if _, err := j.Visit(ctx, 1, "i1", time.Minute); err != nil || len(r.seen()) != before {
			t.Fatalf("visit under another's lease: %v, calls %q", err, r.seen()[before:])
		}
	})
}

// Run visits the shards at once: a shard whose visit waits holds up no
// other shard's, and is not visited again until that visit ends.
func TestRunVisitsTheOtherShardsWhileOneWaits(t *testing.T) {
	b := redistest.Backends(t)[0]
	var r recorded
	hang := newHang(func(shard int) bool { return shard == 0 })
	j, _, _ := newJanitor(t, b, hang.task(), r.task("a", "", nil))
	runJanitor(t, j)
	hang.awaitEntered(t, 1)
	count := func(call string) (n int) {
		for _, c := range r.seen() {
			if c == call {
				n++
			}
		}
		return n
	}
	for deadline := time.Now().Add(20 * time.Second); count("a 1") < 5 || count("a 2") < 5 || count("a 3") < 5; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("shard 0's visit waits: the others' calls %q, want 5 visits of shards 1 to 3", r.seen())
		}
	}
	if n := count("a 0"); n != 0 || hang.entered() != 1 {
		t.Fatalf("shard 0 visited again while its visit waited: %d calls, %d visits entered", n, hang.entered())
	}
	hang.release()
	for deadline := time.Now().Add(20 * time.Second); count("a 0") == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("shard 0's visit ended, but the shard was not visited again")
		}
	}
}

// On a Cluster, the visits of one master's shards that wait take at most
// visitsPerNode (4) of its places, and hold up no other master's shards.
func TestRunVisitsTheOtherNodesWhileOneWaits(t *testing.T) {
	b := redistest.Backends(t)[1]
	if b.Name != "cluster" {
		t.Fatalf("backend %s, want the cluster", b.Name)
	}
	const shards = 30
	var lease func(int) string
	var client redis.UniversalClient
	master := func(shard int) string {
		n, err := client.(*redis.ClusterClient).MasterForKey(t.Context(), lease(shard))
		if err != nil {
			t.Error(err)
			return ""
		}
		return n.Options().Addr
	}
	var hung string // shard 0's master: its shards' visits wait
	hang := newHang(func(shard int) bool { return master(shard) == hung })
	var mu sync.Mutex
	visits := map[int]int{}
	counted := janitor.Task{Run: func(_ context.Context, shard int, _ time.Duration, _ janitor.Report) error {
		mu.Lock()
		defer mu.Unlock()
		visits[shard]++
		return nil
	}}
	var j *janitor.Janitor
	j, client, lease = newJanitorOf(t, b, shards, hang.task(), counted)
	hung = master(0)
	var others, onHung []int
	for shard := range shards {
		if master(shard) == hung {
			onHung = append(onHung, shard)
		} else {
			others = append(others, shard)
		}
	}
	if len(onHung) <= 4 || len(others) == 0 {
		t.Fatalf("shards on %s: %v, others %v: want more than 4 there and some elsewhere", hung, onHung, others)
	}
	runJanitor(t, j)
	hang.awaitEntered(t, 4)
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		mu.Lock()
		least := visits[others[0]]
		for _, sh := range others {
			least = min(least, visits[sh])
		}
		mu.Unlock()
		if least >= 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the other masters' shards %v: least visits %d, want 3 while %s's wait", others, least, hung)
		}
	}
	if n := hang.entered(); n != 4 {
		t.Fatalf("%d visits of %s's shards in flight, want 4 (visitsPerNode)", n, hung)
	}
	hang.release()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		mu.Lock()
		done := true
		for _, sh := range onHung {
			done = done && visits[sh] > 0
		}
		mu.Unlock()
		if done {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s's shards %v released, not all visited: %v", hung, onHung, visits)
		}
	}
}

// hang is a task whose visits of the shards it picks wait until released
// (or their context ends), counting the visits that entered.
type hang struct {
	pick    func(int) bool
	in      atomic.Int64
	stop    chan struct{}
	release func()
}

func newHang(pick func(int) bool) *hang {
	h := &hang{pick: pick, stop: make(chan struct{})}
	h.release = sync.OnceFunc(func() { close(h.stop) })
	return h
}

func (h *hang) task() janitor.Task {
	return janitor.Task{Run: func(ctx context.Context, shard int, _ time.Duration, _ janitor.Report) error {
		if h.pick(shard) {
			h.in.Add(1)
			select {
			case <-h.stop:
			case <-ctx.Done():
			}
		}
		return nil
	}}
}

func (h *hang) entered() int { return int(h.in.Load()) }

// awaitEntered waits up to 20 s for n visits to have entered.
func (h *hang) awaitEntered(t *testing.T, n int) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); h.entered() < n; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d visits entered the waiting task, want %d", h.entered(), n)
		}
	}
}

// runJanitor runs j every 20 ms until the test ends, then waits for Run
// to return.
func runJanitor(t *testing.T, j *janitor.Janitor) { runJanitorEvery(t, j, "i1", 20*time.Millisecond) }

// runJanitorEvery is runJanitor as instance every interval.
func runJanitorEvery(t *testing.T, j *janitor.Janitor, instance string, interval time.Duration) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	ran := make(chan struct{})
	go func() {
		defer close(ran)
		j.Run(ctx, instance, interval, slog.New(slog.DiscardHandler))
	}()
	t.Cleanup(func() {
		cancel()
		<-ran
	})
}

// The lease's script as a visit that waited for its place runs it: it
// renews the lease its instance holds, takes a free one, and leaves
// another instance's; a visit's first take never renews (SET NX).
func TestLeaseConfirmedOnlyByItsHolder(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := t.Context()
		j, client, lease := newJanitor(t, b)
		const ttl = time.Minute
		for _, step := range []struct {
			what, instance string
			renew, held    bool
			holder         string
		}{
			{"taken when free", "i1", false, true, "i1"},
			{"a first take by its holder", "i1", false, false, "i1"},
			{"renewed by its holder", "i1", true, true, "i1"},
			{"another's, confirmed", "i2", true, false, "i1"},
			{"another's, taken", "i2", false, false, "i1"},
		} {
			// the lease shortened, so that a renewal shows
			if err := client.PExpire(ctx, lease(1), 30*time.Second).Err(); err != nil {
				t.Fatal(err)
			}
			held, err := j.TakeLease(ctx, 1, step.instance, ttl, step.renew)
			if err != nil || held != step.held {
				t.Fatalf("%s: held %v, %v; want %v", step.what, held, err, step.held)
			}
			pttl := client.PTTL(ctx, lease(1)).Val()
			if got := client.Get(ctx, lease(1)).Val(); got != step.holder || (pttl > 30*time.Second) != step.held {
				t.Fatalf("%s: lease held by %q for %v; want %q, renewed %v", step.what, got, pttl, step.holder, step.held)
			}
		}
		if err := client.Del(ctx, lease(1)).Err(); err != nil {
			t.Fatal(err)
		}
		if held, err := j.TakeLease(ctx, 1, "i2", ttl, true); err != nil || !held || client.Get(ctx, lease(1)).Val() != "i2" {
			t.Fatalf("a free lease confirmed: held %v, %v, holder %q; want taken by i2", held, err, client.Get(ctx, lease(1)).Val())
		}
	})
}

// A visit that waited for its place past its lease, while another
// instance took the lapsed lease, does nothing: that instance visits the
// shard. Once the other instance's lease is gone, the shard is visited
// again. Four visits (visitsPerNode) hold the node's places; the fifth
// shard's waits.
func TestVisitThatWaitedPastItsLeaseYieldsIt(t *testing.T) {
	b := redistest.Backends(t)[0]
	var mu sync.Mutex
	entered, visits := map[int]bool{}, map[int]int{}
	stop := make(chan struct{})
	release := sync.OnceFunc(func() { close(stop) })
	t.Cleanup(release)
	wait := janitor.Task{Run: func(ctx context.Context, shard int, _ time.Duration, _ janitor.Report) error {
		mu.Lock()
		entered[shard] = true
		mu.Unlock()
		select {
		case <-stop:
		case <-ctx.Done():
		}
		return nil
	}}
	counted := janitor.Task{Run: func(_ context.Context, shard int, _ time.Duration, _ janitor.Report) error {
		mu.Lock()
		defer mu.Unlock()
		visits[shard]++
		return nil
	}}
	j, client, lease := newJanitorOf(t, b, 5, wait, counted)
	runJanitor(t, j) // i1, a lease of 20 ms
	waiter := -1
	for deadline := time.Now().Add(20 * time.Second); waiter < 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("shards %v entered, want 4", entered)
		}
		mu.Lock()
		if len(entered) == 4 {
			for shard := range 5 {
				if !entered[shard] {
					waiter = shard
				}
			}
		}
		mu.Unlock()
	}
	// another instance takes the waiting visit's lapsed lease
	if err := client.Set(t.Context(), lease(waiter), "i2", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // the waiting visit past its lease, however fast the machine
	release()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		mu.Lock()
		least := -1
		for shard := range 5 {
			if shard != waiter && (least < 0 || visits[shard] < least) {
				least = visits[shard]
			}
		}
		n := visits[waiter]
		mu.Unlock()
		if n != 0 {
			t.Fatalf("shard %d visited %d times while another instance held its lease", waiter, n)
		}
		if least >= 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the other shards visited %d times at least, want 3", least)
		}
	}
	if err := client.Del(t.Context(), lease(waiter)).Err(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		mu.Lock()
		n := visits[waiter]
		mu.Unlock()
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("shard %d not visited once the other instance's lease went", waiter)
		}
	}
}

// A visit of Run's holds its lease for 7/8 of the interval (and gives its
// tasks that lease), so that it has lapsed when the instance's next tick
// comes: a lease of the whole interval was, most often, still held then,
// and an instance alone visited each shard every other interval.
func TestRunLeaseIsSevenEighthsOfTheInterval(t *testing.T) {
	b := redistest.Backends(t)[0]
	const interval = 400 * time.Millisecond
	var client redis.UniversalClient
	var lease func(int) string
	held := make(chan time.Duration, 100)
	read := janitor.Task{Run: func(ctx context.Context, shard int, got time.Duration, _ janitor.Report) error {
		if shard == 0 {
			select {
			case held <- client.PTTL(ctx, lease(0)).Val():
			default:
			}
			if got != interval*7/8 {
				t.Errorf("the task was given a lease of %v, want %v", got, interval*7/8)
			}
		}
		return nil
	}}
	var j *janitor.Janitor
	j, client, lease = newJanitorOf(t, b, 1, read)
	runJanitorEvery(t, j, "i1", interval)
	for range 3 {
		select {
		case pttl := <-held:
			if pttl > interval*7/8 { // a slow machine may see it lapsed already (-2)
				t.Fatalf("the visit's lease has %v left, want %v at most", pttl, interval*7/8)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("shard 0 not visited")
		}
	}
}

// Among several instances (Config.Peers), the shards' visits move between
// them: i1, alone at first, visits all 4 shards; i2 starts beside it, and
// takes each shard once i1, having visited it 8 rounds in a row, leaves
// it a round to the others. (A lease lapses
// before its holder's next round, which would win it every time: i2 then
// took a shard only if its rounds fell in the eighth of the interval
// between the lapse and i1's round.)
func TestRunSharesTheShardsAmongInstances(t *testing.T) {
	const shards = 4
	b := redistest.Backends(t)[0]
	cfg, _ := janitorConfig(t, b, shards)
	cfg.Peers = func(context.Context) (int, error) { return 2, nil }
	var mu sync.Mutex
	visits := map[string]map[int]int{"i1": {}, "i2": {}}
	rounds := map[string]int{}
	janitorOf := func(instance string) *janitor.Janitor {
		c := cfg
		c.Tasks = []janitor.Task{{Run: func(_ context.Context, shard int, _ time.Duration, _ janitor.Report) error {
			mu.Lock()
			defer mu.Unlock()
			visits[instance][shard]++
			return nil
		}}}
		c.Tick = func(context.Context, *sync.WaitGroup, *slog.Logger) {
			mu.Lock()
			defer mu.Unlock()
			rounds[instance]++
		}
		return janitor.New(c)
	}
	await := func(what string, done func() bool) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			mu.Lock()
			ok := done()
			mu.Unlock()
			if ok {
				return
			}
			if time.Now().After(deadline) {
				mu.Lock()
				defer mu.Unlock()
				t.Fatalf("%s: visits %v in rounds %v", what, visits, rounds)
			}
		}
	}
	const interval = 200 * time.Millisecond
	runJanitorEvery(t, janitorOf("i1"), "i1", interval)
	await("i1 alone visits every shard", func() bool { return len(visits["i1"]) == shards })
	runJanitorEvery(t, janitorOf("i2"), "i2", interval)
	await("i2 visits every shard", func() bool { return len(visits["i2"]) == shards })
}
