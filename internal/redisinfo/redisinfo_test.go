package redisinfo

import "testing"

func TestCommandstatsAndCPU(t *testing.T) {
	info := "# CPU\r\nused_cpu_sys:1.50\r\nused_cpu_user:2.25\r\nused_cpu_sys_children:9\r\n" +
		"# Commandstats\r\ncmdstat_evalsha:calls=10,usec=250,usec_per_call=25.00,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_config|set:calls=1,usec=81,usec_per_call=81.00\r\n"
	got := Commandstats(info)
	if len(got) != 2 || got["evalsha"] != (Stat{10, 250}) || got["config|set"] != (Stat{1, 81}) {
		t.Fatalf("Commandstats = %+v", got)
	}
	if pc := got["evalsha"].Sub(Stat{4, 100}).PerCall(); pc != 25 {
		t.Fatalf("per call after Sub = %v, want 25", pc)
	}
	if (Stat{}).PerCall() != 0 {
		t.Fatal("PerCall of no calls")
	}
	if cpu, ok := CPU(info); !ok || cpu != 3.75 {
		t.Fatalf("CPU = %v, %v, want 3.75 (the children's time not counted)", cpu, ok)
	}
	if _, ok := CPU("# Server\r\n"); ok {
		t.Fatal("CPU of a reply without cpu fields")
	}
}
