package webhooks

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"
)

// TestPoolRoom: whether a send to an endpoint may start, by the pool's
// rules: one endpoint at most every worker but one for each other
// configured endpoint, half the workers at least; an endpoint with none
// in flight always starts on an idle worker, and another endpoint's
// second and later sends leave an idle worker for each configured
// endpoint with none in flight that sent lately (half the pool at most);
// an endpoint whose last try failed one at a time, and such endpoints
// half the pool together. Every configured endpoint sent lately but
// those quiet.
func TestPoolRoom(t *testing.T) {
	for _, tc := range []struct {
		name      string
		workers   int
		endpoints []string
		inFlight  map[string]int
		failing   []string
		ask       string
		want      bool
		quiet     []string
	}{
		{"an endpoint alone takes every worker", 8, []string{"a"}, map[string]int{"a": 7}, nil, "a", true, nil},
		{"an endpoint leaves one to another, quiet", 8, []string{"a", "b"}, map[string]int{"a": 7}, nil, "a", false, []string{"b"}},
		{"an endpoint beside another, quiet", 8, []string{"a", "b"}, map[string]int{"a": 6}, nil, "a", true, []string{"b"}},
		{"one each to three others", 8, []string{"a", "b", "c", "d"}, map[string]int{"a": 5}, nil, "a", false, []string{"b", "c", "d"}},
		{"within one each to three others", 8, []string{"a", "b", "c", "d"}, map[string]int{"a": 4}, nil, "a", true, []string{"b", "c", "d"}},
		{"half at least beside many", 8, []string{"a", "b", "c", "d", "e", "f", "g", "h", "i"}, map[string]int{"a": 3}, nil, "a", true, []string{"b", "c", "d", "e", "f", "g", "h", "i"}},
		{"not past half beside many", 8, []string{"a", "b", "c", "d", "e", "f", "g", "h", "i"}, map[string]int{"a": 4}, nil, "a", false, []string{"b", "c", "d", "e", "f", "g", "h", "i"}},
		{"a first send with a worker idle", 8, []string{"a", "b", "c"}, map[string]int{"a": 4, "b": 3}, nil, "c", true, nil},
		{"no worker idle", 8, []string{"a", "b", "c"}, map[string]int{"a": 4, "b": 4}, nil, "c", false, nil},
		{"a second send leaves one each to two idle endpoints", 8, []string{"a", "b", "c"}, map[string]int{"a": 3, "b": 2}, nil, "b", true, nil},
		{"two hung endpoints keep the third's worker", 8, []string{"a", "b", "c"}, map[string]int{"a": 4, "b": 3}, nil, "b", false, nil},
		{"two of four workers kept for two idle endpoints", 4, []string{"a", "b", "c"}, map[string]int{"a": 1}, nil, "a", true, nil},
		{"one kept for the idle endpoint", 4, []string{"a", "b", "c"}, map[string]int{"a": 1, "b": 1}, nil, "a", true, nil},
		{"not the idle endpoint's", 4, []string{"a", "b", "c"}, map[string]int{"a": 2, "b": 1}, nil, "b", false, nil},
		{"at most half the pool kept", 8, []string{"a", "b", "c", "d", "e", "f", "g", "h", "i"}, map[string]int{"a": 3}, nil, "a", true, nil},
		{"half the pool kept", 8, []string{"a", "b", "c", "d", "e", "f", "g", "h", "i"}, map[string]int{"a": 3, "b": 1}, nil, "a", false, nil},
		{"an endpoint removed in flight keeps none", 8, []string{"a"}, map[string]int{"x": 3, "a": 3}, nil, "a", true, nil},
		{"a failing endpoint's first send", 8, []string{"a", "b"}, map[string]int{}, []string{"a"}, "a", true, nil},
		{"a failing endpoint's second send", 8, []string{"a", "b"}, map[string]int{"a": 1}, []string{"a"}, "a", false, nil},
		{"failing endpoints up to half the pool", 8, []string{"a", "b", "c", "d", "e", "f"}, map[string]int{"a": 1, "b": 1, "c": 1}, []string{"a", "b", "c", "d", "e"}, "d", true, nil},
		{"failing endpoints not past half the pool", 8, []string{"a", "b", "c", "d", "e", "f"}, map[string]int{"a": 1, "b": 1, "c": 1, "d": 1}, []string{"a", "b", "c", "d", "e"}, "e", false, nil},
		{"a healthy endpoint beside failing ones", 8, []string{"a", "b", "c", "d", "e", "f"}, map[string]int{"a": 1, "b": 1, "c": 1, "d": 1}, []string{"a", "b", "c", "d", "e"}, "f", true, nil},
		{"one worker: a first send", 1, []string{"a", "b"}, map[string]int{}, nil, "b", true, nil},
		{"one worker, taken", 1, []string{"a", "b"}, map[string]int{"a": 1}, nil, "b", false, nil},
		{"one worker, a failing endpoint", 1, []string{"a", "b"}, map[string]int{}, []string{"a"}, "a", true, nil},
		{"none kept for endpoints with nothing to send", 8, []string{"a", "b", "c", "d", "e", "f"}, map[string]int{"a": 3, "b": 3}, nil, "a", true, []string{"c", "d", "e", "f"}},
		{"one kept for the one that sent lately", 8, []string{"a", "b", "c", "d", "e", "f"}, map[string]int{"a": 3, "b": 4}, nil, "a", false, []string{"d", "e", "f"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPool(tc.workers, time.Minute)
			p.setEndpoints(tc.endpoints)
			clear(p.unproven) // each has ended a try
			for _, ep := range tc.endpoints {
				if !slices.Contains(tc.quiet, ep) {
					p.seen[ep] = time.Now()
				}
			}
			for ep, n := range tc.inFlight {
				p.byEndpoint[ep] = n
				p.busy += n
			}
			for _, ep := range tc.failing {
				p.failing[ep] = true
			}
			if got := p.room(tc.ask); got != tc.want {
				t.Fatalf("room(%q) = %v, want %v", tc.ask, got, tc.want)
			}
		})
	}
}

// TestPoolFreedWorkerGoesToTheFewestInFlight: a worker that falls idle
// takes the waiting send of the endpoint with room that has the fewest
// sends in flight, not another of the endpoint that already holds most.
func TestPoolFreedWorkerGoesToTheFewestInFlight(t *testing.T) {
	p := newPool(8, time.Minute)
	p.setEndpoints([]string{"slow", "other", "fast"})
	clear(p.unproven) // each has ended a try
	p.byEndpoint = map[string]int{"slow": 3, "other": 1}
	p.busy = 4
	now := time.Now()
	for _, ep := range []string{"slow", "other", "fast"} {
		p.waiting[ep] = []queued{{ctx: context.Background(), key: ep + "/1", endpoint: ep, readAt: now}}
		p.nWaiting++
	}
	q, ok := p.next()
	if !ok || q.endpoint != "fast" {
		t.Fatalf("next = %q, %v; want fast's send", q.endpoint, ok)
	}
}

// TestPoolLearnsFailingEndpoints: a failed try makes its endpoint failing
// (one send at a time), a successful one ends that, and an endpoint no
// longer configured is forgotten.
func TestPoolLearnsFailingEndpoints(t *testing.T) {
	p := newPool(8, time.Minute)
	p.setEndpoints([]string{"a", "b"})
	try := func(ep string, tried bool) {
		t.Helper()
		if !p.start(context.Background(), ep+"/"+time.Now().String(), ep, func() (bool, error) { return tried, nil }) {
			t.Fatalf("a send to %s not taken", ep)
		}
		p.wg.Wait()
	}
	try("a", false)
	if !p.failing["a"] {
		t.Fatal("a failed try left its endpoint healthy")
	}
	try("a", true)
	if p.failing["a"] {
		t.Fatal("a successful try left its endpoint failing")
	}
	try("b", false)
	p.setEndpoints([]string{"a"})
	if p.failing["b"] {
		t.Fatal("an endpoint no longer configured is still failing")
	}
}

// inFlight is how many sends to ep run, and how many wait.
func (p *pool) inFlight(ep string) (running, waiting int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.byEndpoint[ep], len(p.waiting[ep])
}

// sendKeys numbers the test sends' delivery keys.
var sendKeys atomic.Int64

// held starts n sends to ep, each running until its channel is closed
// (answering up), and returns the channels in the order they were given.
func held(t *testing.T, p *pool, ep string, n int) []chan struct{} {
	t.Helper()
	var out []chan struct{}
	for i := range n {
		c := make(chan struct{})
		out = append(out, c)
		if !p.start(context.Background(), fmt.Sprint(ep, "/", sendKeys.Add(1)), ep, func() (bool, error) { <-c; return true, nil }) {
			t.Fatalf("send %d to %s not taken", i, ep)
		}
	}
	return out
}

// waitInFlight waits (10 s at most) until ep has running sends in flight
// and waiting ones waiting.
func waitInFlight(t *testing.T, p *pool, ep string, running, waiting int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		r, w := p.inFlight(ep)
		if r == running && w == waiting {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d sends running and %d waiting, want %d and %d", ep, r, w, running, waiting)
		}
	}
}

// TestPoolRecoveredEndpointStartsAllItHasRoomFor: a failing endpoint's
// sends wait one at a time; once its try succeeds it has room for the
// pool again (it is alone), and every waiting send starts at once (a reviewer's
// test: only the worker that ended took one, and the rest followed one at
// a time).
func TestPoolRecoveredEndpointStartsAllItHasRoomFor(t *testing.T) {
	p := newPool(8, time.Minute)
	p.setEndpoints([]string{"a"})
	p.failing["a"] = true
	sends := held(t, p, "a", 4)
	waitInFlight(t, p, "a", 1, 3)
	close(sends[0]) // its one try succeeds: room for 4
	waitInFlight(t, p, "a", 3, 0)
	for _, c := range sends[1:] {
		close(c)
	}
	p.wg.Wait()
}

// TestPoolKeepsNoWorkerForEndpointsWithNothingToSend: two busy endpoints
// beside four that sent nothing lately take the whole pool (a reviewer's
// test: a worker was kept for each of the four, and the two shared half).
func TestPoolKeepsNoWorkerForEndpointsWithNothingToSend(t *testing.T) {
	p := newPool(8, time.Minute)
	p.setEndpoints([]string{"a", "b", "c", "d", "e", "f"})
	clear(p.unproven) // each has ended a try
	var sends []chan struct{}
	for range 4 {
		sends = append(sends, held(t, p, "a", 1)[0], held(t, p, "b", 1)[0])
	}
	if a, _ := p.inFlight("a"); a != 4 {
		t.Fatalf("a runs %d sends, want its half, 4", a)
	}
	if b, _ := p.inFlight("b"); b != 4 {
		t.Fatalf("b runs %d sends, want its half, 4", b)
	}
	for _, c := range sends {
		close(c)
	}
	p.wg.Wait()
}

type answeredErr bool

func (a answeredErr) Error() string  { return "answered" }
func (a answeredErr) Answered() bool { return bool(a) }

// TestAnsweredRefusalIsNoFailure: a try the endpoint refused answering (a
// 4xx for a type its receiver does not take) says it is up, so it is not
// sent one try at a time after it (a reviewer's test: an endpoint refusing
// one type of four ran one send at a time, about 4 times slower); any
// other failure says it is down.
func TestAnsweredRefusalIsNoFailure(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{answeredErr(true), true},
		{fmt.Errorf("try: %w", answeredErr(true)), true},
		{answeredErr(false), false},
		{errors.New("connection refused"), false},
		{context.DeadlineExceeded, false},
	} {
		if got := answered(tc.err); got != tc.want {
			t.Errorf("answered(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// TestPoolNewEndpointSendsOneAtATimeUntilATrySucceeds: an endpoint new to
// the pool (every endpoint at the start) has one send in flight until a
// try of it succeeds, so one that hangs from its first send holds one
// worker, and a healthy one beside it the rest (a tester's find: the hung
// one took 7 of 8 until its first timeout); once a try succeeded it
// takes its share, and so does an endpoint added by a reload later.
func TestPoolNewEndpointSendsOneAtATimeUntilATrySucceeds(t *testing.T) {
	p := newPool(8, time.Minute)
	p.setEndpoints([]string{"hung", "good"})
	hung := held(t, p, "hung", 3) // the first runs, the others wait
	waitInFlight(t, p, "hung", 1, 2)
	first := held(t, p, "good", 1)
	waitInFlight(t, p, "good", 1, 0)
	close(first[0]) // good proved itself
	waitInFlight(t, p, "good", 0, 0)
	good := held(t, p, "good", 7)
	waitInFlight(t, p, "good", 7, 0) // every worker but the hung one's
	for _, c := range good {
		close(c)
	}
	p.setEndpoints([]string{"hung", "good", "added"})
	added := held(t, p, "added", 2)
	waitInFlight(t, p, "added", 1, 1)
	close(hung[0]) // hung's first try ends well: its waiting sends start
	waitInFlight(t, p, "hung", 2, 0)
	for _, c := range append(hung[1:], added...) {
		close(c)
	}
	p.wg.Wait()
}
