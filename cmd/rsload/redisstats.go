package main

import (
	"github.com/realsync/realsync/internal/redisinfo"

	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/internal/anchor"
	"github.com/realsync/realsync/internal/redisurl"
	"github.com/realsync/realsync/store"
)

// Redis' own figures for a run (-redis): what the Redis behind the server
// spent, read from Redis itself, so they depend little on what else the
// machine runs:
//   - INFO cpu: used_cpu_user + used_cpu_sys of the redis-server process
//     over the run, per request of the run;
//   - INFO commandstats: calls and µs of every command over the run (a
//     script's or a MULTI/EXEC's commands counted apart and again in the
//     EVALSHA's or the EXEC's time); scripts (EVALSHA, EVAL, FCALL) per
//     request;
//   - with -redis-sample, SLOWLOG at threshold 0 over the run's last
//     quarter (its last sampleEntries commands): the script runs by script
//     name (EVALSHA's SHA1 and FCALL's function named by store.ScriptNames)
//     and the Redis calls each made. Logging every command inflates the
//     durations of that quarter (a script's by about 1 to 8 µs per command
//     it calls), so no duration is read from the sample, and the CPU and
//     commandstats figures of a sampled run are not comparable with an
//     unsampled one's.
// One kind of request per run attributes the per-request figures to it;
// Redis time per script, one script at a time, is store's
// BenchmarkRedisTime.

// sampleEntries is how many of the run's last commands SLOWLOG keeps.
const sampleEntries = 8192

// RedisStat is one command's calls and Redis time.
type RedisStat struct {
	Name        string  `json:"name"`
	Calls       int64   `json:"calls"`
	Usec        int64   `json:"usec"`
	UsecPerCall float64 `json:"usecPerCall"`
}

// ScriptRuns is a script's runs in the sample and the Redis calls they made.
type ScriptRuns struct {
	Name        string  `json:"name"`
	Runs        int     `json:"runs"`
	CallsPerRun float64 `json:"redisCallsPerRun"`
}

// RedisReport is Redis' own account of a run.
type RedisReport struct {
	Requests          int          `json:"requests"`
	CPUSeconds        float64      `json:"cpuSeconds"`
	CPUMicrosPerReq   float64      `json:"cpuMicrosPerRequest"`
	ScriptMicrosPerRq float64      `json:"scriptMicrosPerRequest"` // EVALSHA, EVAL, FCALL
	ExecMicrosPerRq   float64      `json:"execMicrosPerRequest"`   // MULTI/EXEC (with what ran in it)
	Commands          []RedisStat  `json:"commands"`               // INFO commandstats over the run
	Scripts           []ScriptRuns `json:"scripts,omitempty"`      // from the SLOWLOG sample
	Sampled           int          `json:"sampledCommands,omitempty"`
}

// redisProbe reads the figures of one Redis (standalone).
type redisProbe struct {
	c     *redis.Client
	names map[string]string // SHA1 → script name

	cpu0  float64
	cmds0 map[string]RedisStat
	saved []string // slowlog settings to restore: threshold, max-len
}

func newRedisProbe(url string) (*redisProbe, error) {
	o, err := redisurl.Parse(url)
	if err != nil {
		return nil, fmt.Errorf("-redis: %w", err)
	}
	o.Protocol = 2
	names := store.ScriptNames()
	names[anchor.Script.Hash()] = "anchor"
	return &redisProbe{c: redis.NewClient(o), names: names}, nil
}

func (p *redisProbe) Close() error { return p.c.Close() }

// start takes the run's first readings.
func (p *redisProbe) start(ctx context.Context) error {
	var err error
	if p.cpu0, err = p.cpu(ctx); err != nil {
		return err
	}
	p.cmds0, err = p.commandstats(ctx)
	return err
}

// startSample turns SLOWLOG into a sample of every command from now on.
func (p *redisProbe) startSample(ctx context.Context) error {
	p.saved = nil
	for _, k := range []string{"slowlog-log-slower-than", "slowlog-max-len"} {
		v, err := p.c.ConfigGet(ctx, k).Result()
		if err != nil {
			return err
		}
		p.saved = append(p.saved, v[k])
	}
	if err := p.c.ConfigSet(ctx, "slowlog-max-len", strconv.Itoa(sampleEntries)).Err(); err != nil {
		return err
	}
	if err := p.c.Do(ctx, "SLOWLOG", "RESET").Err(); err != nil {
		return err
	}
	return p.c.ConfigSet(ctx, "slowlog-log-slower-than", "0").Err()
}

// stop takes the last readings (ending the sample) and reports the
// difference, per request of the run's requests.
func (p *redisProbe) stop(ctx context.Context, requests int) (*RedisReport, error) {
	cpu, err := p.cpu(ctx)
	if err != nil {
		return nil, err
	}
	cmds, err := p.commandstats(ctx)
	if err != nil {
		return nil, err
	}
	var log []redis.SlowLog
	if p.saved != nil {
		if err := p.c.ConfigSet(ctx, "slowlog-log-slower-than", p.saved[0]).Err(); err != nil {
			return nil, err
		}
		if log, err = p.c.SlowLogGet(ctx, sampleEntries).Result(); err != nil {
			return nil, err
		}
		p.c.ConfigSet(ctx, "slowlog-max-len", p.saved[1])
		p.c.Do(ctx, "SLOWLOG", "RESET")
	}
	r := &RedisReport{Requests: requests, CPUSeconds: cpu - p.cpu0}
	if requests > 0 {
		r.CPUMicrosPerReq = r.CPUSeconds * 1e6 / float64(requests)
	}
	for name, s := range cmds {
		s.Calls -= p.cmds0[name].Calls
		s.Usec -= p.cmds0[name].Usec
		if s.Calls <= 0 || strings.HasPrefix(name, "slowlog") || strings.HasPrefix(name, "config") || name == "info" {
			continue
		}
		s.UsecPerCall = float64(s.Usec) / float64(s.Calls)
		r.Commands = append(r.Commands, s)
	}
	slices.SortFunc(r.Commands, func(a, b RedisStat) int { return int(b.Usec - a.Usec) })
	if requests > 0 {
		var scripts int64
		for _, n := range []string{"evalsha", "eval", "fcall", "evalsha_ro", "eval_ro", "fcall_ro"} {
			scripts += cmds[n].Usec - p.cmds0[n].Usec
		}
		r.ScriptMicrosPerRq = float64(scripts) / float64(requests)
		r.ExecMicrosPerRq = float64(cmds["exec"].Usec-p.cmds0["exec"].Usec) / float64(requests)
	}
	r.Scripts, r.Sampled = p.attribute(log)
	return r, nil
}

// nested: a command a script ran (SLOWLOG names no client for it).
func nested(e redis.SlowLog) bool { return e.ClientAddr == "?:0" || e.ClientAddr == "" }

// ignored: the probe's own commands.
func ignored(e redis.SlowLog) bool {
	if len(e.Args) == 0 {
		return true
	}
	switch strings.ToLower(e.Args[0]) {
	case "config", "slowlog", "info":
		return true
	}
	return false
}

// attribute counts the sample's script runs by script name, and the
// commands each ran: a script's commands are logged (with no client) right
// before the script itself, and nothing runs between them.
func (p *redisProbe) attribute(log []redis.SlowLog) (stats []ScriptRuns, n int) {
	by := map[string]*ScriptRuns{}
	calls := map[string]int{}
	inner := 0
	for i := len(log) - 1; i >= 0; i-- { // oldest first
		e := log[i]
		if ignored(e) {
			continue
		}
		n++
		if nested(e) {
			inner++
			continue
		}
		name := ""
		switch strings.ToLower(e.Args[0]) {
		case "evalsha", "evalsha_ro":
			name = p.names[e.Args[1]]
			if name == "" {
				name = "unknown " + e.Args[1]
			}
		case "eval", "eval_ro":
			name = "eval (script text)"
		case "fcall", "fcall_ro": // a function of the store's library: named as its script
			if name = p.names[e.Args[1]]; name == "" {
				name = e.Args[1]
			}
		default:
			inner = 0
			continue
		}
		s := by[name]
		if s == nil {
			s = &ScriptRuns{Name: name}
			by[name] = s
		}
		s.Runs++
		calls[name] += inner
		inner = 0
	}
	for name, s := range by {
		s.CallsPerRun = float64(calls[name]) / float64(s.Runs)
		stats = append(stats, *s)
	}
	slices.SortFunc(stats, func(a, b ScriptRuns) int { return b.Runs - a.Runs })
	return stats, n
}

// cpu is the redis-server process's CPU time so far, seconds.
func (p *redisProbe) cpu(ctx context.Context) (float64, error) {
	info, err := p.c.Info(ctx, "cpu").Result()
	if err != nil {
		return 0, err
	}
	cpu, ok := redisinfo.CPU(info)
	if !ok {
		return 0, fmt.Errorf("INFO cpu has no used_cpu_user or used_cpu_sys: %q", info)
	}
	return cpu, nil
}

// commandstats reads INFO commandstats: name → calls, usec.
func (p *redisProbe) commandstats(ctx context.Context) (map[string]RedisStat, error) {
	info, err := p.c.Info(ctx, "commandstats").Result()
	if err != nil {
		return nil, err
	}
	return parseCommandstats(info), nil
}

// parseCommandstats reads INFO commandstats as the report shows it.
func parseCommandstats(info string) map[string]RedisStat {
	out := map[string]RedisStat{}
	for name, st := range redisinfo.Commandstats(info) {
		out[name] = RedisStat{Name: name, Calls: st.Calls, Usec: st.Usec}
	}
	return out
}

func (r *RedisReport) print(w io.Writer) {
	fmt.Fprintf(w, "  redis: %.3f s CPU for %d requests: %.1f µs CPU per request; scripts %.1f µs, MULTI/EXEC %.1f µs per request (commandstats)\n",
		r.CPUSeconds, r.Requests, r.CPUMicrosPerReq, r.ScriptMicrosPerRq, r.ExecMicrosPerRq)
	if len(r.Scripts) > 0 {
		fmt.Fprintf(w, "  redis script runs (SLOWLOG sample of the run's last %d commands):\n", r.Sampled)
		for _, s := range r.Scripts {
			fmt.Fprintf(w, "    %-20s %7d runs  %6.1f Redis calls per run\n", s.Name, s.Runs, s.CallsPerRun)
		}
	}
	fmt.Fprintf(w, "  redis commandstats over the run (a script's or transaction's commands counted in it too):\n")
	for i, s := range r.Commands {
		if i == 16 {
			fmt.Fprintf(w, "    … %d more\n", len(r.Commands)-i)
			break
		}
		fmt.Fprintf(w, "    %-20s %9d calls %10d µs  %8.2f µs/call\n", s.Name, s.Calls, s.Usec, s.UsecPerCall)
	}
}
