package main

import (
	"testing"

	"github.com/redis/go-redis/v9"
)

func TestParseCommandstats(t *testing.T) {
	got := parseCommandstats("# Commandstats\r\ncmdstat_evalsha:calls=10,usec=250,usec_per_call=25.00,rejected_calls=0,failed_calls=0\r\ncmdstat_config|set:calls=1,usec=81,usec_per_call=81.00\r\n")
	if got["evalsha"] != (RedisStat{Name: "evalsha", Calls: 10, Usec: 250}) || got["config|set"].Calls != 1 || len(got) != 2 {
		t.Fatalf("got %+v", got)
	}
}

// A script's commands are logged before it, with no client: they count
// for it; a plain command in between resets the count. A function of the
// store's library counts as its script.
func TestAttributeScriptRuns(t *testing.T) {
	p := &redisProbe{names: map[string]string{"sha1": "room_join", "room_join_abc": "room_join"}}
	cmd := func(addr string, args ...string) redis.SlowLog { return redis.SlowLog{ClientAddr: addr, Args: args} }
	log := []redis.SlowLog{ // newest first, as SLOWLOG GET answers
		cmd("127.0.0.1:1", "fcall", "room_join_abc", "1"),
		cmd("?:0", "hset"),
		cmd("127.0.0.1:1", "hgetall", "k"),
		cmd("127.0.0.1:1", "evalsha", "sha1", "1"),
		cmd("?:0", "hset"),
		cmd("?:0", "hmget"),
		cmd("?:0", "time"),
		cmd("127.0.0.1:1", "config", "set"),
	}
	stats, n := p.attribute(log)
	if n != 7 || len(stats) != 1 || stats[0] != (ScriptRuns{Name: "room_join", Runs: 2, CallsPerRun: 2}) {
		t.Fatalf("got %+v, %d", stats, n)
	}
}
