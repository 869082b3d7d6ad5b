package webhooks

import (
	"context"
	"testing"
	"time"
)

// TestPoolRoom: whether a send to an endpoint may start, by the pool's
// rules: at most half the workers to one endpoint; an endpoint with none
// in flight always starts on an idle worker, and another endpoint's
// second and later sends leave an idle worker for each configured
// endpoint with none in flight (half the pool at most); an endpoint whose
// last try failed one at a time, and such endpoints half the pool
// together.
func TestPoolRoom(t *testing.T) {
	for _, tc := range []struct {
		name      string
		workers   int
		endpoints []string
		inFlight  map[string]int
		failing   []string
		ask       string
		want      bool
	}{
		{"an endpoint alone up to half", 8, []string{"a"}, map[string]int{"a": 3}, nil, "a", true},
		{"not past half", 8, []string{"a"}, map[string]int{"a": 4}, nil, "a", false},
		{"a first send with a worker idle", 8, []string{"a", "b", "c"}, map[string]int{"a": 4, "b": 3}, nil, "c", true},
		{"no worker idle", 8, []string{"a", "b", "c"}, map[string]int{"a": 4, "b": 4}, nil, "c", false},
		{"a second send leaves one each to two idle endpoints", 8, []string{"a", "b", "c"}, map[string]int{"a": 3, "b": 2}, nil, "b", true},
		{"two hung endpoints keep the third's worker", 8, []string{"a", "b", "c"}, map[string]int{"a": 4, "b": 3}, nil, "b", false},
		{"two of four workers kept for two idle endpoints", 4, []string{"a", "b", "c"}, map[string]int{"a": 1}, nil, "a", true},
		{"one kept for the idle endpoint", 4, []string{"a", "b", "c"}, map[string]int{"a": 1, "b": 1}, nil, "a", true},
		{"not the idle endpoint's", 4, []string{"a", "b", "c"}, map[string]int{"a": 2, "b": 1}, nil, "b", false},
		{"at most half the pool kept", 8, []string{"a", "b", "c", "d", "e", "f", "g", "h", "i"}, map[string]int{"a": 3}, nil, "a", true},
		{"half the pool kept", 8, []string{"a", "b", "c", "d", "e", "f", "g", "h", "i"}, map[string]int{"a": 3, "b": 1}, nil, "a", false},
		{"an endpoint removed in flight keeps none", 8, []string{"a"}, map[string]int{"x": 3, "a": 3}, nil, "a", true},
		{"a failing endpoint's first send", 8, []string{"a", "b"}, map[string]int{}, []string{"a"}, "a", true},
		{"a failing endpoint's second send", 8, []string{"a", "b"}, map[string]int{"a": 1}, []string{"a"}, "a", false},
		{"failing endpoints up to half the pool", 8, []string{"a", "b", "c", "d", "e", "f"}, map[string]int{"a": 1, "b": 1, "c": 1}, []string{"a", "b", "c", "d", "e"}, "d", true},
		{"failing endpoints not past half the pool", 8, []string{"a", "b", "c", "d", "e", "f"}, map[string]int{"a": 1, "b": 1, "c": 1, "d": 1}, []string{"a", "b", "c", "d", "e"}, "e", false},
		{"a healthy endpoint beside failing ones", 8, []string{"a", "b", "c", "d", "e", "f"}, map[string]int{"a": 1, "b": 1, "c": 1, "d": 1}, []string{"a", "b", "c", "d", "e"}, "f", true},
		{"one worker: a first send", 1, []string{"a", "b"}, map[string]int{}, nil, "b", true},
		{"one worker, taken", 1, []string{"a", "b"}, map[string]int{"a": 1}, nil, "b", false},
		{"one worker, a failing endpoint", 1, []string{"a", "b"}, map[string]int{}, []string{"a"}, "a", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPool(tc.workers, time.Minute)
			p.setEndpoints(tc.endpoints)
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
