package main

import (
	"net"
	"sync"
	"testing"
	"time"
)

// The first of a connection's first request and its timer decides, once:
// the timer never closes a connection whose request it lost to, and a
// request that lost to the timer is not served.
func TestConnDeadlineDecidesOnce(t *testing.T) {
	for _, first := range []string{"request", "timer"} {
		t.Run(first, func(t *testing.T) {
			client, server := net.Pipe()
			defer client.Close()
			cd := &connDeadline{timer: time.AfterFunc(time.Hour, func() {})}
			var served bool
			if first == "request" {
				served = cd.serve()
				cd.expire(server)
			} else {
				cd.expire(server)
				served = cd.serve()
			}
			err := server.SetDeadline(time.Time{}) // fails once closed
			closed := err != nil
			if served != (first == "request") || closed != (first == "timer") {
				t.Errorf("%s first: served %v, connection closed %v", first, served, closed)
			}
			if again := cd.serve(); again != served {
				t.Errorf("a later request: served %v, want %v", again, served)
			}
		})
	}
	// at once, many times: exactly one of them wins
	for range 200 {
		client, server := net.Pipe()
		cd := &connDeadline{timer: time.AfterFunc(time.Hour, func() {})}
		var wg sync.WaitGroup
		var served bool
		wg.Add(2)
		go func() { defer wg.Done(); served = cd.serve() }()
		go func() { defer wg.Done(); cd.expire(server) }()
		wg.Wait()
		err := server.SetDeadline(time.Time{}) // fails once closed
		if closed := err != nil; served == closed {
			t.Fatalf("served %v, closed %v: want exactly one", served, closed)
		}
		client.Close()
		server.Close()
	}
}
