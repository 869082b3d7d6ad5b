package ratelimit_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/internal/limits"
	"github.com/realsync/realsync/internal/rediskeys"
	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/internal/storetest"
	"github.com/realsync/realsync/store"
	"github.com/realsync/realsync/store/ratelimit"
)

func TestMain(m *testing.M) { redistest.Main(m) }

const shards = 8

// room is a room id of shard 3, as the store issues them.
const room = "03abcdefghijklmn"

type backend struct {
	lim    *ratelimit.Limiter
	client redis.UniversalClient
	prefix string
	st     *store.Store
}

// eachBackend runs f on standalone, Cluster and the embedded store, each
// with a key prefix of its own; the client is the store's own, with its
// production settings.
func eachBackend(t *testing.T, f func(t *testing.T, b backend)) {
	for _, rb := range redistest.Backends(t) {
		t.Run(rb.Name, func(t *testing.T) {
			prefix := redistest.Prefix(t)
			st := storetest.Open(t, store.Config{RedisURL: rb.URL, ClusterAddrs: rb.ClusterAddrs, Prefix: prefix, Shards: shards})
			lim := ratelimit.New(ratelimit.Config{Client: st.Client(), Prefix: prefix,
				RoomTag: st.RoomTag})
			f(t, backend{lim, st.Client(), prefix, st})
		})
	}
}

func (b backend) do(t *testing.T, mode limits.Mode, checks ...limits.Check) []limits.Decision {
	t.Helper()
	d, err := b.lim.Do(context.Background(), mode, checks)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// rlKeys are the limiter's keys of the test's prefix.
func (b backend) rlKeys(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, pat := range []string{b.prefix + ":rl:*", "{" + b.prefix + ":*}:rl:*"} {
		ks, err := rediskeys.Scan(context.Background(), b.client, pat)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ks...)
	}
	return out
}

func user(name string, l limits.Limit) limits.Check {
	return limits.Check{Name: "create", Scope: limits.User, Subject: name, Limit: l}
}

var slow = limits.Limit{Rate: 1, Period: time.Hour, Burst: 5} // nothing drains during a test

// A burst is allowed, the next request refused with the wait of one
// interval; remaining counts down; a refused request counts nothing.
func TestBurstThenRefused(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		for i := range 5 {
			d := b.do(t, limits.Take, user("alice", slow))[0]
			if !d.Allowed || d.Remaining != 4-i {
				t.Fatalf("request %d: %+v, want allowed with %d remaining", i+1, d, 4-i)
			}
		}
		for range 3 {
			d := b.do(t, limits.Take, user("alice", slow))[0]
			if d.Allowed || d.Remaining != 0 {
				t.Fatalf("6th request: %+v, want refused", d)
			}
			// the next slot opens one interval after the first request
			if d.Retry <= 59*time.Minute || d.Retry > time.Hour {
				t.Fatalf("retry after %v, want about 1h", d.Retry)
			}
			if d.Reset <= 4*time.Hour+59*time.Minute || d.Reset > 5*time.Hour {
				t.Fatalf("reset after %v, want about 5h", d.Reset)
			}
		}
		// other users and scopes have counters of their own
		if d := b.do(t, limits.Take, user("bob", slow), limits.Check{Name: "create", Scope: limits.IP, Subject: "10.0.0.1", Limit: slow}); !d[0].Allowed || !d[1].Allowed {
			t.Fatalf("bob and the address were limited by alice: %+v", d)
		}
	})
}

// A counter's key names its limit's settings: a limit raised since (a
// restart with other REALSYNC_RATE_LIMITS) starts a counter of its own,
// where the old TAT read against the new rate refused a client for what
// the old limit had left to drain (an abuse tester raised the guests' 60
// an hour to 100 a minute after 55 guests: refused with Retry-After
// 3 297 s); and instances of two settings at once (a rolling change, a
// canary) each keep their own, where a first fix (the old TAT clamped to
// a full burst of the new limit) let a laxer instance's every check
// reset the stricter one's counter (a reviewer's test: the strict
// instance, 5 an hour, allowed 30 in a second).
func TestChangedLimitKeepsACounterOfItsOwn(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		hourly := limits.Limit{Rate: 60, Period: time.Hour, Burst: 60}
		for i := range 55 {
			if d := b.do(t, limits.Take, user("nat", hourly))[0]; !d.Allowed {
				t.Fatalf("request %d of the old limit refused: %+v", i+1, d)
			}
		}
		raised := limits.Limit{Rate: 100, Period: time.Minute, Burst: 100}
		if d := b.do(t, limits.Take, user("nat", raised))[0]; !d.Allowed || d.Remaining != 99 {
			t.Fatalf("under the raised limit: %+v, want allowed with 99 left", d)
		}
		strict := limits.Limit{Rate: 5, Period: time.Hour, Burst: 5}
		lax := limits.Limit{Rate: 100, Period: time.Minute, Burst: 100}
		allowed := 0
		for range 30 {
			b.do(t, limits.Take, user("mallory", lax))
			if d := b.do(t, limits.Take, user("mallory", strict))[0]; d.Allowed {
				allowed++
			}
		}
		if allowed != strict.Burst {
			t.Fatalf("the strict setting allowed %d of 30 beside a laxer one, want its burst, %d", allowed, strict.Burst)
		}
	})
}

// Checks in one call are independent: a refused one does not stop the
// others being counted, and each gets its own decision.
func TestChecksIndependent(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		one := limits.Limit{Rate: 1, Period: time.Hour, Burst: 1}
		b.do(t, limits.Take, user("alice", one))
		ip := limits.Check{Name: "create", Scope: limits.IP, Subject: "2001:db8::", Limit: limits.Limit{Rate: 1, Period: time.Hour, Burst: 2}}
		d := b.do(t, limits.Take, user("alice", one), ip)
		if d[0].Allowed || !d[1].Allowed || d[1].Remaining != 1 {
			t.Fatalf("decisions %+v, want alice refused and the address allowed with 1 left", d)
		}
		if d := b.do(t, limits.Peek, ip)[0]; !d.Allowed || d.Remaining != 0 {
			t.Fatalf("address after one request: %+v, want one left", d)
		}
	})
}

// Peek counts nothing; Give hands a counted request back, never more than
// were counted.
func TestPeekAndGive(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		two := limits.Limit{Rate: 1, Period: time.Hour, Burst: 2}
		for range 5 {
			if d := b.do(t, limits.Peek, user("alice", two))[0]; !d.Allowed || d.Remaining != 1 {
				t.Fatalf("peek: %+v", d)
			}
		}
		if n := len(b.rlKeys(t)); n != 0 {
			t.Fatalf("peek left %d keys", n)
		}
		b.do(t, limits.Take, user("alice", two))
		b.do(t, limits.Take, user("alice", two))
		if d := b.do(t, limits.Peek, user("alice", two))[0]; d.Allowed {
			t.Fatalf("peek after the burst: %+v, want refused", d)
		}
		b.do(t, limits.Give, user("alice", two))
		if d := b.do(t, limits.Take, user("alice", two))[0]; !d.Allowed {
			t.Fatalf("take after a give: %+v, want allowed", d)
		}
		for range 5 {
			b.do(t, limits.Give, user("alice", two))
		}
		// gives beyond what was taken leave the counter idle, not in credit
		for i := range 3 {
			if d := b.do(t, limits.Take, user("alice", two))[0]; d.Allowed != (i < 2) {
				t.Fatalf("take %d after many gives: %+v", i+1, d)
			}
		}
	})
}

// A room check with a member is all or nothing on both counters: the
// member's share is half the room's; a member refused by its share uses up
// nothing of the room's budget, so another member still gets the rest.
func TestRoomAndMemberShare(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		lim := limits.Limit{Rate: 1, Period: time.Hour, Burst: 4}
		msg := func(member string) limits.Check {
			return limits.Check{Name: "messages", Scope: limits.Room, Subject: room, Limit: lim, Member: member}
		}
		var allowed int
		for range 10 {
			if b.do(t, limits.Take, msg("alice"))[0].Allowed {
				allowed++
			}
		}
		if allowed != 2 {
			t.Fatalf("alice got %d of 10, want her share 2", allowed)
		}
		allowed = 0
		for range 10 {
			if b.do(t, limits.Take, msg("bob"))[0].Allowed {
				allowed++
			}
		}
		if allowed != 2 {
			t.Fatalf("bob got %d of 10, want 2: alice's refused requests must not use the room's budget", allowed)
		}
		if d := b.do(t, limits.Take, msg("carol"))[0]; d.Allowed {
			t.Fatalf("carol: %+v, want refused: the room's 4 are used", d)
		}
		// the room's keys are in the room's slot
		tag, _ := b.st.RoomTag(room)
		for _, k := range b.rlKeys(t) {
			if !strings.HasPrefix(k, tag) {
				t.Errorf("key %q outside the room's tag %s", k, tag)
			}
		}
		// an id the deployment never issued has no counter
		bogus := limits.Check{Name: "messages", Scope: limits.Room, Subject: "zz", Limit: lim}
		if d := b.do(t, limits.Take, bogus)[0]; !d.Allowed {
			t.Fatalf("unknown room: %+v", d)
		}
	})
}

// N clients racing on one counter on two connections pools get exactly the
// burst between them.
func TestConcurrentExact(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		lim := limits.Limit{Rate: 1, Period: time.Hour, Burst: 7}
		var mu sync.Mutex
		allowed := 0
		var wg sync.WaitGroup
		for range 40 {
			wg.Go(func() {
				d, err := b.lim.Do(context.Background(), limits.Take, []limits.Check{user("racer", lim)})
				if err != nil {
					t.Error(err)
					return
				}
				if d[0].Allowed {
					mu.Lock()
					allowed++
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if allowed != 7 {
			t.Fatalf("%d allowed of 40, want 7", allowed)
		}
	})
}

// Every counter expires once drained: the keys appear with a burst and are
// gone once it has drained (bounded wait, no timing assertion).
func TestKeysExpire(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		// drains in 2 s: long enough that no key expires between the burst
		// and the reads below on a loaded machine (200 ms did)
		fast := limits.Limit{Rate: 2, Period: time.Second, Burst: 4}
		if n := len(b.rlKeys(t)); n != 0 {
			t.Fatalf("%d keys before", n)
		}
		for i := range 10 {
			b.do(t, limits.Take, user(fmt.Sprint("u", i%3), fast), limits.Check{Name: "read", Scope: limits.IP, Subject: "192.0.2.1", Limit: fast},
				limits.Check{Name: "patches", Scope: limits.Room, Subject: room, Member: "u", Limit: fast})
		}
		if n := len(b.rlKeys(t)); n != 6 {
			t.Fatalf("%d keys after the burst (%v), want 6: 3 users, 1 address, room and member", n, b.rlKeys(t))
		}
		for _, k := range b.rlKeys(t) {
			var ttl time.Duration
			if c, ok := b.client.(*redis.ClusterClient); ok {
				ttl = c.PTTL(context.Background(), k).Val()
			} else {
				ttl = b.client.PTTL(context.Background(), k).Val()
			}
			if ttl <= 0 || ttl > 2100*time.Millisecond {
				t.Errorf("%s: TTL %v, want (0, 2.1s]", k, ttl)
			}
		}
		deadline := time.Now().Add(10 * time.Second)
		for len(b.rlKeys(t)) > 0 {
			if time.Now().After(deadline) {
				t.Fatalf("keys left behind: %v", b.rlKeys(t))
			}
			time.Sleep(50 * time.Millisecond)
		}
		// drained: the whole burst is back
		if d := b.do(t, limits.Take, user("u0", fast))[0]; !d.Allowed || d.Remaining != 3 {
			t.Fatalf("after draining: %+v", d)
		}
	})
}

// After SCRIPT FLUSH the limiter loads the script again and counts once.
func TestScriptFlush(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		b.do(t, limits.Take, user("alice", slow))
		ctx := context.Background()
		if c, ok := b.client.(*redis.ClusterClient); ok {
			c.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error { return n.ScriptFlush(ctx).Err() })
		} else if err := b.client.ScriptFlush(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		ip := limits.Check{Name: "create", Scope: limits.IP, Subject: "192.0.2.9", Limit: slow}
		d := b.do(t, limits.Take, user("alice", slow), ip)
		if !d[0].Allowed || d[0].Remaining != 3 || !d[1].Allowed || d[1].Remaining != 4 {
			t.Fatalf("after SCRIPT FLUSH: %+v, want alice's 2nd (3 left) and the address' 1st (4 left)", d)
		}
	})
}

// A zero limit is no limit and no key.
func TestZeroLimit(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		for range 3 {
			if d := b.do(t, limits.Take, user("alice", limits.Limit{}))[0]; !d.Allowed {
				t.Fatal("a zero limit refused")
			}
		}
		if n := len(b.rlKeys(t)); n != 0 {
			t.Fatalf("%d keys", n)
		}
	})
}
