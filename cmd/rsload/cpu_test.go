package main

import (
	"os"
	"testing"
)

func TestParseStatTicks(t *testing.T) {
	tests := []struct {
		name         string
		stat         string
		user, system int64
		bad          bool
	}{
		{name: "plain", stat: "4242 (realsyncd) S 1 4242 4242 0 -1 4194560 5000 0 0 0 1234 567 0 0 20 0 9 0 100 0 0",
			user: 1234, system: 567},
		// the command name may hold spaces and parentheses
		{name: "odd command name", stat: "7 (a (b) c) R 1 7 7 0 -1 0 0 0 0 0 11 22 0 0 20 0 1 0 5 0 0", user: 11, system: 22},
		{name: "no parenthesis", stat: "7 a R 1", bad: true},
		{name: "short", stat: "7 (a) R 1 2 3", bad: true},
		{name: "not a number", stat: "7 (a) R 1 7 7 0 -1 0 0 0 0 0 x 22 0", bad: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, s, err := parseStatTicks(tt.stat)
			if tt.bad {
				if err == nil {
					t.Fatalf("got %d %d, want an error", u, s)
				}
				return
			}
			if err != nil || u != tt.user || s != tt.system {
				t.Fatalf("got %d %d %v, want %d %d", u, s, err, tt.user, tt.system)
			}
		})
	}
}

// TestCPUMeterSeesWork burns CPU in this process and sees the meter count
// it (bounded: stops once a tick was counted or after 5 s of CPU).
func TestCPUMeterSeesWork(t *testing.T) {
	m, err := startCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	x := 0
	for i := 0; i < 5_000_000_000; i++ {
		x += i * i
		if i%10_000_000 == 0 {
			if u, s, _ := cpuTicks(os.Getpid()); u+s-m.user-m.system >= 5 {
				break
			}
		}
	}
	c, err := m.stop(10, 1)
	if err != nil {
		t.Fatal(err)
	}
	if c.UserSeconds+c.SystemSeconds < 0.05 || c.MicrosPerReq < 5000 || c.Requests != 10 {
		t.Fatalf("meter: %+v (x %d)", c, x)
	}
	if none, err := startCPU(0); none != nil || err != nil {
		t.Fatalf("pid 0: %v %v", none, err)
	}
}
