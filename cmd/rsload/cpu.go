package main

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// userHZ is the unit of the CPU times in /proc/<pid>/stat: USER_HZ, 100 on
// every Linux architecture Go supports (the kernel scales its own tick to
// it for this interface).
const userHZ = 100

// ServerCPU is the CPU a server process on this machine used during an ops
// run, per request answered: utime+stime from /proc/<pid>/stat, every
// thread of the process, read before the first request of the run and
// after the last answer. A ratio of CPU time to requests does not depend
// on how fast the shared machine let the run go, so it compares servers
// measured one after the other.
type ServerCPU struct {
	Pid             int     `json:"pid"`
	UserSeconds     float64 `json:"userSeconds"`
	SystemSeconds   float64 `json:"systemSeconds"`
	Requests        int     `json:"requests"`
	MicrosPerReq    float64 `json:"microsPerRequest"`
	CoresDuringRun  float64 `json:"coresDuringRun"`
	resolutionTicks int64
}

// cpuTicks reads the user and system CPU ticks of process pid.
func cpuTicks(pid int) (user, system int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, fmt.Errorf("-cpu-pid: %w", err)
	}
	return parseStatTicks(string(b))
}

// parseStatTicks takes utime and stime (fields 14 and 15) from a
// /proc/<pid>/stat line. The command name (field 2) is in parentheses and
// may hold spaces and parentheses itself, so fields count from the last ')'.
func parseStatTicks(stat string) (user, system int64, err error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, 0, fmt.Errorf("-cpu-pid: malformed stat %q", stat)
	}
	f := strings.Fields(stat[i+1:]) // f[0] is field 3 (state)
	if len(f) < 13 {
		return 0, 0, fmt.Errorf("-cpu-pid: short stat %q", stat)
	}
	if user, err = strconv.ParseInt(f[11], 10, 64); err == nil {
		system, err = strconv.ParseInt(f[12], 10, 64)
	}
	if err != nil {
		return 0, 0, fmt.Errorf("-cpu-pid: malformed stat: %w", err)
	}
	return user, system, nil
}

// cpuMeter measures a process's CPU over a run; the zero pid measures
// nothing.
type cpuMeter struct {
	pid          int
	user, system int64
}

// startCPU reads pid's CPU times at the start of a run (pid 0: no meter).
func startCPU(pid int) (*cpuMeter, error) {
	if pid == 0 {
		return nil, nil
	}
	u, s, err := cpuTicks(pid)
	if err != nil {
		return nil, err
	}
	return &cpuMeter{pid: pid, user: u, system: s}, nil
}

// stop reads the CPU times again and divides them by the requests answered
// over the run's seconds; nil for no meter.
func (m *cpuMeter) stop(requests int, seconds float64) (*ServerCPU, error) {
	if m == nil {
		return nil, nil
	}
	u, s, err := cpuTicks(m.pid)
	if err != nil {
		return nil, err
	}
	du, ds := u-m.user, s-m.system
	out := &ServerCPU{Pid: m.pid, UserSeconds: float64(du) / userHZ, SystemSeconds: float64(ds) / userHZ,
		Requests: requests, resolutionTicks: du + ds}
	total := out.UserSeconds + out.SystemSeconds
	if requests > 0 {
		out.MicrosPerReq = total * 1e6 / float64(requests)
	}
	if seconds > 0 {
		out.CoresDuringRun = total / seconds
	}
	return out, nil
}

func (c *ServerCPU) print(w io.Writer) {
	fmt.Fprintf(w, "  server CPU (pid %d): %.1f µs/request (%d requests; user %.2f s + system %.2f s = %.2f cores; ±%.1f%% from the %d ms tick)\n",
		c.Pid, c.MicrosPerReq, c.Requests, c.UserSeconds, c.SystemSeconds, c.CoresDuringRun,
		100/float64(max(c.resolutionTicks, 1)), 1000/userHZ)
}
