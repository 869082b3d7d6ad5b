package invariants

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// snapshot is the keys the room checks read, each shard's read at one
// instant (shardRead): read one by one, a live instance's janitor moved a
// room between two reads (CI runs: a room's log read a version after its
// hash, "log entry 0 has id 1-0"; its presence entries after its due
// time). A key gone by then is absent from it.
type snapshot struct {
	hash   map[string]map[string]string
	zset   map[string][]redis.Z
	score  map[string]map[string]float64
	stream map[string][]redis.XMessage
	there  map[string]bool
	asked  map[string]bool // every key read (wanted)
}

// shardRead reads its keys at once, each by its kind in ARGV: "h" a
// hash, "z" a sorted set with its scores, "s" a stream, "x" whether it
// exists; 0 for a key gone. A script of reads alone: a MULTI is refused
// while Redis is out of memory (TestFullRedisIsUnavailable).
var shardRead = redis.NewScript(`local out = {}
for i, k in ipairs(KEYS) do
  local kind = ARGV[i]
  if redis.call('EXISTS', k) == 0 then out[i] = 0
  elseif kind == 'h' then out[i] = redis.call('HGETALL', k)
  elseif kind == 'z' then out[i] = redis.call('ZRANGE', k, 0, -1, 'WITHSCORES')
  elseif kind == 's' then out[i] = redis.call('XRANGE', k, '-', '+')
  else out[i] = 1 end
end
return out`)

var (
	shardKeyRe = regexp.MustCompile(`^\{([^}]+)\}:(?:users|codes|stats|ckeys|presence:due|rooms:due|idx:.+|room:[A-Za-z0-9]+(?::(conn|presence|messages|state|players|users|bans|reserved|kicked|log|mkeys|mkeyt))?)$`)
	zsetKeyRe  = regexp.MustCompile(`:(?:presence:due|rooms:due|idx:.+)$`)
)

// kind is how shardRead reads a key of a shard, "" for a key it does not.
func kind(k string) string {
	m := shardKeyRe.FindStringSubmatch(k)
	switch {
	case m == nil:
		return ""
	case m[2] == "log":
		return "s"
	case m[2] == "presence" || m[2] == "" && zsetKeyRe.MatchString(k):
		return "z"
	case m[2] == "" || m[2] == "conn" || m[2] == "state" || m[2] == "players" || m[2] == "users":
		return "h"
	}
	return "x"
}

// wanted is keys and every key the room checks look up beside them: the
// shard's own keys, and each room's hash, parts and indexes, which a
// change may make after the key scan (an index or the invite codes are
// deleted when emptied, and made again by the next entry). The rooms are
// those scanned and those each shard's schedule (rooms:due, written with
// the room) lists, read first, apart: a room listed then whose hash the
// snapshot lacks is gone (a ghost), one the snapshot's schedule lists
// beside them was made since (late). A room's mode and region never
// change: they are read first too.
func (ch *checker) wanted(ctx context.Context, keys []string) ([]string, error) {
	set, tags := map[string]bool{}, map[string]bool{}
	for _, k := range keys {
		set[k] = true
		if kind(k) != "" {
			tags[k[:strings.IndexByte(k, '}')+1]] = true
		}
	}
	scheduled := map[string]*redis.StringSliceCmd{}
	if _, err := ch.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for tag := range tags {
			scheduled[tag] = p.ZRange(ctx, tag+":rooms:due", 0, -1)
		}
		return nil
	}); err != nil {
		return nil, err
	}
	for tag, c := range scheduled {
		for _, key := range []string{"users", "codes", "stats", "ckeys", "presence:due", "rooms:due"} {
			set[tag+":"+key] = true
		}
		for _, id := range c.Val() {
			set[tag+":room:"+id] = true
		}
	}
	var found []string
	for k := range set {
		if roomKeyRe.MatchString(k) {
			found = append(found, k)
		}
	}
	modes := make([]*redis.SliceCmd, len(found))
	if _, err := ch.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, k := range found {
			modes[i] = p.HMGet(ctx, k, "m", "r")
		}
		return nil
	}); err != nil {
		return nil, err
	}
	for i, k := range found {
		tag := k[1:strings.IndexByte(k, '}')]
		for _, part := range []string{":players", ":users", ":state", ":log", ":conn", ":presence"} {
			set[k+part] = true
		}
		v := modes[i].Val()
		m, _ := v[0].(string)
		r, _ := v[1].(string)
		if m == "" {
			continue // gone
		}
		for _, st := range []string{"waiting", "playing", "finished", "joinable", "fill"} {
			for _, ik := range indexKeys(tag, st, m, r) {
				set[ik] = true
			}
		}
	}
	ch.asked = set
	return slices.Sorted(maps.Keys(set)), nil
}

// read takes the snapshot of keys and those the room checks look up
// beside them (wanted), shard by shard.
func (ch *checker) read(ctx context.Context, keys []string) error {
	ch.snapshot = snapshot{hash: map[string]map[string]string{}, zset: map[string][]redis.Z{},
		score: map[string]map[string]float64{}, stream: map[string][]redis.XMessage{}, there: map[string]bool{}}
	keys, err := ch.wanted(ctx, keys)
	if err != nil {
		return err
	}
	byTag := map[string][]string{}
	for _, k := range keys {
		if kind(k) != "" {
			tag := k[:strings.IndexByte(k, '}')+1]
			byTag[tag] = append(byTag[tag], k)
		}
	}
	for _, ks := range byTag {
		kinds := make([]any, len(ks))
		for i, k := range ks {
			kinds[i] = kind(k)
		}
		res, err := shardRead.Run(ctx, ch.c, ks, kinds...).Slice()
		if err != nil {
			return err
		}
		for i, k := range ks {
			if n, ok := res[i].(int64); ok && n == 0 {
				continue
			}
			ch.there[k] = true
			switch kinds[i] {
			case "h":
				f := strs(res[i])
				h := make(map[string]string, len(f)/2)
				for j := 0; j+1 < len(f); j += 2 {
					h[f[j]] = f[j+1]
				}
				ch.hash[k] = h
			case "z":
				f := strs(res[i])
				ch.score[k] = map[string]float64{}
				for j := 0; j+1 < len(f); j += 2 {
					s, err := strconv.ParseFloat(f[j+1], 64)
					if err != nil {
						return fmt.Errorf("%s: score %q of %s", k, f[j+1], f[j])
					}
					ch.zset[k] = append(ch.zset[k], redis.Z{Member: f[j], Score: s})
					ch.score[k][f[j]] = s
				}
			case "s":
				entries, _ := res[i].([]any)
				for _, e := range entries {
					pair, _ := e.([]any)
					if len(pair) != 2 {
						return fmt.Errorf("%s: entry %v", k, e)
					}
					id, _ := pair[0].(string)
					f := strs(pair[1])
					values := make(map[string]any, len(f)/2)
					for j := 0; j+1 < len(f); j += 2 {
						values[f[j]] = f[j+1]
					}
					ch.stream[k] = append(ch.stream[k], redis.XMessage{ID: id, Values: values})
				}
			}
		}
	}
	return nil
}

// late reports a room the snapshot's schedule of every room of its shard
// (rooms:due, written with the room) holds but whose hash the snapshot
// did not ask for (wanted): made after the schedule was first read. What
// names it is not checked against it. A room asked for and absent is gone
// (a reviewer's find: a schedule's stale entry hid a ghost room, its index
// entries and its shard's stats).
func (ch *checker) late(tag, id string) bool {
	_, scheduled := ch.score["{"+tag+"}:rooms:due"][id]
	return scheduled && !ch.asked["{"+tag+"}:room:"+id]
}

// madeLate reports a room of the shard tag made after the key scan (late):
// the shard's stats count it.
func (ch *checker) madeLate(tag string) bool {
	for _, z := range ch.zset["{"+tag+"}:rooms:due"] {
		if ch.late(tag, z.Member.(string)) {
			return true
		}
	}
	return false
}
