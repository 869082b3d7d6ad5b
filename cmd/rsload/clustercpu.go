package main

import (
	"context"
	"fmt"
	"io"
	"strings"
)

// Per-master figures of a Redis Cluster run (-redis-cluster): each
// master's own used_cpu_user + used_cpu_sys and script calls (EVALSHA,
// EVAL, FCALL from INFO commandstats) over the run, and its share of the
// masters' CPU. How evenly one (mode, region)'s load spreads over the
// masters bounds what the Cluster carries when each master has a core of
// its own: the busiest master saturates first, so the pair's throughput is
// at most 1/(busiest share) times one master's.

// MasterStat is one master's account of a run.
type MasterStat struct {
	Addr        string  `json:"addr"`
	CPUSeconds  float64 `json:"cpuSeconds"`
	Share       float64 `json:"share"` // of the masters' CPU seconds
	ScriptCalls int64   `json:"scriptCalls"`
	ScriptUsec  int64   `json:"scriptUsec"`
}

// ClusterReport is the masters' account of a run.
type ClusterReport struct {
	Requests          int          `json:"requests"`
	CPUSeconds        float64      `json:"cpuSeconds"` // all masters
	CPUMicrosPerReq   float64      `json:"cpuMicrosPerRequest"`
	ScriptMicrosPerRq float64      `json:"scriptMicrosPerRequest"`
	BusiestShare      float64      `json:"busiestShare"`
	Masters           []MasterStat `json:"masters"`
}

// clusterProbe reads the figures of every master named in -redis-cluster.
type clusterProbe struct {
	addrs  []string
	probes []*redisProbe
}

func newClusterProbe(addrs string) (*clusterProbe, error) {
	p := &clusterProbe{}
	for _, a := range strings.Split(addrs, ",") {
		if a = strings.TrimSpace(a); a == "" {
			continue
		}
		r, err := newRedisProbe("redis://" + a)
		if err != nil {
			p.Close()
			return nil, fmt.Errorf("-redis-cluster: %w", err)
		}
		p.addrs, p.probes = append(p.addrs, a), append(p.probes, r)
	}
	if len(p.probes) == 0 {
		return nil, fmt.Errorf("-redis-cluster: no address")
	}
	return p, nil
}

func (p *clusterProbe) Close() {
	for _, r := range p.probes {
		r.Close()
	}
}

func (p *clusterProbe) start(ctx context.Context) error {
	for _, r := range p.probes {
		if err := r.start(ctx); err != nil {
			return fmt.Errorf("-redis-cluster: %w", err)
		}
	}
	return nil
}

var scriptCommands = []string{"evalsha", "eval", "fcall", "evalsha_ro", "eval_ro", "fcall_ro"}

// stop reads every master again and reports the differences.
func (p *clusterProbe) stop(ctx context.Context, requests int) (*ClusterReport, error) {
	rep := &ClusterReport{Requests: requests}
	var usec int64
	for i, r := range p.probes {
		cpu, err := r.cpu(ctx)
		if err != nil {
			return nil, fmt.Errorf("-redis-cluster: %w", err)
		}
		cmds, err := r.commandstats(ctx)
		if err != nil {
			return nil, fmt.Errorf("-redis-cluster: %w", err)
		}
		m := MasterStat{Addr: p.addrs[i], CPUSeconds: cpu - r.cpu0}
		for _, n := range scriptCommands {
			m.ScriptCalls += cmds[n].Calls - r.cmds0[n].Calls
			m.ScriptUsec += cmds[n].Usec - r.cmds0[n].Usec
		}
		usec += m.ScriptUsec
		rep.CPUSeconds += m.CPUSeconds
		rep.Masters = append(rep.Masters, m)
	}
	for i := range rep.Masters {
		if rep.CPUSeconds > 0 {
			rep.Masters[i].Share = rep.Masters[i].CPUSeconds / rep.CPUSeconds
		}
		rep.BusiestShare = max(rep.BusiestShare, rep.Masters[i].Share)
	}
	if requests > 0 {
		rep.CPUMicrosPerReq = rep.CPUSeconds * 1e6 / float64(requests)
		rep.ScriptMicrosPerRq = float64(usec) / float64(requests)
	}
	return rep, nil
}

func (r *ClusterReport) print(w io.Writer) {
	fmt.Fprintf(w, "  cluster    %d masters: %.3f s CPU, %.1f µs CPU and %.1f µs in scripts per request; busiest master %.0f%% (bound: %.2f× one master)\n",
		len(r.Masters), r.CPUSeconds, r.CPUMicrosPerReq, r.ScriptMicrosPerRq, 100*r.BusiestShare, 1/max(r.BusiestShare, 1e-9))
	for _, m := range r.Masters {
		fmt.Fprintf(w, "    %-21s %.3f s CPU (%4.1f%%), %d script calls, %d µs in scripts\n", m.Addr, m.CPUSeconds, 100*m.Share, m.ScriptCalls, m.ScriptUsec)
	}
}
