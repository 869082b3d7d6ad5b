package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/internal/invariants"
	"github.com/realsync/realsync/internal/redistest"
)

// requestTimeout is how long a test client waits for an answer: a request
// still unanswered then counts as hung.
const requestTimeout = 10 * time.Second

// failoverRecoveryBound is the longest a shard may stay unwritable after
// its replica was promoted.
const failoverRecoveryBound = 5 * time.Second

// failFastBound is the longest a request may take to be answered 503
// during a failover: a call to the dead master fails at once (its
// connection refused), one to the others while the Cluster is down
// (CLUSTERDOWN) after go-redis' few short retries. Measured at 0.1–0.3 s
// for the slowest request; requests that waited for redials of the dead
// master (redisx.Redial, 1.1 s each: a join's calls, a batch behind one
// that waited: 2.5 s) are caught, with room for a loaded CI machine
// (TestNoRedialWhileTheNodeRefuses catches a single wait).
const failFastBound = 2 * time.Second

// outcome is one request's result.
type outcome struct {
	status int
	code   string // problem+json code
	err    error  // transport error; a timeout means the request hung
	took   time.Duration
	done   time.Time
	body   map[string]any
}

func (o outcome) ok() bool { return o.err == nil && o.status/100 == 2 }

// tally counts outcomes of the requests of a test, by kind.
type tally struct {
	mu    sync.Mutex
	kinds map[string]int
	// slowest of each kind
	kindMax map[string]time.Duration
	max     time.Duration
	slow    outcome // the slowest
	what    string
}

func newTally() *tally { return &tally{kinds: map[string]int{}, kindMax: map[string]time.Duration{}} }

// timed sends one request with requestTimeout and records its outcome.
func (ta *tally) timed(method, url, token string, body any) outcome {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, method, url, rd)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	start := time.Now()
	res, err := http.DefaultClient.Do(req)
	var o outcome
	if err == nil {
		o.status = res.StatusCode
		json.NewDecoder(res.Body).Decode(&o.body)
		res.Body.Close()
		o.code, _ = o.body["code"].(string)
	}
	o.err, o.done = err, time.Now()
	o.took = o.done.Sub(start)
	kind := strconv.Itoa(o.status) + " " + o.code
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		kind = "hung"
	case err != nil:
		kind = "transport error"
	}
	ta.mu.Lock()
	ta.kinds[kind]++
	ta.kindMax[kind] = max(ta.kindMax[kind], o.took)
	if o.took > ta.max {
		ta.max, ta.slow, ta.what = o.took, o, method+" "+url
	}
	ta.mu.Unlock()
	return o
}

func (ta *tally) String() string {
	ta.mu.Lock()
	defer ta.mu.Unlock()
	keys := make([]string, 0, len(ta.kinds))
	for k := range ta.kinds {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s: %d; ", k, ta.kinds[k])
	}
	fmt.Fprintf(&b, "slowest %v (%s: %d %s %v)", ta.max.Round(time.Millisecond), ta.what, ta.slow.status, ta.slow.code, ta.slow.err)
	return b.String()
}

// slowest is the longest time a request of kind took (0: none).
func (ta *tally) slowest(kind string) time.Duration {
	ta.mu.Lock()
	defer ta.mu.Unlock()
	return ta.kindMax[kind]
}

// unexpected lists the kinds of outcome other than those allowed.
func (ta *tally) unexpected(allowed ...string) []string {
	ta.mu.Lock()
	defer ta.mu.Unlock()
	var out []string
	for k, n := range ta.kinds {
		if !slices.Contains(allowed, k) {
			out = append(out, fmt.Sprintf("%s ×%d", k, n))
		}
	}
	return out
}

// ack is a state patch a writer got acknowledged.
type ack struct {
	room    string
	version int64
	marker  string // the patch's unique value, as JSON
	at      time.Time
	sent    time.Time // when its request was sent
}

// logEntry is one event of a room's final log, read from Redis.
type logEntry struct{ tag, data string }

// finalLog reads a room's whole event log from Redis: version → entry.
func finalLog(t *testing.T, c redis.UniversalClient, prefix, room string) map[int64]logEntry {
	t.Helper()
	shard, err := strconv.ParseInt(room[:2], 36, 32)
	if err != nil {
		t.Fatal(err)
	}
	key := shardTag(t, c, prefix, int(shard)) + ":room:" + room + ":log"
	xs, err := c.XRange(t.Context(), key, "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	out := map[int64]logEntry{}
	for _, x := range xs {
		v, _, _ := strings.Cut(x.ID, "-")
		n, _ := strconv.ParseInt(v, 10, 64)
		out[n] = logEntry{tag: fmt.Sprint(x.Values["g"]), data: fmt.Sprint(x.Values["d"])}
	}
	return out
}

// inHistory reports whether event e (snapshots included) belongs to the
// history of log: the log holds its version with its tag.
func inHistory(e sseEvent, log map[int64]logEntry) bool {
	_, tag, _ := strings.Cut(e.id, "-")
	l, ok := log[e.version]
	return ok && tag != "" && l.tag == tag
}

// oldest is the first version the log still holds (its length and byte
// cap drop the oldest entries); what came before cannot be judged.
func oldest(log map[int64]logEntry) int64 {
	first := int64(-1)
	for v := range log {
		if first < 0 || v < first {
			first = v
		}
	}
	return first
}

// checkHistories checks what a stream received against the room's final
// log. The events form segments, each opened by a snapshot, each without a
// gap. Within a segment the events of the final history come first; once
// one is not (the failover lost it), nothing of the final history may
// follow until the next snapshot: a changed history is always announced by
// a snapshot. The last segment is wholly in the final history. Events
// older than the log's oldest entry are not judged. Returns how many lost
// events the stream had received.
func checkHistories(t *testing.T, who string, es []sseEvent, log map[int64]logEntry) (lost int) {
	t.Helper()
	if len(es) == 0 || es[0].typ != "snapshot" {
		t.Errorf("%s: first event %+v, want a snapshot", who, lastEvent(es[:min(1, len(es))]))
		return 0
	}
	first := oldest(log)
	diverged := false
	for i, e := range es {
		if e.typ == "snapshot" {
			diverged = false
		} else if e.version != es[i-1].version+1 {
			t.Errorf("%s: event %d is %s v%d after v%d", who, i, e.typ, e.version, es[i-1].version)
			return lost
		}
		switch in := inHistory(e, log); {
		case e.version < first:
		case !in:
			lost++
			diverged = true
		case diverged:
			t.Errorf("%s: event %d (%s %s) of the final history follows lost events without a snapshot", who, i, e.typ, e.id)
			return lost
		}
	}
	if diverged {
		t.Errorf("%s: ends on a lost event %s", who, lastEvent(es).id)
	}
	return lost
}

// settle waits until the follower's last event is the last of the room's
// log (read again while it grows) and returns both.
func (f *follower) settle(t *testing.T, c redis.UniversalClient, prefix, room string, within time.Duration) ([]sseEvent, map[int64]logEntry) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		log := finalLog(t, c, prefix, room)
		var top int64
		for v := range log {
			top = max(top, v)
		}
		es := f.all()
		if len(es) > 0 && es[len(es)-1].id == strconv.FormatInt(top, 10)+"-"+log[top].tag {
			return es, log
		}
		if time.Now().After(deadline) {
			t.Errorf("%s: never reached v%d; %d events, last %s", f.path, top, len(es), lastEvent(es).id)
			return es, log
		}
		select {
		case <-f.updated:
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// A master of a 3-master, 3-replica Cluster is killed under load: two
// instances (browsing reads from replicas) serve join/leave churn, state
// writers and open streams on rooms of every master, and a game day's other
// traffic: matchmaking tickets joined and left, quick-joins left again,
// lists, personal streams. Its replica was cut off first, so the writes the
// master acknowledged last are lost for certain. Every request answers
// (success or 503) within the client's timeout, and a 503 within
// failFastBound; writes to the failed shard succeed again within 5 s of the
// promotion; every stream that received a lost event gets a snapshot before
// any event of the new history, and ends in that history; the data is
// consistent afterwards.
func TestClusterMasterFailover(t *testing.T) {
	// not parallel: it bounds the recovery's time (failoverRecoveryBound),
	// which the other tests' instances on the same cores would stretch
	cluster, prefix, env := replicatedCluster(t, "REALSYNC_LOG_LEVEL=info", "REALSYNC_REDIS_READ_FROM_REPLICAS=on")
	bin := buildBinary(t)
	ctx := t.Context()
	a, b := start(t, bin, env...), start(t, bin, env...)
	ins := []*instance{a, b}
	urls := []string{a.url, b.url}

	// Rooms of one mode each, so they spread over the shards, and so over
	// the masters; the victim is the master of the most.
	type room struct {
		id     string
		tokens []string // owner, then two members
		slot   int
		master *redistest.Server
	}
	byMaster := map[*redistest.Server][]*room{}
	var victim *redistest.Server
	for i := range 12 {
		r := &room{}
		r.tokens = []string{guest(t, a, "owner"), guest(t, a, "m1"), guest(t, b, "m2")}
		status, body := call(t, "POST", a.url+"/v1/rooms", r.tokens[0], map[string]any{"name": "f", "mode": fmt.Sprint("f", i),
			"region": "eu", "maxPlayers": 100, "statePolicy": "open"})
		if status != 201 {
			t.Fatalf("create: %d %v", status, body)
		}
		r.id = body["room"].(map[string]any)["id"].(string)
		for _, tok := range r.tokens[1:] {
			if status, body := call(t, "POST", b.url+"/v1/rooms/"+r.id+"/join", tok, nil); status != 200 {
				t.Fatalf("join: %d %v", status, body)
			}
		}
		r.master, r.slot = masterOfRoom(t, cluster, prefix, r.id)
		byMaster[r.master] = append(byMaster[r.master], r)
		if victim == nil || len(byMaster[r.master]) > len(byMaster[victim]) {
			victim = r.master
		}
	}
	hot := byMaster[victim][:min(3, len(byMaster[victim]))]
	var cold []*room
	for m, rs := range byMaster {
		if m != victim {
			cold = append(cold, rs[:min(2, len(rs))]...)
		}
	}
	if len(hot) < 2 || len(cold) < 2 {
		t.Fatalf("rooms per master %v: want 2 on the victim and 2 elsewhere", byMaster)
	}
	all := append(slices.Clone(hot), cold...)
	_, replicas, err := cluster.Shard(ctx, hot[0].slot)
	if err != nil || len(replicas) != 1 {
		t.Fatalf("replicas of the victim: %v %v", replicas, err)
	}

	// Two streams per room, one on each instance first.
	followers := map[string][]*follower{}
	for _, r := range all {
		for i, tok := range r.tokens[1:] {
			f := follow(t, []string{urls[i], urls[1-i]}, r.id, tok, i == 1)
			f.waitVersion(3, 10*time.Second)
			followers[r.id] = append(followers[r.id], f)
		}
	}

	// Writers: per room and instance, state patches with a unique value
	// each. Churners: guests joining and leaving the rooms.
	ta := newTally()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var acks []ack
	writes := map[string][]outcome{} // per writer
	hotWriter := map[string]bool{}
	for _, r := range all {
		for w, in := range ins {
			name := fmt.Sprintf("w%d%s", w, r.id[2:6])
			wg.Go(func() {
				for n := 0; n < 2000; n++ {
					select {
					case <-stop:
						return
					default:
					}
					marker := fmt.Sprint(name, "-", n)
					o := ta.timed("PATCH", in.url+"/v1/rooms/"+r.id+"/state", r.tokens[w], map[string]any{name: marker})
					mu.Lock()
					if o.ok() {
						acks = append(acks, ack{room: r.id, version: int64(o.body["version"].(float64)), marker: `"` + marker + `"`, at: o.done,
							sent: o.done.Add(-o.took)})
					}
					writes[name] = append(writes[name], o)
					hotWriter[name] = r.master == victim
					mu.Unlock()
					// 20 writes a second at most: with the churn, about
					// 60 events a second to a hot room, whose log (1 000)
					// must reach back to the cut after a slow promotion
					// (4 s), the writers' recovery and 2 s more (at 40 a
					// second its log was once trimmed past the cut)
					time.Sleep(time.Duration(50+25*btoi(!o.ok())) * time.Millisecond)
				}
			})
		}
	}
	for c := range 6 {
		tok := guest(t, ins[c%2], fmt.Sprint("churn", c))
		wg.Go(func() {
			for n := 0; n < 1000; n++ {
				select {
				case <-stop:
					return
				default:
				}
				r, in := all[(c+n)%len(all)], ins[n%2]
				if o := ta.timed("POST", in.url+"/v1/rooms/"+r.id+"/join", tok, nil); o.ok() {
					ta.timed("POST", ins[1-n%2].url+"/v1/rooms/"+r.id+"/leave", tok, nil)
				} else {
					time.Sleep(50 * time.Millisecond)
				}
			}
		})
	}

	other := gameDay(t, ins, stop, &wg)

	// The failover: the replica falls behind for good, the master keeps
	// acknowledging writes for a second, then dies.
	time.Sleep(1500 * time.Millisecond)
	if err := redistest.CutReplication(ctx, victim); err != nil {
		t.Fatal(err)
	}
	cut := time.Now()
	// a second of writes the replica never gets, and until one of them
	// on the victim (sent after the cut: one acknowledged after it may
	// have run before) was acknowledged and streamed (a loaded machine
	// may take longer: the check below needs one), up to 20 s
	isHot := map[string]bool{}
	for _, r := range hot {
		isHot[r.id] = true
	}
	lostStreamed := func() bool {
		first := map[string]int64{} // a hot room's first version sent and acknowledged after the cut
		mu.Lock()
		for i := len(acks) - 1; i >= 0 && acks[i].at.After(cut); i-- {
			if k := acks[i]; isHot[k.room] && k.sent.After(cut) {
				first[k.room] = k.version
			}
		}
		mu.Unlock()
		for room, v := range first {
			for _, f := range followers[room] {
				if es := f.all(); len(es) > 0 && es[len(es)-1].version >= v {
					return true
				}
			}
		}
		return false
	}
	time.Sleep(time.Second)
	for deadline := time.Now().Add(20 * time.Second); !lostStreamed(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			close(stop)
			wg.Wait()
			t.Fatal("no write sent to the victim after the replication cut was acknowledged and streamed within 20 s")
		}
	}
	killed := time.Now()
	victim.Kill()
	promoted, err := redistest.WaitMaster(replicas[0], 30*time.Second)
	if err != nil {
		close(stop)
		wg.Wait()
		t.Fatal(err)
	}
	// Traffic goes on until every writer of the failed shard wrote again
	// (or 15 s), then 2 s more.
	recovered := func() bool {
		mu.Lock()
		defer mu.Unlock()
		for name, outs := range writes {
			if hotWriter[name] && !slices.ContainsFunc(outs, func(o outcome) bool { return o.ok() && o.done.After(promoted) }) {
				return false
			}
		}
		return true
	}
	for deadline := promoted.Add(15 * time.Second); !recovered() && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(2 * time.Second)
	close(stop)
	wg.Wait()

	t.Logf("replica promoted %v after the kill; requests: %s", promoted.Sub(killed).Round(time.Millisecond), ta)
	t.Logf("tickets, quick-joins, lists: %s", other)
	for _, tl := range []*tally{ta, other} {
		if took := tl.slowest("503 STORE_UNAVAILABLE"); took > failFastBound {
			t.Errorf("a request answered 503 after %v, want within %v", took.Round(time.Millisecond), failFastBound)
		}
	}
	if bad := slices.DeleteFunc(other.unexpected("503 STORE_UNAVAILABLE"), func(k string) bool {
		return !strings.HasPrefix(k, "5") && !strings.HasPrefix(k, "hung") && !strings.HasPrefix(k, "transport")
	}); len(bad) > 0 {
		t.Errorf("tickets, quick-joins and lists that neither succeeded, nor were refused, nor failed fast with 503: %v", bad)
	}
	var recovery time.Duration
	var coldFailed int
	var coldFirst, coldLast time.Time
	for name, outs := range writes {
		if !hotWriter[name] {
			for _, o := range outs {
				if !o.ok() {
					coldFailed++
					if coldFirst.IsZero() || o.done.Before(coldFirst) {
						coldFirst = o.done
					}
					if o.done.After(coldLast) {
						coldLast = o.done
					}
				}
			}
			continue
		}
		i := slices.IndexFunc(outs, func(o outcome) bool { return o.ok() && o.done.After(promoted) })
		if i < 0 {
			t.Errorf("writer %s never wrote after the promotion", name)
			continue
		}
		recovery = max(recovery, outs[i].done.Sub(promoted))
	}
	t.Logf("writes to the failed shard succeed again %v after the promotion (%v after the kill)",
		recovery.Round(time.Millisecond), (promoted.Sub(killed) + recovery).Round(time.Millisecond))
	if coldFailed > 0 {
		// Between the master's FAIL flag and the promotion its slots are
		// not covered, and every node answers CLUSTERDOWN.
		t.Logf("writes to the other masters' rooms: %d failed, from %v to %v after the kill", coldFailed,
			coldFirst.Sub(killed).Round(time.Millisecond), coldLast.Sub(killed).Round(time.Millisecond))
	}
	if recovery > failoverRecoveryBound {
		t.Errorf("recovery took %v after the promotion, want ≤ %v", recovery, failoverRecoveryBound)
	}
	if bad := ta.unexpected("200 ", "201 ", "204 ", "503 STORE_UNAVAILABLE", "403 NOT_A_MEMBER"); len(bad) > 0 {
		t.Errorf("requests that neither succeeded nor failed fast with 503: %v", bad)
	}

	// What was acknowledged and lost, and what the streams made of it.
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cluster.Addrs()})
	defer cc.Close()
	logs := map[string]map[int64]logEntry{}
	var seen int // lost events that streams received
	for _, r := range all {
		for i, f := range followers[r.id] {
			es, log := f.settle(t, cc, prefix, r.id, 30*time.Second)
			seen += checkHistories(t, fmt.Sprintf("room %s stream %d", r.id, i), es, log)
			logs[r.id] = log
		}
	}
	// A hot room's log must reach back to the cut, or its loss is not seen.
	lostAcks, atCut := map[string]int{}, map[string]int64{}
	for _, k := range acks {
		if k.at.Before(cut) {
			atCut[k.room] = max(atCut[k.room], k.version)
		}
		if k.version < oldest(logs[k.room]) {
			continue
		}
		if l, ok := logs[k.room][k.version]; !ok || !strings.Contains(l.data, k.marker) {
			lostAcks[k.room]++
		}
	}
	for _, r := range hot {
		if first := oldest(logs[r.id]); first > atCut[r.id] {
			t.Fatalf("room %s's log was trimmed past the cut (v%d): the test writes too much", r.id, atCut[r.id])
		}
	}
	var lostHot int
	for _, r := range all {
		now, _, err := cluster.Shard(ctx, r.slot)
		switch {
		case err != nil:
			t.Fatal(err)
		case r.master == victim:
			lostHot += lostAcks[r.id]
		case now != r.master:
			// A starved machine can miss the node timeout: the Cluster then
			// fails over a healthy master too, with the same consequences.
			t.Logf("the master of room %s (%s) was failed over too: %d acknowledged writes lost", r.id, r.master.Addr, lostAcks[r.id])
		case lostAcks[r.id] > 0:
			t.Errorf("room %s on a master that did not fail lost %d acknowledged writes", r.id, lostAcks[r.id])
		}
	}
	t.Logf("%d of %d acknowledged writes lost by the failover; the streams received %d events of the lost history",
		lostHot, len(acks), seen)
	if lostHot == 0 || seen == 0 {
		t.Errorf("the failover lost no acknowledged write that streams saw (%d, %d): the replication cut did not work", lostHot, seen)
	}

	for _, fs := range followers {
		for _, f := range fs {
			f.stop()
			<-f.ended
		}
	}
	for _, in := range ins {
		in.stop(t)
	}
	bad, err := invariants.Check(ctx, cc, prefix)
	if err != nil || len(bad) > 0 {
		t.Fatalf("invariants: %v %v", bad, err)
	}
}

// gameDay runs, until stop, the traffic of a game day beside the rooms'
// writers and churners (a failover tester's, 2026-12-08): matchmaking
// tickets, each joined and left once matched; quick-joins left again;
// room lists (from replicas, when so configured); each of their users with
// a personal stream open. Returns their outcomes; a refusal (a ticket's
// room lost with a failover: 404) is theirs to have.
func gameDay(t *testing.T, ins []*instance, stop <-chan struct{}, wg *sync.WaitGroup) *tally {
	t.Helper()
	ta := newTally()
	stopped := func() bool {
		select {
		case <-stop:
			return true
		default:
			return false
		}
	}
	user := func(name string, in *instance) string {
		tok := guest(t, in, name)
		me := openMe(t, in.url, tok, "web")
		go func() { // drained: a stream not read would be cut as slow
			for range me.events {
			}
		}()
		return tok
	}
	for c := range 4 { // two matches at a time: matches are of 2
		tok := user(fmt.Sprint("ticket", c), ins[c%2])
		wg.Go(func() {
			for n := 0; !stopped(); n++ {
				in, to := ins[(c+n)%2], ins[(c+n+1)%2]
				o := ta.timed("POST", in.url+"/v1/matchmaking/tickets", tok, map[string]any{"mode": "duo", "regions": []string{"eu"}})
				if !o.ok() {
					time.Sleep(100 * time.Millisecond)
					continue
				}
				id, _ := o.body["ticket"].(map[string]any)["ticketId"].(string)
				room := ""
				for k := 0; k < 50 && room == "" && !stopped(); k++ {
					time.Sleep(100 * time.Millisecond)
					g := ta.timed("GET", in.url+"/v1/matchmaking/tickets/"+id, tok, nil)
					if tk, _ := g.body["ticket"].(map[string]any); g.ok() && tk != nil {
						if room, _ = tk["roomId"].(string); tk["status"] != "searching" && tk["status"] != "matched" {
							break
						}
					}
				}
				if room == "" {
					ta.timed("DELETE", in.url+"/v1/matchmaking/tickets/"+id, tok, nil)
					continue
				}
				if o := ta.timed("POST", to.url+"/v1/rooms/"+room+"/join", tok, nil); o.ok() {
					ta.timed("POST", in.url+"/v1/rooms/"+room+"/leave", tok, nil)
				}
			}
		})
	}
	for c := range 2 {
		tok := user(fmt.Sprint("quick", c), ins[c%2])
		wg.Go(func() {
			for n := 0; !stopped(); n++ {
				in, to := ins[(c+n)%2], ins[(c+n+1)%2]
				o := ta.timed("POST", in.url+"/v1/matchmaking/quick-join", tok, map[string]any{"mode": "quick", "regions": []string{"eu"},
					"create": map[string]any{"name": "q", "maxPlayers": 4}})
				room, _ := o.body["room"].(map[string]any)
				if id, _ := room["id"].(string); o.ok() && id != "" {
					time.Sleep(100 * time.Millisecond)
					ta.timed("POST", to.url+"/v1/rooms/"+id+"/leave", tok, nil)
				}
				time.Sleep(100 * time.Millisecond)
			}
		})
	}
	tok := guest(t, ins[0], "browser")
	wg.Go(func() {
		for n := 0; !stopped(); n++ {
			ta.timed("GET", ins[n%2].url+"/v1/rooms?mode=quick", tok, nil)
			time.Sleep(200 * time.Millisecond)
		}
	})
	return ta
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
