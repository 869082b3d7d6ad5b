package main

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// The profiler's listener closes the connection of a request that declared
// a body and sent none (an abuse tester's POST /debug/pprof/ with
// Content-Length: 100 was neither answered nor closed for 71 s), and
// leaves a request without a body no deadline (a CPU profile runs 30 s,
// and a deadline passing cancels its context).
func TestPprofBodyDeadline(t *testing.T) {
	srv := httptest.NewServer(bodyDeadline(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/debug/pprof/symbol" { // reads its body
			io.Copy(io.Discard, r.Body)
		}
		if r.ContentLength == 0 {
			select { // a profile's wait: its context must outlive the deadline
			case <-r.Context().Done():
				http.Error(w, "cancelled", http.StatusInternalServerError)
				return
			case <-time.After(400 * time.Millisecond):
			}
		}
		io.WriteString(w, "ok")
	}), 200*time.Millisecond))
	defer srv.Close()
	for _, request := range []string{
		"POST /debug/pprof/ HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n",         // declared, never sent
		"POST /debug/pprof/symbol HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\n0x01", // sent whole (a reviewer's case: kept alive, no idle timeout there)
	} {
		conn, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		io.WriteString(conn, request)
		conn.SetReadDeadline(time.Now().Add(10 * time.Second)) // a bounded wait: the close comes 200 ms after the request at most
		br := bufio.NewReader(conn)
		res, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("no answer: %v", err)
		}
		io.Copy(io.Discard, res.Body)
		if n, err := br.Read(make([]byte, 1)); err != io.EOF {
			t.Fatalf("%q: after the answer the connection is still open: read %d, %v (want EOF)", request, n, err)
		}
	}
	res, err := http.Get(srv.URL + "/debug/pprof/profile")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if body, _ := io.ReadAll(res.Body); string(body) != "ok" {
		t.Fatalf("a request without a body past the deadline: %d %q", res.StatusCode, body)
	}
}
