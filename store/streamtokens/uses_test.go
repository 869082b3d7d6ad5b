package streamtokens_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/internal/rediskeys"
	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/internal/storetest"
	"github.com/realsync/realsync/store"
	"github.com/realsync/realsync/store/streamtokens"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// A token's use belongs to the opening that made it: that opening asking
// again (a reply lost and the call sent again) holds it still, another is
// refused and cannot release it; released by its own, the next opening
// takes it. A use is one key in its user's slot, kept until the time
// asked, and a release leaves none.
func TestUses(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := context.Background()
		prefix := redistest.Prefix(t)
		st := storetest.Open(t, store.Config{RedisURL: b.URL, ClusterAddrs: b.ClusterAddrs, Prefix: prefix, Shards: 4})
		u := streamtokens.New(st.Base())
		const keep = 30 * time.Second
		steps := []struct {
			name, op, opening string
			want              bool
		}{
			{"first", "use", "a", true},
			{"the same opening again", "use", "a", true},
			{"another", "use", "b", false},
			{"another's release", "release", "b", false},
			{"still held", "use", "b", false},
			{"its own release", "release", "a", false},
			{"taken anew", "use", "b", true},
		}
		for _, s := range steps {
			var got bool
			var err error
			if s.op == "use" {
				got, err = u.Use(ctx, "alice", "t1", s.opening, keep)
			} else {
				err = u.Release(ctx, "alice", "t1", s.opening)
			}
			if err != nil || got != s.want {
				t.Fatalf("%s: %s by %s = %v, %v; want %v", s.name, s.op, s.opening, got, err, s.want)
			}
		}
		keys, err := rediskeys.Scan(ctx, st.Client(), "*"+prefix+"*:stu:*")
		if err != nil || len(keys) != 1 {
			t.Fatalf("keys %v (%v), want the one use", keys, err)
		}
		if want := st.Base().Tag(st.Base().UserShard("alice")) + ":stu:t1"; keys[0] != want {
			t.Errorf("use kept in %s, want %s (the user's slot)", keys[0], want)
		}
		if ttl := st.Client().PTTL(ctx, keys[0]).Val(); ttl <= 25*time.Second || ttl > 30*time.Second {
			t.Errorf("use kept %v, want up to the 30 s asked", ttl)
		}
		if err := u.Release(ctx, "alice", "t1", "b"); err != nil {
			t.Fatal(err)
		}
		if keys, err := rediskeys.Scan(ctx, st.Client(), "*"+prefix+"*:stu:*"); err != nil || len(keys) != 0 {
			t.Errorf("keys %v (%v) after the release, want none", keys, err)
		}
	})
}

// Openings of one token at once: one holds its use, the others are
// refused, on every backend; and with the scripts flushed from Redis
// (EVALSHA answered NOSCRIPT, the script sent whole), the same.
func TestUsesAtOnce(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := context.Background()
		st := storetest.Open(t, store.Config{RedisURL: b.URL, ClusterAddrs: b.ClusterAddrs, Prefix: redistest.Prefix(t), Shards: 4})
		u := streamtokens.New(st.Base())
		for round := range 2 {
			if round == 1 && b.Name != "embedded" {
				var err error
				if c, ok := st.Client().(*redis.ClusterClient); ok {
					err = c.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error { return n.ScriptFlush(ctx).Err() })
				} else {
					err = st.Client().ScriptFlush(ctx).Err()
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			token := fmt.Sprintf("t%d", round)
			var held sync.Map
			var wg sync.WaitGroup
			for i := range 16 {
				wg.Go(func() {
					ok, err := u.Use(ctx, "bob", token, fmt.Sprint(i), time.Minute)
					if err != nil {
						t.Error(err)
					}
					if ok {
						held.Store(i, true)
					}
				})
			}
			wg.Wait()
			n := 0
			held.Range(func(any, any) bool { n++; return true })
			if n != 1 {
				t.Errorf("round %d: %d of 16 openings at once hold the use, want 1", round, n)
			}
		}
	})
}
