package api_test

import (
	"runtime"
	"strings"
	"testing"
	"time"
)

// A lobby or personal stream over plain HTTP/1.1 is taken over once it
// opened (sse's detachLooper): it idles on a goroutine of its own, not the
// connection's, outside the router, the middlewares and net/http's
// connection (whose goroutines and buffers went with the handler), right
// under sse's run, so that an idle stream's stack stays small enough for
// the runtime to shrink it. Over HTTP/2 and TLS such a stream stays with
// its request and idles under carryStreams.runRest (cmd/realsyncd's
// TestHTTP2StreamsShareOneConnection, TestCarriedStreamKeepsNothingOfItsOpening).
// Its access line is written when it ends, not when it opened.
func TestDetachedStreamsIdleOutsideTheMiddlewares(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		alice, _ := e.guest("alice")
		lobby := e.open("/v1/lobby/events?token=" + e.streamToken(alice, "/v1/lobby/events"))
		if f := lobby.next(); f.event != "rooms" {
			t.Fatalf("lobby's first event %+v", f)
		}
		me := e.me(alice, "web")
		if f := me.next(); f.event != "snapshot" {
			t.Fatalf("personal stream's first event %+v", f)
		}
		// a stream's goroutine between two waits (writing an event or a
		// heartbeat, its own or another test's stream's) is dumped again
		// once it waits
		deadline := time.Now().Add(10 * time.Second)
		for {
			idle, busy := 0, 0
			for _, g := range goroutines() {
				if !strings.Contains(g, "created by github.com/realsync/realsync/sse.(*Hub).detachLooper") {
					continue
				}
				for _, frame := range []string{"api.(*Server).observe", "chi/v5.(*Mux)", "api.(*Server).authenticate", "net/http.(*conn).serve", "api.carryStreams"} {
					if strings.Contains(g, frame) {
						t.Fatalf("a stream idles under %s:\n%s", frame, g)
					}
				}
				if strings.Contains(g, "sse.(*looper).Step(") || !strings.Contains(g, "sse.run(") {
					busy++ // writing, or not yet running its rest
					continue
				}
				if waiter, under := waiting(g); under != "sse.run" {
					t.Fatalf("a stream waits in %s under %s, not right under sse.run:\n%s", waiter, under, g)
				}
				idle++
			}
			// a stream whose client saw its opening may not be on its
			// goroutine yet (detachLooper flushes the opening first)
			if busy == 0 && idle >= 2 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d goroutines waiting in a detached stream and %d busy after 10 s, want the 2 streams opened waiting", idle, busy)
			}
			time.Sleep(10 * time.Millisecond)
		}
		if strings.Contains(e.logs.String(), `"route":"/v1/lobby/events"`) {
			t.Fatalf("the lobby stream was logged while open:\n%s", e.logs.String())
		}
		lobby.close()
		me.close()
		// one access line each, once their clients are gone (the sweep
		// sees them within a second): none written twice
		routes := []string{`"route":"/v1/lobby/events"`, `"route":"/v1/me/events"`}
		lines := func() (n [2]int) {
			for _, line := range strings.Split(e.logs.String(), "\n") {
				for i, route := range routes {
					if !strings.Contains(line, route) {
						continue
					}
					if !strings.Contains(line, `"stream":true`) {
						t.Fatalf("a stream's access line: %s", line)
					}
					n[i]++
				}
			}
			return n
		}
		deadline = time.Now().Add(10 * time.Second)
		for n := lines(); n[0] == 0 || n[1] == 0; n = lines() {
			if time.Now().After(deadline) {
				t.Fatalf("access lines of the lobby and personal streams after 10 s: %v, want one each:\n%s", n, e.logs.String())
			}
			time.Sleep(10 * time.Millisecond)
		}
		time.Sleep(1500 * time.Millisecond) // a second sweep: a second end would log again
		if n := lines(); n != [2]int{1, 1} {
			t.Fatalf("access lines of the lobby and personal streams: %v, want one each:\n%s", n, e.logs.String())
		}
	})
}

// goroutines returns the stack of every goroutine.
func goroutines() []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return strings.Split(string(buf[:n]), "\n\n")
		}
		buf = make([]byte, 2*len(buf))
	}
}

// waiting returns what waits in goroutine stack g (its first frame
// outside the runtime) and the function under it, by their names
// after their package path.
func waiting(g string) (waiter, caller string) {
	var funcs []string
	for _, line := range strings.Split(g, "\n") {
		if line == "" || strings.HasPrefix(line, "\t") || strings.HasPrefix(line, "goroutine ") || strings.HasPrefix(line, "created by ") {
			continue
		}
		name := line
		if i := strings.LastIndex(name, "("); i > 0 && strings.HasSuffix(name, ")") {
			name = name[:i] // the arguments
		}
		if i := strings.LastIndex(name, "/"); i >= 0 {
			name = name[i+1:]
		}
		if len(funcs) == 0 && strings.HasPrefix(name, "runtime.") {
			continue
		}
		if len(funcs) == 1 && name == funcs[0] {
			continue // a method's wrapper
		}
		if funcs = append(funcs, name); len(funcs) == 2 {
			break
		}
	}
	for len(funcs) < 2 {
		funcs = append(funcs, "")
	}
	return funcs[0], funcs[1]
}
