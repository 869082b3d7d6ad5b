package webhooks_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/store"
	"github.com/realsync/realsync/store/webhooks"
)

// recountShard is shard 0 of a store's webhook keys, written by hand as
// the scripts write them, with a dispatcher that steps its recount.
type recountShard struct {
	t       *testing.T
	s       *store.Store
	d       *webhooks.Dispatcher
	c       redis.UniversalClient
	tag     string
	prefix  string
	nextMsg int
}

// newRecountShard opens a store on b and a dispatcher whose recount walks
// step entries a step, forced every walkEvery-th recount (0: the
// default), each delivery tried 5 times at most.
func newRecountShard(t *testing.T, b redistest.Backend, step, walkEvery int) *recountShard {
	t.Helper()
	prefix := redistest.Prefix(t)
	s := openStoreWith(t, b, func(c *store.Config) { c.Prefix = prefix; c.WebhookOutboxLen = 1000 })
	d, err := webhooks.New(s.Base(), webhooks.Config{Consumer: "i1", Send: (&hookRecorder{}).send,
		MaxAttempts: 5, RecountEvery: time.Hour, RecountStep: step, RecountWalkEvery: walkEvery})
	if err != nil {
		t.Fatal(err)
	}
	r := &recountShard{t: t, s: s, d: d, c: s.Client(), tag: s.Base().Tag(0), prefix: prefix}
	if err := r.c.XGroupCreateMkStream(context.Background(), r.key("deliveries"), "wh", "0").Err(); err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *recountShard) key(name string) string { return r.tag + ":webhooks:" + name }

// add adds a delivery to ep with tries failed tries before, as the
// fan-out (or the due move) adds it, and counts it; it returns its id.
func (r *recountShard) add(ep string, tries int) string {
	r.t.Helper()
	ctx := context.Background()
	id, err := r.c.XAdd(ctx, r.delivery(ep, tries)).Result()
	if err != nil {
		r.t.Fatal(err)
	}
	if err := r.c.HIncrBy(ctx, r.key("backlog"), ep, 1).Err(); err != nil {
		r.t.Fatal(err)
	}
	return id
}

// addMany adds n deliveries to ep with no failed try, as add does, in
// one pipeline (a thousand one at a time were most of a test's CPU).
func (r *recountShard) addMany(ep string, n int) {
	r.t.Helper()
	ctx := context.Background()
	if _, err := r.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for range n {
			p.XAdd(ctx, r.delivery(ep, 0))
		}
		p.HIncrBy(ctx, r.key("backlog"), ep, int64(n))
		return nil
	}); err != nil {
		r.t.Fatal(err)
	}
}

// delivery is the next delivery's entry, to ep with tries failed tries.
func (r *recountShard) delivery(ep string, tries int) *redis.XAddArgs {
	r.nextMsg++
	return &redis.XAddArgs{Stream: r.key("deliveries"),
		Values: []any{"e", ep, "m", fmt.Sprintf("msg_0_%d-0", r.nextMsg), "t", "x", "d", "{}", "n", tries}}
}

// fail fails a try of delivery id, its next due at dueMs, and checks the
// outcome.
func (r *recountShard) fail(id string, dueMs int64, want string) {
	r.t.Helper()
	if out, err := r.d.Fail(context.Background(), 0, id, dueMs); err != nil || out != want {
		r.t.Fatalf("fail %s: %q, %v; want %q", id, out, err, want)
	}
}

// retry adds a retry of ep due at dueMs (a delivery that failed a try).
func (r *recountShard) retry(ep string, dueMs int64) {
	r.t.Helper()
	r.fail(r.add(ep, 0), dueMs, "retry")
}

// due moves the retries due by nowMs, at most limit of them, back into
// the deliveries and checks how many moved.
func (r *recountShard) due(nowMs int64, limit, want int) {
	r.t.Helper()
	if n, err := r.d.Due(context.Background(), 0, nowMs, limit); err != nil || n != want {
		r.t.Fatalf("due by %d: moved %d, %v; want %d", nowMs, n, err, want)
	}
}

// step runs a recount step and returns whether the walk goes on (the
// recount hash holds no '#done').
func (r *recountShard) step() bool {
	r.t.Helper()
	if err := r.d.RecountStep(context.Background(), 0); err != nil {
		r.t.Fatal(err)
	}
	return !r.c.HExists(context.Background(), r.key("recount"), "#done").Val()
}

// walk runs recount steps until the walk ends, at most most of them, and
// says whether it ended.
func (r *recountShard) walk(most int) bool {
	r.t.Helper()
	walking := true
	for n := 0; walking && n < most; n++ {
		walking = r.step()
	}
	return !walking
}

// drift adds n to ep's count: a count gone astray.
func (r *recountShard) drift(ep string, n int64) {
	r.t.Helper()
	if err := r.c.HIncrBy(context.Background(), r.key("backlog"), ep, n).Err(); err != nil {
		r.t.Fatal(err)
	}
}

// pauseOver ends the recount's pause (or, mid-walk, drops the walk, as its
// expiry does once every instance has left it).
func (r *recountShard) pauseOver() {
	r.t.Helper()
	if err := r.c.Del(context.Background(), r.key("recount")).Err(); err != nil {
		r.t.Fatal(err)
	}
}

// TestWebhooksBacklogRecountWalksWhileRetriesMove: a recount walks a
// shard's retries two a step (RecountStep), then its deliveries, while,
// between its steps, retries are added before its cursor, after it and at
// its score (fail), retries it walked, its cursor's own among them, and
// retries added since go back to the deliveries (due), a dead letter is
// replayed and deliveries are settled; and, once it has passed every
// retry, a walked delivery fails into the retries and a retry goes back.
// The counts it leaves are what the deliveries and retries hold, the drift
// it started from gone. A walk in steps that left the retries' moves
// uncounted is wrong here several ways: a retry added before its cursor
// counted by no one, one it walked and then moved back to the deliveries
// counted twice.
func TestWebhooksBacklogRecountWalksWhileRetriesMove(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		r := newRecountShard(t, b, 2, 0)
		ctx := context.Background()
		r.retry("a", 10)
		r.retry("b", 20)
		r.retry("a", 30)
		r.retry("b", 40)
		r.retry("a", 50)
		r.retry("b", 60)
		d1 := r.add("a", 0)
		r.add("b", 0)
		r.fail(r.add("b", 4), 1, "dead") // a letter to replay
		r.drift("a", 7)
		checkWalk := func(want bool) {
			t.Helper()
			if got := r.step(); got != want {
				t.Fatalf("the walk goes on: %v, want %v", got, want)
			}
		}
		checkWalk(true)  // walks the retries due at 10 and 20
		r.retry("a", 15) // before the cursor: walked
		r.retry("b", 35) // after it
		r.retry("a", 20) // at its score: before or after it by the members' bytes
		r.retry("b", 20)
		r.due(20, 100, 5) // 10, 15 and the cursor's 20 walked, the two at 20 maybe
		checkWalk(true)   // walks 30 and 35
		r.due(30, 100, 1) // 30, walked
		if err := webhooks.NewDeadLetters(r.s.Base(), webhooks.Config{}).ReplayDeadLetter(ctx, deadOf(t, r.s, "b")[0].ID); err != nil {
			t.Fatal(err)
		}
		if err := r.d.Settle(ctx, 0, d1); err != nil { // not walked yet
			t.Fatal(err)
		}
		checkWalk(true) // walks 40 and 50
		r.retry("a", 45)
		checkWalk(true) // walks 60, every retry walked: the first delivery
		first := r.c.XRangeN(ctx, r.key("deliveries"), "-", "+", 1).Val()[0]
		r.fail(first.ID, 70, "retry") // walked: off the deliveries, onto the retries
		r.retry("b", 5)               // every retry walked: counted
		r.due(5, 100, 1)
		for range 20 {
			if !r.step() {
				break
			}
		}
		if r.step() {
			t.Fatal("the walk did not end")
		}
		checkBacklogCounts(t, r.s, r.prefix)
	})
}

// TestWebhooksBacklogRecountStepsAreBounded: a recount's every step reads
// RecountStep entries at most (10), the shard's retries included (50 of
// 3 endpoints, with 15 deliveries): the walk takes 7 steps, the counts it
// leaves are exact, and the retries are as they were. Before, the walk's
// last step counted the retries whole, one script of 55 entries here (of
// 30 000 where 3 dead endpoints hold their bound, about 45 ms in which
// every client of the shard's Redis waited): it ended in 2 steps.
func TestWebhooksBacklogRecountStepsAreBounded(t *testing.T) {
	const step, retries, deliveries = 10, 50, 15
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		r := newRecountShard(t, b, step, 0)
		ctx := context.Background()
		for i := range retries {
			r.retry(fmt.Sprintf("dead%d", i%3), int64(1+i%7)) // ties at each score
		}
		for i := range deliveries {
			r.add(fmt.Sprintf("ep%d", i%2), 0)
		}
		r.drift("ep0", 3)
		before := r.c.ZRangeWithScores(ctx, r.key("retries"), 0, -1).Val()
		steps := 0
		for ; steps < 20; steps++ {
			n, err := r.d.RecountStepRead(ctx, 0)
			if err != nil {
				t.Fatal(err)
			}
			if n > step {
				t.Fatalf("step %d read %d entries, more than RecountStep (%d)", steps+1, n, step)
			}
			if r.c.HExists(ctx, r.key("recount"), "#done").Val() {
				break
			}
			if ttl := r.c.PTTL(ctx, r.key("recount")).Val(); ttl <= 0 {
				t.Fatalf("the walk's hash has no expiry (%v)", ttl)
			}
		}
		if want := (retries + deliveries + step) / step; steps+1 != want {
			t.Fatalf("the walk of %d entries ended in %d steps, want %d of at most %d", retries+deliveries, steps+1, want, step)
		}
		checkBacklogCounts(t, r.s, r.prefix)
		after := r.c.ZRangeWithScores(ctx, r.key("retries"), 0, -1).Val()
		if fmt.Sprint(after) != fmt.Sprint(before) {
			t.Fatalf("the walk changed the retries: %v, were %v", after, before)
		}
	})
}

// TestWebhooksBacklogRecountCursorLeftAtATie: the walk's cursor is a
// retry among several due at one ms; retries at that ms are added on both
// sides of it (a zset orders them by their bytes), then it goes back to
// the deliveries (due) with every retry before it: the next step resumes
// right after the cursor's place (the retries after it walked once,
// those before it not again) and the counts are exact. A first version
// resumed one retry too far (the cursor put back for its rank and taken
// out again moves the ranks after it), and one went uncounted.
func TestWebhooksBacklogRecountCursorLeftAtATie(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		r := newRecountShard(t, b, 3, 0)
		ctx := context.Background()
		for i := range 6 {
			r.retry(fmt.Sprintf("e%d", i%2), 100)
		}
		r.drift("e1", -2)
		if !r.step() {
			t.Fatal("the walk ended at its first step")
		}
		members := r.c.ZRange(ctx, r.key("retries"), 0, -1).Val()
		cursor := members[2]
		for _, ep := range []string{"a", "z", "a", "e0"} { // members begin with the endpoint: "a" before the cursor's
			r.retry(ep, 100)
		}
		sides := map[bool]int{}
		for _, m := range r.c.ZRange(ctx, r.key("retries"), 0, -1).Val() {
			if m != cursor {
				sides[bytes.Compare([]byte(m), []byte(cursor)) < 0]++
			}
		}
		if sides[true] != 4 || sides[false] != 5 {
			t.Fatalf("retries at the cursor's ms: %d before it, %d after; want 4 (2 walked, 2 added) and 5", sides[true], sides[false])
		}
		// the retries up to the cursor, and it, go back
		r.due(100, sides[true]+1, sides[true]+1)
		for range 10 {
			if !r.step() {
				break
			}
		}
		checkBacklogCounts(t, r.s, r.prefix)
	})
}

// TestWebhooksForcedRecountWalkKeepsItsTurn: the forced walk of every
// RecountWalkEvery-th recount (2) is left by every instance after its
// first step (its hash expires): the next recount walks again, though the
// counts add up, and repairs counts gone astray both ways. Before, the
// count of recounts that added up was deleted when the walk started: the
// walk's turn was lost, the drift kept for RecountWalkEvery more recounts.
func TestWebhooksForcedRecountWalkKeepsItsTurn(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		r := newRecountShard(t, b, 2, 2)
		for i := range 4 {
			r.retry("a", int64(10+i))
			r.add("b", 0)
		}
		if r.step() { // the first: adds up
			t.Fatal("the first recount walked")
		}
		r.drift("a", -2)
		r.drift("b", 2)
		r.pauseOver()
		if !r.step() { // the second: adds up, walks
			t.Fatal("the second recount did not walk")
		}
		r.pauseOver() // every instance gone: the walk expires
		for range 10 {
			if !r.step() {
				break
			}
		}
		checkBacklogCounts(t, r.s, r.prefix)
		if n := r.c.Exists(context.Background(), r.key("recount:checks")).Val(); n != 0 {
			t.Fatal("the recounts' count left after the walk")
		}
	})
}

// TestWebhooksBacklogRecountExactUnderConcurrentMoves: while a recount
// walks a shard's retries and deliveries 7 entries a step, two clients
// move them at the same time, 150 moves each: one fails deliveries into
// the retries (due at one of 40 ms, many at each) or to the dead letters,
// or settles them; the other moves due retries back to the deliveries, 3
// at a time. The walk repairs counts gone astray, whatever the moves'
// order around its steps, and the counts stay exact after it.
func TestWebhooksBacklogRecountExactUnderConcurrentMoves(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		r := newRecountShard(t, b, 7, 0)
		ctx := context.Background()
		eps := []string{"a", "b", "c"}
		for i := range 60 {
			r.retry(eps[i%3], int64(1+i%40))
		}
		for i := range 60 {
			r.add(eps[i%3], i%5)
		}
		r.drift("a", 4)
		r.drift("b", -3)
		errs := make(chan error, 2)
		go func() { // fails and settles
			for i := range 150 {
				es, err := r.c.XRangeN(ctx, r.key("deliveries"), "-", "+", 5).Result()
				if err != nil || len(es) == 0 {
					errs <- err
					return
				}
				id := es[i%len(es)].ID
				if i%4 == 3 {
					err = r.d.Settle(ctx, 0, id)
				} else {
					_, err = r.d.Fail(ctx, 0, id, int64(1+(i*7)%40))
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
		go func() { // due moves
			for i := range 150 {
				if _, err := r.d.Due(ctx, 0, int64(1+(i*11)%40), 3); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
		walking := !r.walk(500)
		for range 2 {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		if walking {
			t.Fatal("the walk did not end in 500 steps")
		}
		checkBacklogCounts(t, r.s, r.prefix)
	})
}

// TestWebhooksBacklogRecountWalkExpiredMidScript: a walk's hash expires
// while a due move writes to it. Redis never expires a key while a script
// runs (its clock stands still), but the embedded store (miniredis, its
// TTLs applied on every access) does, between two of a script's calls: the
// due move read the walk ('#r'), the hash expired, and its next HINCRBY
// made a hash of its own, the move's counts alone, with no expiry. The
// recount goes on: such a leftover is dropped, a count gone astray is
// repaired by the next walk, and the hash keeps an expiry. Before, a hash
// without '#r' or '#s' was taken for the pause after a recount: the
// shard's counts were never recounted again, and the leftover never
// expired. The walk is made to expire during the move (its expiry set a
// few ms ahead, the move of 256 retries, all walked, taking longer on the
// embedded store), tried up to 10 times until a leftover is seen.
func TestWebhooksBacklogRecountWalkExpiredMidScript(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := context.Background()
		var r *recountShard
		left := false
		for attempt := 1; attempt <= 10 && !left; attempt++ {
			r = newRecountShard(t, b, 300, 0)
			for i := range 300 {
				r.retry("a", int64(1+i))
			}
			r.drift("a", 1)
			if !r.step() { // walks the 300 retries: the cursor at the last
				t.Fatal("the walk ended at its first step")
			}
			if err := r.c.PExpire(ctx, r.key("recount"), time.Duration(attempt)*time.Millisecond).Err(); err != nil {
				t.Fatal(err)
			}
			r.due(300, 256, 256) // each walked: off the walk's 'r:a'
			left = r.c.PTTL(ctx, r.key("recount")).Val() == -1
		}
		t.Logf("a leftover without expiry seen: %v", left)
		r.drift("a", 3)
		walking := !r.walk(20)
		if walking {
			t.Fatalf("the recount did not end in 20 steps (its hash: %v, expiry %v)",
				r.c.HGetAll(ctx, r.key("recount")).Val(), r.c.PTTL(ctx, r.key("recount")).Val())
		}
		checkBacklogCounts(t, r.s, r.prefix)
		if ttl := r.c.PTTL(ctx, r.key("recount")).Val(); ttl <= 0 {
			t.Fatalf("the recount's hash has no expiry (%v)", ttl)
		}
	})
}

// TestWebhooksBacklogRecountStepsAreBoundedInBytes: a recount step stops
// once it has read RecountStepBytes of entries (give or take its last
// chunk of 16), whatever RecountStep (1 000): 40 retries and 40
// deliveries, each holding a 64 KiB event (a state change can carry up to
// some 80 KiB), are walked 16 a step, in 5 steps, the counts exact.
// Before, the step read RecountStep entries whatever their size: all 80,
// 5 MB, in one script (1 000 of them: 80 MB, about 700 ms of the shard's
// Redis, measured on a loaded machine).
func TestWebhooksBacklogRecountStepsAreBoundedInBytes(t *testing.T) {
	const chunk, n = 16, 40
	event := `{"type":"state_changed","state":{"k":"` + strings.Repeat("x", 64<<10) + `"}}`
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		r := newRecountShard(t, b, 1000, 0)
		ctx := context.Background()
		add := func(ep string) string {
			t.Helper()
			id, err := r.c.XAdd(ctx, &redis.XAddArgs{Stream: r.key("deliveries"),
				Values: []any{"e", ep, "m", "msg_0_1-0", "t", "state_changed", "d", event, "n", 0}}).Result()
			if err != nil {
				t.Fatal(err)
			}
			if err := r.c.HIncrBy(ctx, r.key("backlog"), ep, 1).Err(); err != nil {
				t.Fatal(err)
			}
			return id
		}
		for i := range n {
			r.fail(add(fmt.Sprintf("dead%d", i%2)), int64(1+i), "retry")
			add(fmt.Sprintf("ep%d", i%2))
		}
		r.drift("ep0", 2)
		maxRead := webhooks.RecountStepBytes/len(event) + chunk
		steps := 0
		for ; steps < 20; steps++ {
			read, err := r.d.RecountStepRead(ctx, 0)
			if err != nil {
				t.Fatal(err)
			}
			if read > maxRead {
				t.Fatalf("step %d read %d entries of %d KiB, more than RecountStepBytes (%d KiB) and a chunk (%d)",
					steps+1, read, len(event)>>10, webhooks.RecountStepBytes>>10, chunk)
			}
			if r.c.HExists(ctx, r.key("recount"), "#done").Val() {
				break
			}
		}
		if steps+1 != (2*n+chunk-1)/chunk {
			t.Fatalf("the walk of %d entries ended in %d steps, want %d", 2*n, steps+1, (2*n+chunk-1)/chunk)
		}
		checkBacklogCounts(t, r.s, r.prefix)
	})
}

// TestWebhooksBacklogRecountWalkExpiredInItsLastStep: a walk's hash
// expires during the step that reaches the deliveries' end (the embedded
// store expires a key between two calls of a script; Redis does not). That
// step does not replace the backlog counts with the walk's counts it
// finds then (its own step's alone, in a hash the step's writes made
// again): the walk starts again, and the counts it leaves are exact.
// Before, the backlog was replaced with that one step's counts (b: 400 of
// its 995 deliveries, a: none of its 5 retries), kept for RecountEvery.
// The walk's expiry is set a few ms ahead of its last step, 400 entries,
// tried on 10 shards.
func TestWebhooksBacklogRecountWalkExpiredInItsLastStep(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := context.Background()
		for attempt := 1; attempt <= 10; attempt++ {
			r := newRecountShard(t, b, 600, 0)
			for i := range 5 {
				r.retry("a", int64(1+i))
			}
			r.addMany("b", 995)
			r.drift("a", 2)
			if !r.step() { // the 5 retries and 595 deliveries
				t.Fatal("the walk ended at its first step")
			}
			if err := r.c.PExpire(ctx, r.key("recount"), time.Duration(attempt)*time.Millisecond).Err(); err != nil {
				t.Fatal(err)
			}
			walking := !r.walk(10)
			if walking {
				t.Fatal("the walk did not end in 10 steps")
			}
			checkBacklogCounts(t, r.s, r.prefix)
		}
	})
}

// TestWebhooksBacklogRecountTornWalkStartsAgain: a walk's hash torn as the
// embedded store can leave it (it expires a key between two calls of a
// script, and a move's next write makes a hash of its own, with no expiry):
// '#r' done without '#s', or a retries cursor '#rm' without its score
// '#rs', with counts of a walk nobody finished. A step drops it and the
// next walks from the start: the walk ends within a bounded number of
// steps, on every backend, with the counts the deliveries and retries
// hold, the torn hash's counts counted nowhere. (Before the torn state was
// read as a whole, such a hash made every step fail: a concatenation with
// false, or a ZADD of no score.)
func TestWebhooksBacklogRecountTornWalkStartsAgain(t *testing.T) {
	torn := []struct {
		name   string
		fields []any
	}{
		{"retries walked, no delivery cursor", []any{"#r", "done", "r:a", 7, "e:b", 9}},
		{"a retries cursor without its score", []any{"#r", "1", "#rm", `{"e":"a"}`, "r:a", 7}},
	}
	for _, b := range redistest.Backends(t) {
		for _, tc := range torn {
			t.Run(b.Name+"/"+tc.name, func(t *testing.T) {
				ctx := context.Background()
				r := newRecountShard(t, b, 2, 0)
				for i := range 3 {
					r.retry("a", int64(1+i))
				}
				for range 5 {
					r.add("b", 0)
				}
				r.drift("a", 2)
				if err := r.c.HSet(ctx, r.key("recount"), tc.fields...).Err(); err != nil {
					t.Fatal(err)
				}
				if !r.step() {
					t.Fatal("the torn walk ended at once")
				}
				if n := r.c.Exists(ctx, r.key("recount")).Val(); n != 0 {
					t.Fatalf("the torn walk's hash kept (%v)", r.c.HGetAll(ctx, r.key("recount")).Val())
				}
				walking := !r.walk(10) // 8 entries, 2 a step
				if walking {
					t.Fatal("the walk did not end in 10 steps")
				}
				checkBacklogCounts(t, r.s, r.prefix)
			})
		}
	}
}

// TestWebhooksDueIsBoundedInBytes: the script that moves due retries back
// into the deliveries stops after about RecountStepBytes of them, as a
// recount step does (a retry holds its event, up to some 80 KiB: 256 of
// them were some 20 MB read, decoded and written by one script, every
// client of the shard waiting); the rest move at the next calls, none
// lost, the counts exact.
func TestWebhooksDueIsBoundedInBytes(t *testing.T) {
	const chunk, n = 16, 40
	event := `{"type":"state_changed","state":{"k":"` + strings.Repeat("x", 64<<10) + `"}}`
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		r := newRecountShard(t, b, 1000, 0)
		ctx := context.Background()
		for i := range n {
			id, err := r.c.XAdd(ctx, &redis.XAddArgs{Stream: r.key("deliveries"),
				Values: []any{"e", "dead", "m", "msg_0_1-0", "t", "state_changed", "d", event, "n", 0}}).Result()
			if err != nil {
				t.Fatal(err)
			}
			if err := r.c.HIncrBy(ctx, r.key("backlog"), "dead", 1).Err(); err != nil {
				t.Fatal(err)
			}
			r.fail(id, int64(1+i), "retry")
		}
		most := webhooks.RecountStepBytes/len(event) + chunk
		moved, calls := 0, 0
		for moved < n && calls < 20 {
			m, err := r.d.Due(ctx, 0, n+1, 256)
			if err != nil {
				t.Fatal(err)
			}
			if m > most || m == 0 {
				t.Fatalf("call %d moved %d retries of %d KiB, want 1 to %d (RecountStepBytes, %d KiB, and a chunk)",
					calls+1, m, len(event)>>10, most, webhooks.RecountStepBytes>>10)
			}
			moved += m
			calls++
		}
		if moved != n {
			t.Fatalf("%d retries moved in %d calls, want %d", moved, calls, n)
		}
		if left := r.c.ZCard(ctx, r.key("retries")).Val(); left != 0 {
			t.Fatalf("%d retries left", left)
		}
		checkBacklogCounts(t, r.s, r.prefix)
	})
}
