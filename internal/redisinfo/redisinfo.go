// Package redisinfo reads what the benchmarks and the load tool take from
// Redis' INFO: each command's calls and time (commandstats) and the
// server's CPU (cpu), the figures "measured by Redis itself".
package redisinfo

import (
	"strconv"
	"strings"
)

// Stat is one command's line of INFO commandstats.
type Stat struct {
	Calls int64
	Usec  int64 // µs spent in the command, in all
}

// PerCall is the command's µs per call (0 without calls).
func (s Stat) PerCall() float64 {
	if s.Calls == 0 {
		return 0
	}
	return float64(s.Usec) / float64(s.Calls)
}

// Sub is s minus an earlier reading.
func (s Stat) Sub(before Stat) Stat { return Stat{s.Calls - before.Calls, s.Usec - before.Usec} }

// Commandstats reads the "cmdstat_<name>:calls=N,usec=N,..." lines of an
// INFO reply: command name ("evalsha", "config|set") → its figures.
func Commandstats(info string) map[string]Stat {
	out := map[string]Stat{}
	for _, l := range strings.Split(info, "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(l), "cmdstat_")
		if !ok {
			continue
		}
		name, fields, _ := strings.Cut(rest, ":")
		var s Stat
		for _, f := range strings.Split(fields, ",") {
			k, v, _ := strings.Cut(f, "=")
			n, _ := strconv.ParseInt(v, 10, 64)
			switch k {
			case "calls":
				s.Calls = n
			case "usec":
				s.Usec = n
			}
		}
		out[name] = s
	}
	return out
}

// CPU reads used_cpu_user + used_cpu_sys (seconds) of an INFO reply;
// false when the reply has neither.
func CPU(info string) (float64, bool) {
	var sum float64
	found := false
	for _, l := range strings.Split(info, "\n") {
		k, v, _ := strings.Cut(strings.TrimSpace(l), ":")
		if k == "used_cpu_user" || k == "used_cpu_sys" {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return 0, false
			}
			sum, found = sum+f, true
		}
	}
	return sum, found
}
