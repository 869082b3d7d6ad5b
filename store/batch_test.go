package store_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/internal/wait"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/store"
)

// batchRecorder is a store.Metrics that also remembers batches.
type batchRecorder struct {
	*recorder
	bmu     sync.Mutex
	batches map[string][]int // kind → sizes, in order
}

var _ store.BatchMetrics = (*batchRecorder)(nil)

func newBatchRecorder() *batchRecorder {
	return &batchRecorder{recorder: newRecorder(), batches: map[string][]int{}}
}

func (r *batchRecorder) RedisBatch(kind string, size int) {
	r.bmu.Lock()
	defer r.bmu.Unlock()
	r.batches[kind] = append(r.batches[kind], size)
}

// sizes returns the sizes of kind's batches so far and their sum.
func (r *batchRecorder) sizes(kind string) (sizes []int, sum int) {
	r.bmu.Lock()
	defer r.bmu.Unlock()
	sizes = append(sizes, r.batches[kind]...)
	for _, n := range sizes {
		sum += n
	}
	return sizes, sum
}

// openBatched opens a store on b that batches as cfg says, observed by a
// batchRecorder.
func openBatched(t *testing.T, b redistest.Backend, cfg store.Batching) (*store.Store, *batchRecorder) {
	t.Helper()
	rec := newBatchRecorder()
	return openStoreWith(t, b, func(c *store.Config) { c.Batch, c.Metrics = &cfg, rec }), rec
}

// echo increments KEYS[1] and replies with ARGV[1]; fail replies with an
// error reply naming ARGV[1].
var (
	echo = redis.NewScript(`redis.call('INCR', KEYS[1]) return ARGV[1]`)
	fail = redis.NewScript(`return redis.error_reply('MINE ' .. ARGV[1])`)
)

// tagKey is a key of the i-th of n hash tags under prefix p.
func tagKey(p string, i, n int) string { return fmt.Sprintf("%s:{%s:t%d}:n", p, p, i%n) }

// Many concurrent callers over several nodes each get exactly their own
// reply, and every script run went out in a batch.
func TestBatchOwnReplies(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		s, rec := openBatched(t, b, store.Batching{})
		ctx, p := context.Background(), s.Prefix()
		const callers, each, tags = 64, 40, 8
		var wg sync.WaitGroup
		errs := make(chan error, callers)
		for c := range callers {
			wg.Go(func() {
				for i := range each {
					arg := fmt.Sprintf("%d-%d", c, i)
					got, err := echo.Run(ctx, s.Client(), []string{tagKey(p, c+i, tags)}, arg).Text()
					if err != nil || got != arg {
						errs <- fmt.Errorf("caller %d call %d: got %q, %v; want %q", c, i, got, err, arg)
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		total := 0
		for i := range tags {
			n, err := s.Client().Get(ctx, tagKey(p, i, tags)).Int()
			if err != nil {
				t.Fatal(err)
			}
			total += n
		}
		if total != callers*each {
			t.Errorf("scripts ran %d times, want %d", total, callers*each)
		}
		sizes, sum := rec.sizes("script")
		if sum < callers*each { // NOSCRIPT answers come back through batches too
			t.Errorf("batches carried %d script runs, want at least %d", sum, callers*each)
		}
		t.Logf("%d script runs in %d batches", sum, len(sizes))
	})
}

// A batch leaves when it holds MaxSize calls, however long its window.
func TestBatchLeavesWhenFull(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		s, rec := openBatched(t, b, store.Batching{Window: time.Hour, MaxSize: 16})
		if err := echo.Load(context.Background(), s.Client()).Err(); err != nil {
			t.Fatal(err)
		}
		replies := runAll(t, s, 16, func(i int) (string, error) {
			return echo.Run(context.Background(), s.Client(), []string{tagKey(s.Prefix(), 0, 1)}, i).Text()
		})
		for i, r := range replies {
			if r != strconv.Itoa(i) {
				t.Errorf("caller %d got %q", i, r)
			}
		}
		if sizes, _ := rec.sizes("script"); len(sizes) != 1 || sizes[0] != 16 {
			t.Errorf("batches %v, want one of 16", sizes)
		}
	})
}

// runAll runs f(0..n-1) at once and returns the replies; a failure fails t.
func runAll(t *testing.T, s *store.Store, n int, f func(i int) (string, error)) []string {
	t.Helper()
	out, errs := make([]string, n), make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { out[i], errs[i] = f(i) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	return out
}

// In one batch, an error reply is its command's alone: the scripts and
// transactions around it succeed.
func TestBatchErrorsPerCommand(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		s, rec := openBatched(t, b, store.Batching{Window: time.Hour, MaxSize: 4})
		ctx, key := context.Background(), tagKey(s.Prefix(), 0, 1)
		for _, sc := range []*redis.Script{echo, fail} {
			if err := sc.Load(ctx, s.Client()).Err(); err != nil {
				t.Fatal(err)
			}
		}
		t.Run("Scripts", func(t *testing.T) {
			errs := make([]error, 4)
			replies := make([]string, 4)
			var wg sync.WaitGroup
			for i := range 4 {
				wg.Go(func() {
					sc := map[bool]*redis.Script{true: fail, false: echo}[i%2 == 1]
					replies[i], errs[i] = sc.Run(ctx, s.Client(), []string{key}, i).Text()
				})
			}
			wg.Wait()
			for i := range 4 {
				if i%2 == 1 {
					if want := "MINE " + strconv.Itoa(i); errs[i] == nil || errs[i].Error() != want {
						t.Errorf("caller %d: error %v, want %s", i, errs[i], want)
					}
				} else if errs[i] != nil || replies[i] != strconv.Itoa(i) {
					t.Errorf("caller %d: %q, %v", i, replies[i], errs[i])
				}
			}
		})
		t.Run("Transactions", func(t *testing.T) {
			hash := key + ":h"
			if err := s.Client().HSet(ctx, hash, "f", "v").Err(); err != nil {
				t.Fatal(err)
			}
			type reply struct {
				script string
				err    error
				h      map[string]string
				fields []string
			}
			out := make([]reply, 4)
			var wg sync.WaitGroup
			for i := range 4 {
				wg.Go(func() {
					sc := map[bool]*redis.Script{true: fail, false: echo}[i%2 == 1]
					var run *redis.Cmd
					var all *redis.MapStringStringCmd
					var fields *redis.StringSliceCmd
					_, err := s.Client().TxPipelined(ctx, func(p redis.Pipeliner) error {
						run = sc.EvalSha(ctx, p, []string{key}, i)
						all, fields = p.HGetAll(ctx, hash), p.HKeys(ctx, hash)
						return nil
					})
					out[i] = reply{script: fmt.Sprint(run.Val()), err: err, h: all.Val(), fields: fields.Val()}
				})
			}
			wg.Wait()
			for i, r := range out {
				if r.h["f"] != "v" || len(r.fields) != 1 || r.fields[0] != "f" {
					t.Errorf("caller %d read %v %v", i, r.h, r.fields)
				}
				if i%2 == 1 {
					if want := "MINE " + strconv.Itoa(i); r.err == nil || r.err.Error() != want {
						t.Errorf("caller %d: error %v, want %s", i, r.err, want)
					}
				} else if r.err != nil || r.script != strconv.Itoa(i) {
					t.Errorf("caller %d: %q, %v", i, r.script, r.err)
				}
			}
			if sizes, _ := rec.sizes("transaction"); len(sizes) != 1 || sizes[0] != 4 {
				t.Errorf("transaction batches %v, want one of 4", sizes)
			}
		})
	})
}

// After SCRIPT FLUSH, every caller of a batch gets NOSCRIPT for its own
// EVALSHA and runs the script again with EVAL, in the next batch.
func TestBatchNoScriptFallback(t *testing.T) {
	for _, b := range backendsWithFlush(t) {
		t.Run(b.Name, func(t *testing.T) {
			// The window holds the EVALSHAs until all 8 are in; it is short
			// because the EVALs that follow may come back over several
			// batches, and a lane that goes idle in between lingers again
			// for the rest, which never makes 8 (an hour's window hung the
			// test on a loaded machine).
			s, rec := openBatched(t, b, store.Batching{Window: 2 * time.Second, MaxSize: 8})
			if err := echo.Load(context.Background(), s.Client()).Err(); err != nil {
				t.Fatal(err)
			}
			flushScripts(t, s)
			replies := runAll(t, s, 8, func(i int) (string, error) {
				return echo.Run(context.Background(), s.Client(), []string{tagKey(s.Prefix(), 0, 1)}, i).Text()
			})
			for i, r := range replies {
				if r != strconv.Itoa(i) {
					t.Errorf("caller %d got %q", i, r)
				}
			}
			// The EVALs leave as their callers come back, in one batch or
			// several: the lane lingers only when it starts from idle.
			if sizes, sum := rec.sizes("script"); len(sizes) < 2 || sizes[0] != 8 || sum != 16 {
				t.Errorf("batches %v, want 8 EVALSHA then 8 EVAL", sizes)
			}
			if n, err := s.Client().Get(context.Background(), tagKey(s.Prefix(), 0, 1)).Int(); err != nil || n != 8 {
				t.Errorf("script ran %d times (%v), want 8", n, err)
			}
		})
	}
}

// A caller whose context ends is answered at once, and its command, not
// yet sent, never runs; Close sends what is queued, answers it, and leaves
// no lane busy; calls after it fail.
func TestBatchCancelAndClose(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		s, _ := openBatched(t, b, store.Batching{Window: time.Hour, MaxSize: 100})
		key := tagKey(s.Prefix(), 0, 1)
		if err := echo.Load(context.Background(), s.Client()).Err(); err != nil {
			t.Fatal(err) // else a NOSCRIPT's EVAL would come after Close
		}
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		if err := echo.Run(ctx, s.Client(), []string{key}, "gone").Err(); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("canceled caller got %v, want context.DeadlineExceeded", err)
		}
		// Five callers wait in the lane's hour-long window until Close.
		var wg sync.WaitGroup
		replies, errs := make([]string, 5), make([]error, 5)
		for i := range 5 {
			wg.Go(func() {
				replies[i], errs[i] = echo.Run(context.Background(), s.Client(), []string{key}, i).Text()
			})
		}
		wait.Until(t, "the condition", func() bool { return s.BatchLanesBusy() == 1 })
		time.Sleep(20 * time.Millisecond) // let the five reach the queue; a late one gets ErrClosed, checked below
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		answered := 0
		for i := range 5 {
			switch {
			case errs[i] == nil && replies[i] == strconv.Itoa(i):
				answered++
			case errors.Is(errs[i], redis.ErrClosed):
			default:
				t.Errorf("caller %d: %q, %v", i, replies[i], errs[i])
			}
		}
		if answered == 0 {
			t.Error("Close answered none of the queued callers")
		}
		if n := s.BatchLanesBusy(); n != 0 {
			t.Errorf("%d lanes busy after Close", n)
		}
		if err := echo.Run(context.Background(), s.Client(), []string{key}, "late").Err(); !errors.Is(err, redis.ErrClosed) {
			t.Errorf("call after Close: %v, want redis.ErrClosed", err)
		}
		if b.ClusterAddrs == nil && b.URL == "" {
			return // embedded: its data went with the store
		}
		check := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: b.ClusterAddrs, IsClusterMode: b.ClusterAddrs != nil, Protocol: 2})
		if b.URL != "" {
			opt, err := redis.ParseURL(b.URL)
			if err != nil {
				t.Fatal(err)
			}
			check = redis.NewClient(opt)
		}
		defer check.Close()
		if n, err := check.Get(context.Background(), key).Int(); (err != nil && err != redis.Nil) || n != answered {
			t.Errorf("script ran %d times (%v), want %d: the canceled call must not run", n, err, answered)
		}
	})
}

// Joins and creates through the store (a script and the room read in one
// MULTI/EXEC) go out in transaction batches, on every backend, and leave
// the keys consistent.
func TestBatchJoins(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		s, rec := openBatched(t, b, store.Batching{})
		ctx := context.Background()
		const roomsN, seats = 8, 8
		ids := make([]string, roomsN)
		for i := range ids {
			ids[i] = mustCreate(t, s, rooms.User{ID: fmt.Sprintf("owner-%d", i), Name: "o"}, newRoom(func(r *rooms.NewRoom) {
				r.MaxPlayers, r.Region = seats, fmt.Sprintf("r%d", i)
			})).Room.ID
		}
		var wg sync.WaitGroup
		errs := make(chan error, roomsN*(seats-1))
		for i := range roomsN * (seats - 1) {
			wg.Go(func() {
				u := rooms.User{ID: fmt.Sprintf("u-%d", i), Name: "p"}
				j, err := s.Join(ctx, u, ids[i%roomsN])
				if err == nil && (j.Room.ID != ids[i%roomsN] || playerOf(j.Room, j.PlayerID) != u.ID) {
					err = fmt.Errorf("join %d got room %s player %d: %+v", i, j.Room.ID, j.PlayerID, j.Room.Players)
				}
				if err != nil {
					errs <- err
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		for _, id := range ids {
			r, _, err := s.Get(ctx, id, false)
			if err != nil || r.PlayerCount != seats {
				t.Errorf("room %s: %d players, %v", id, r.PlayerCount, err)
			}
		}
		checkInvariants(t, s)
		if _, sum := rec.sizes("transaction"); sum < roomsN*seats {
			t.Errorf("transaction batches carried %d creates and joins, want at least %d", sum, roomsN*seats)
		}
	})
}

// playerOf is the user of player id in r, "" when none.
func playerOf(r rooms.Room, id int) string {
	for _, p := range r.Players {
		if p.PlayerID == id {
			return p.UserID
		}
	}
	return ""
}

// A slot moving to another master under batched load: the batches follow
// ASK and MOVED, every caller gets its own reply, and every script ran
// exactly once (the counters equal the successes).
func TestBatchClusterSlotMove(t *testing.T) {
	c := ownCluster(t)
	s, rec := openBatched(t, redistest.Backend{Name: "own-cluster", ClusterAddrs: c.Addrs()}, store.Batching{})
	ctx, p := context.Background(), s.Prefix()
	const keys = 8
	key := func(i int) string { return fmt.Sprintf("%s:{%s:move}:n%d", p, p, i%keys) }

	var (
		wg    sync.WaitGroup
		stop  = make(chan struct{})
		mu    sync.Mutex
		ok    = make([]int, keys)
		fails []error
	)
	for w := range 32 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				arg := fmt.Sprintf("%d-%d", w, i)
				got, err := echo.Run(ctx, s.Client(), []string{key(w + i)}, arg).Text()
				mu.Lock()
				if err == nil && got == arg {
					ok[(w+i)%keys]++
				} else {
					fails = append(fails, fmt.Errorf("%s: got %q, %v", arg, got, err))
				}
				mu.Unlock()
			}
		})
	}
	// Move the slot while the callers run: importing, migrating, the keys
	// one by one, then the slot's new owner told to every node.
	time.Sleep(200 * time.Millisecond)
	dst, moved, err := c.MoveSlot(ctx, key(0), redistest.SlotMove{KeysPerMigrate: 1, Pause: 20 * time.Millisecond})
	if err != nil {
		t.Errorf("moving the slot: %v", err)
	}
	t.Logf("moved %d keys", moved)
	time.Sleep(300 * time.Millisecond)
	close(stop)
	wg.Wait()

	for _, err := range fails {
		t.Error(err)
	}
	if dst == nil {
		t.FailNow()
	}
	dstC := redis.NewClient(&redis.Options{Addr: dst.Addr, Protocol: 2})
	defer dstC.Close()
	total := 0
	for i := range keys {
		n, err := dstC.Get(ctx, key(i)).Int()
		if err != nil && err != redis.Nil {
			t.Fatal(err)
		}
		if n != ok[i] {
			t.Errorf("key %d counts %d runs, %d callers succeeded", i, n, ok[i])
		}
		total += n
	}
	if total == 0 {
		t.Fatal("no script ran")
	}
	if _, sum := rec.sizes("script"); sum < total {
		t.Errorf("batches carried %d script runs, want at least %d", sum, total)
	}
	// The move was seen: callers were sent to the importing node with ASK.
	if stats, err := dstC.Info(ctx, "commandstats").Result(); err != nil || !strings.Contains(stats, "cmdstat_asking:calls=") {
		t.Errorf("no ASKING reached the importing node (%v): the move happened under no load", err)
	}
	t.Logf("%d script runs, %d failed", total, len(fails))
}

// A transaction over two hash tags is not batched (on a Cluster it would
// fail its whole batch with CROSSSLOT): it goes alone, and the batch of
// the others is theirs.
func TestBatchCrossSlotTransactionAlone(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		s, rec := openBatched(t, b, store.Batching{Window: time.Hour, MaxSize: 2})
		ctx, p := context.Background(), s.Prefix()
		if err := echo.Load(ctx, s.Client()).Err(); err != nil {
			t.Fatal(err)
		}
		tx := func(scriptKey, readKey string) error {
			_, err := s.Client().TxPipelined(ctx, func(pl redis.Pipeliner) error {
				echo.EvalSha(ctx, pl, []string{scriptKey}, "x")
				pl.HGetAll(ctx, readKey)
				return nil
			})
			return err
		}
		cross := tx(tagKey(p, 0, 2), tagKey(p, 1, 2)) // returns before the batch: it is not queued
		if b.ClusterAddrs != nil && !errors.Is(cross, redis.ErrCrossSlot) {
			t.Errorf("cross-slot transaction on a Cluster: %v, want CROSSSLOT", cross)
		} else if b.ClusterAddrs == nil && cross != nil {
			t.Errorf("two-tag transaction on one node: %v", cross)
		}
		runAll(t, s, 2, func(int) (string, error) { return "", tx(tagKey(p, 0, 2), tagKey(p, 0, 2)+":h") })
		if sizes, _ := rec.sizes("transaction"); len(sizes) != 1 || sizes[0] != 2 {
			t.Errorf("transaction batches %v, want one of 2", sizes)
		}
	})
}

// Transactions of room reads alone, and pipelines of reads alone, from
// concurrent callers leave in one batch each; every caller gets its own
// replies in its commands' own types, and an error reply (a read of a key
// of the wrong type) is its command's alone. A pipeline with a command that
// is not a read is not batched.
func TestBatchReads(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		s, rec := openBatched(t, b, store.Batching{Window: time.Hour, MaxSize: 4})
		ctx, p := context.Background(), s.Prefix()
		base := tagKey(p, 0, 1)
		hash := func(i int) string { return fmt.Sprintf("%s:h%d", base, i) }
		zset := base + ":z"
		for i := range 4 {
			if err := s.Client().HSet(ctx, hash(i), "a", "a"+strconv.Itoa(i), "b", "b"+strconv.Itoa(i)).Err(); err != nil {
				t.Fatal(err)
			}
			if err := s.Client().ZAdd(ctx, zset, redis.Z{Score: float64(i), Member: "m" + strconv.Itoa(i)}).Err(); err != nil {
				t.Fatal(err)
			}
		}
		hmget := func(ctx context.Context, p redis.Pipeliner, key string) *redis.StringSliceCmd {
			cmd := redis.NewStringSliceCmd(ctx, "hmget", key, "a", "missing", "b")
			_ = p.Process(ctx, cmd)
			return cmd
		}
		scriptTx := func() error {
			_, err := s.Client().TxPipelined(ctx, func(pl redis.Pipeliner) error {
				echo.EvalSha(ctx, pl, []string{base}, "x")
				pl.HGetAll(ctx, hash(0))
				return nil
			})
			return err
		}
		if err := echo.Load(ctx, s.Client()).Err(); err != nil {
			t.Fatal(err)
		}
		t.Run("Transactions", func(t *testing.T) {
			// a transaction that runs a script waits (an hour's window)
			// for three more; the room reads do not wait for it
			scripted := make(chan error, 1)
			go func() { scripted <- scriptTx() }()
			got := runAll(t, s, 4, func(i int) (string, error) {
				var fields *redis.StringSliceCmd
				var all *redis.MapStringStringCmd
				var names *redis.StringSliceCmd
				_, err := s.Client().TxPipelined(ctx, func(pl redis.Pipeliner) error {
					fields, all, names = hmget(ctx, pl, hash(i)), pl.HGetAll(ctx, hash(i)), pl.HKeys(ctx, hash(i))
					return nil
				})
				slices.Sort(names.Val())
				return fmt.Sprint(fields.Val(), all.Val(), names.Val()), err
			})
			for i, g := range got {
				if want := fmt.Sprintf("[a%d  b%d] map[a:a%d b:b%d] [a b]", i, i, i, i); g != want {
					t.Errorf("caller %d read %s, want %s", i, g, want)
				}
			}
			if sizes, _ := rec.sizes("transaction"); len(sizes) != 1 || sizes[0] != 4 {
				t.Errorf("transaction batches %v, want one of 4 (the reads)", sizes)
			}
			select {
			case err := <-scripted:
				t.Fatalf("the script's transaction left before its batch filled: %v", err)
			default:
			}
			runAll(t, s, 3, func(int) (string, error) { return "", scriptTx() })
			if err := <-scripted; err != nil {
				t.Fatal(err)
			}
			if sizes, _ := rec.sizes("transaction"); len(sizes) != 2 || sizes[1] != 4 {
				t.Errorf("transaction batches %v, want the reads' 4, then the scripts' 4", sizes)
			}
		})
		t.Run("Pipelines", func(t *testing.T) {
			errs := make([]error, 4)
			got := make([]string, 4)
			var wg sync.WaitGroup
			for i := range 4 {
				wg.Go(func() {
					var scored *redis.ZSliceCmd
					var lex, fields *redis.StringSliceCmd
					var all *redis.MapStringStringCmd
					var zscan, hscan *redis.ScanCmd
					_, errs[i] = s.Client().Pipelined(ctx, func(pl redis.Pipeliner) error {
						scored = pl.ZRangeArgsWithScores(ctx, redis.ZRangeArgs{Key: zset, ByScore: true, Start: i, Stop: "+inf", Count: 2})
						lex = pl.ZRangeArgs(ctx, redis.ZRangeArgs{Key: zset, Start: i, Stop: i})
						zscan, hscan = pl.ZScan(ctx, zset, 0, "m"+strconv.Itoa(i), 10), pl.HScan(ctx, hash(i), 0, "", 10)
						fields = hmget(ctx, pl, hash(i))
						if i == 3 {
							all = pl.HGetAll(ctx, zset) // WRONGTYPE, this caller's alone
						} else {
							all = pl.HGetAll(ctx, hash(i))
						}
						return nil
					})
					zpage, zcursor := zscan.Val()
					hpage, hcursor := hscan.Val()
					slices.Sort(hpage)
					got[i] = fmt.Sprint(scored.Val(), lex.Val(), fields.Val(), all.Val(), zpage, zcursor, hpage, hcursor)
				})
			}
			wg.Wait()
			for i := range 4 {
				scored := fmt.Sprintf("{%d m%d}", i, i)
				if i < 3 {
					scored += fmt.Sprintf(" {%d m%d}", i+1, i+1)
				}
				scans := fmt.Sprintf("[m%d %d] 0 [a a%d b b%d] 0", i, i, i, i)
				want := fmt.Sprintf("[%s] [m%d] [a%d  b%d] map[a:a%d b:b%d] %s", scored, i, i, i, i, i, scans)
				if i == 3 {
					want = fmt.Sprintf("[%s] [m%d] [a%d  b%d] map[] %s", scored, i, i, i, scans)
					if errs[i] == nil || !strings.HasPrefix(errs[i].Error(), "WRONGTYPE") {
						t.Errorf("caller 3: error %v, want WRONGTYPE", errs[i])
					}
				} else if errs[i] != nil {
					t.Errorf("caller %d: %v", i, errs[i])
				}
				if got[i] != want {
					t.Errorf("caller %d read %s, want %s", i, got[i], want)
				}
			}
			if sizes, _ := rec.sizes("read"); len(sizes) != 1 || sizes[0] != 4 {
				t.Errorf("read batches %v, want one of 4", sizes)
			}
		})
		t.Run("NotReadsAlone", func(t *testing.T) {
			// batched, it would wait for three more callers (an hour's window)
			var all *redis.MapStringStringCmd
			if _, err := s.Client().Pipelined(ctx, func(pl redis.Pipeliner) error {
				all = pl.HGetAll(ctx, hash(0))
				pl.Incr(ctx, base+":n")
				return nil
			}); err != nil || all.Val()["a"] != "a0" {
				t.Fatalf("pipeline of a read and a write: %v, %v", all.Val(), err)
			}
			if sizes, _ := rec.sizes("read"); len(sizes) != 1 {
				t.Errorf("read batches %v, want still the one", sizes)
			}
		})
	})
}
