package api_test

import (
	"runtime"
	"strings"
	"testing"
	"time"
)

// A stream that stays with its request (a lobby stream, a personal stream,
// over any protocol) idles on the request's goroutine outside the router
// and the middlewares (carryStreams): no goroutine waiting in a stream's
// loop holds their frames. Its access line is written when it ends, not
// when it opened.
func TestCarriedStreamsIdleOutsideTheMiddlewares(t *testing.T) {
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
		loops := 0
		for _, g := range goroutines() {
			if !strings.Contains(g, "sse.loop[") {
				continue
			}
			loops++
			for _, frame := range []string{"api.(*Server).observe", "chi/v5.(*Mux)", "api.(*Server).authenticate"} {
				if strings.Contains(g, frame) {
					t.Fatalf("a stream idles under %s:\n%s", frame, g)
				}
			}
			if !strings.Contains(g, "api.carryStreams.ServeHTTP") {
				t.Fatalf("a stream idles outside carryStreams:\n%s", g)
			}
		}
		if loops < 2 {
			t.Fatalf("%d goroutines in a stream's loop, want at least the 2 streams opened", loops)
		}
		if strings.Contains(e.logs.String(), `"route":"/v1/lobby/events"`) {
			t.Fatalf("the lobby stream was logged while open:\n%s", e.logs.String())
		}
		lobby.close()
		deadline := time.Now().Add(10 * time.Second)
		for !strings.Contains(e.logs.String(), `"route":"/v1/lobby/events"`) {
			if time.Now().After(deadline) {
				t.Fatalf("the lobby stream's access line never came:\n%s", e.logs.String())
			}
			time.Sleep(10 * time.Millisecond)
		}
		for _, line := range strings.Split(e.logs.String(), "\n") {
			if strings.Contains(line, `"route":"/v1/lobby/events"`) && !strings.Contains(line, `"stream":true`) {
				t.Fatalf("the lobby stream's access line: %s", line)
			}
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
