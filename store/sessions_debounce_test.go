package store_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/internal/rediskeys"
	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/internal/wait"
	"github.com/realsync/realsync/players"
	"github.com/realsync/realsync/sse"
	"github.com/realsync/realsync/store"
)

// A user's status is debounced as the rooms' presence is (a tester's
// find: a phone reconnecting 300 ms after each of 10 connection resets
// sent its followers 20 offline/online events, where the room showed
// nothing). A phone whose only session closes and reopens within
// REALSYNC_PRESENCE_DEBOUNCE, ten times, on alternating instances, with
// the janitor sweeping meanwhile, is published online once and nothing
// else, and reads online; a platform that flaps while another is online
// changes nothing either. Once a platform stays closed past the window
// (the other's lease renewed meanwhile), the janitor's sweep drops it (user_platforms_changed), and the last one
// takes the user offline exactly once (user_offline), published and
// queued; the deadlines are gone then, the online index empty and the
// offline status kept with its version; the janitor reports no
// session_lapsed (its metric tells a dead instance's sessions).
func TestUserStatusFlapsAreDebounced(t *testing.T) {
	// 2 s: each close, sweep and reopen below, and the checks within the
	// window, must outlast a loaded machine's stalls
	const debounce = 2 * time.Second
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := context.Background()
		s1, s2 := twoInstances(t, b, store.Config{PresenceTTL: time.Minute, SessionPolicy: players.PolicyReplace,
			PresenceDebounce: debounce, WebhookOutboxLen: 100000})
		uid := "u-" + redistest.Prefix(t)
		follower := watchUser(t, s2, uid)
		reps := store.Report{} // the janitor's: no lease lapses here
		sweep := func() { t.Helper(); sweepAll(t, s1, reps) }
		published := func() []string { ss, _ := follower.snapshot(); return platformsOf(ss) }
		status := func() players.Status {
			t.Helper()
			got, err := s1.Sessions().Statuses(ctx, []string{uid})
			if err != nil {
				t.Fatal(err)
			}
			return got[0]
		}
		flap := func(platform string) sse.Session {
			t.Helper()
			var ss sse.Session
			for i := range 10 {
				on := []*store.Store{s1, s2}[i%2]
				ss = sse.Session{UserID: uid, Platform: platform, ID: fmt.Sprintf("%s.%d", platform, i)}
				if _, err := on.Sessions().OpenSession(ctx, ss, sse.Cursor{}, 100); err != nil {
					t.Fatal(err)
				}
				if i < 9 {
					if err := on.Sessions().CloseSession(ctx, ss); err != nil {
						t.Fatal(err)
					}
					sweep()
				}
			}
			return ss // the last one, open
		}

		mobile := flap("mobile")
		wait.Until(t, "online", func() bool { return len(published()) >= 1 })
		pc := flap("pc")
		if err := s2.Sessions().CloseSession(ctx, mobile); err != nil { // mobile leaves for good
			t.Fatal(err)
		}
		sweep()
		// pc's renewal keeps the user due at mobile's deadline, not at
		// pc's lease a minute on
		if lost, err := s1.Sessions().RenewSessions(ctx, []sse.Session{pc}); err != nil || len(lost) != 0 {
			t.Fatalf("renew: lost %v, %v", lost, err)
		}
		time.Sleep(100 * time.Millisecond) // a status published meanwhile would have come
		if got := published(); !slices.Equal(got, []string{"mobile", "pc,mobile"}) {
			t.Fatalf("published while flapping %q, want online on mobile, then pc added", got)
		}
		if st := status(); !st.Online || !slices.Equal(st.Platforms, []string{"pc", "mobile"}) {
			t.Errorf("within the window: %+v, want online on pc and mobile", st)
		}
		checkInvariants(t, s1)

		wait.Until(t, "mobile dropped after the window", func() bool { sweep(); return len(published()) >= 3 })
		if err := s1.Sessions().CloseSession(ctx, pc); err != nil {
			t.Fatal(err)
		}
		sweep()
		if st := status(); !st.Online {
			t.Errorf("the last session closed, within the window: %+v, want online", st)
		}
		wait.Until(t, "offline after the window", func() bool { sweep(); return len(published()) >= 4 })
		sweep()
		time.Sleep(100 * time.Millisecond)
		want := []string{"mobile", "pc,mobile", "pc", ""}
		if got := published(); !slices.Equal(got, want) {
			t.Fatalf("published %q, want %q", got, want)
		}
		ss, _ := follower.snapshot()
		if st := status(); st.Online || st.Version != ss[3].Version {
			t.Errorf("after the window: %+v, want offline at version %d", st, ss[3].Version)
		}
		hooks := outboxEvents(t, s1)
		if hooks["user_online"][uid] != 1 || hooks["user_platforms_changed"][uid] != 2 || hooks["user_offline"][uid] != 1 {
			t.Errorf("webhook events %v, want one online, two platform changes, one offline", hooks)
		}
		if n, _ := s1.Sessions().OnlineUsers(ctx); n != 0 {
			t.Errorf("online users %d, want 0", n)
		}
		if n := reps["session_lapsed"]; n != 0 {
			t.Errorf("the janitor reported %d session_lapsed, want 0: every session closed, none lapsed", n)
		}
		if fs := statusFields(t, s1, uid); !slices.Equal(fs, []string{"p", "v"}) {
			t.Errorf("status fields %q, want p and v only (the deadlines dropped)", fs)
		}
		if ttl := statusTTL(t, s1, uid); ttl < 29*24*time.Hour {
			t.Errorf("an offline status kept %s, want 30 days", ttl)
		}
		checkInvariants(t, s1)
	})
}

// statusFields lists the fields of uid's status record, sorted.
func statusFields(t *testing.T, s *store.Store, uid string) []string {
	t.Helper()
	ctx := context.Background()
	for shard := range 8 {
		k := s.Base().Tag(shard) + ":status:" + uid
		fs, err := s.Client().HKeys(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		if len(fs) > 0 {
			slices.Sort(fs)
			return fs
		}
	}
	return nil
}

// A session whose instance died is debounced as a closed one is (a
// tester's find: under REALSYNC_SESSION_POLICY reject-new a client may
// open a session of the platform only once the dead one lapsed, the 409's
// Retry-After sending it back at the lapse, and the janitor's sweep of
// the lapse raced it: followers saw the user offline, then online, in 3
// runs of 5). The sweep finding the lease lapsed counts it
// (session_lapsed) and keeps the platform shown for the debounce; a
// session of it opened meanwhile changes nothing: the user was published
// online once, nothing else, on either kind of change. A lapsed platform
// not back within the debounce is dropped at the first sweep after it,
// announced once (user_offline), and the lapse is counted once.
func TestLapsedSessionIsDebounced(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := context.Background()
		for _, c := range []struct {
			name     string
			debounce time.Duration
			back     bool // a session of the platform opens within the debounce
		}{{"back within the debounce", time.Minute, true}, {"not back", 300 * time.Millisecond, false}} {
			t.Run(c.name, func(t *testing.T) {
				dead, live := twoInstances(t, b, store.Config{PresenceTTL: time.Minute, SessionPolicy: players.PolicyRejectNew,
					PresenceDebounce: c.debounce, WebhookOutboxLen: 1000})
				uid := "u-" + redistest.Prefix(t)
				follower := watchUser(t, live, uid)
				published := func() []string { ss, _ := follower.snapshot(); return platformsOf(ss) }
				reps := store.Report{}
				sweep := func() { t.Helper(); sweepAll(t, live, reps) }
				pc := sse.Session{UserID: uid, Platform: "pc", ID: "pc.dead"}
				if _, err := dead.Sessions().OpenSession(ctx, pc, sse.Cursor{}, 0); err != nil {
					t.Fatal(err)
				}
				wait.Until(t, "online", func() bool { return len(published()) >= 1 })
				lapseSession(t, dead, pc)
				sweep()
				if fs := statusFields(t, live, uid); reps["session_lapsed"] != 1 || !slices.Equal(fs, []string{"g:pc", "p", "v"}) {
					t.Errorf("swept: %d session_lapsed, status fields %q; want 1, and pc's deadline", reps["session_lapsed"], fs)
				}
				if c.back {
					again := sse.Session{UserID: uid, Platform: "pc", ID: "pc.back"}
					if _, err := live.Sessions().OpenSession(ctx, again, sse.Cursor{}, 0); err != nil {
						t.Fatalf("reject-new after the lapse: %v", err)
					}
					sweep()
					time.Sleep(100 * time.Millisecond) // a status published meanwhile would have come
					if got := published(); !slices.Equal(got, []string{"pc"}) {
						t.Fatalf("published %q, want online on pc once: the lapse and the return changed nothing", got)
					}
					if fs := statusFields(t, live, uid); !slices.Equal(fs, []string{"p", "v"}) {
						t.Errorf("back: status fields %q, want the deadline dropped", fs)
					}
				} else {
					if got := published(); !slices.Equal(got, []string{"pc"}) {
						t.Fatalf("published %q within the debounce, want online on pc alone", got)
					}
					wait.Until(t, "offline after the debounce", func() bool { sweep(); return len(published()) >= 2 })
					sweep()
					time.Sleep(100 * time.Millisecond)
					if got := published(); !slices.Equal(got, []string{"pc", ""}) {
						t.Fatalf("published %q, want online on pc, then offline, once", got)
					}
					if n := reps["session_lapsed"]; n != 1 {
						t.Errorf("%d session_lapsed, want the one lapse counted once", n)
					}
					if n, _ := live.Sessions().OnlineUsers(ctx); n != 0 {
						t.Errorf("online users %d, want 0", n)
					}
				}
				want := map[string]int{"user_online": 1}
				if !c.back {
					want["user_offline"] = 1
				}
				hooks := outboxEvents(t, live)
				for _, ty := range []string{"user_online", "user_offline", "user_platforms_changed"} {
					if hooks[ty][uid] != want[ty] {
						t.Errorf("webhook events %v, want %v", hooks, want)
					}
				}
				checkInvariants(t, live)
			})
		}
	})
}

// An open refused (reject-new's SESSION_EXISTS; a stream cap's
// STREAM_LIMIT goes the same way) still settles the lapsed leases it
// purged (a reviewer's find): the platform they leave gets its deadline
// and the user its entry in the online index at it. It returned before,
// and the renewal of the user's other session then moved the entry past
// the lapsed platform, which stayed shown for as long as that session was
// renewed.
func TestRefusedOpenSettlesLapsedPlatforms(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := context.Background()
		dead, live := twoInstances(t, b, store.Config{PresenceTTL: time.Minute, SessionPolicy: players.PolicyRejectNew,
			PresenceDebounce: 300 * time.Millisecond})
		uid := "u-" + redistest.Prefix(t)
		pc := sse.Session{UserID: uid, Platform: "pc", ID: "pc.dead"}
		mobile := sse.Session{UserID: uid, Platform: "mobile", ID: "m.1"}
		if _, err := dead.Sessions().OpenSession(ctx, pc, sse.Cursor{}, 0); err != nil {
			t.Fatal(err)
		}
		if _, err := live.Sessions().OpenSession(ctx, mobile, sse.Cursor{}, 0); err != nil {
			t.Fatal(err)
		}
		lapseSession(t, dead, pc)
		_, err := live.Sessions().OpenSession(ctx, sse.Session{UserID: uid, Platform: "mobile", ID: "m.2"}, sse.Cursor{}, 0)
		if !errors.Is(err, players.ErrSessionExists) {
			t.Fatalf("a second mobile session: %v, want ErrSessionExists", err)
		}
		if fs := statusFields(t, live, uid); !slices.Equal(fs, []string{"g:pc", "p", "v"}) {
			t.Errorf("after the refusal: status fields %q, want pc's deadline", fs)
		}
		reps := store.Report{}
		wait.Until(t, "pc dropped after its debounce", func() bool {
			if lost, err := live.Sessions().RenewSessions(ctx, []sse.Session{mobile}); err != nil || len(lost) != 0 {
				t.Fatalf("renew: lost %v, %v", lost, err)
			}
			sweepAll(t, live, reps)
			got, err := live.Sessions().Statuses(ctx, []string{uid})
			if err != nil {
				t.Fatal(err)
			}
			return slices.Equal(got[0].Platforms, []string{"mobile"})
		})
	})
}

// A lapse the sweep finds late (no janitor ran for most of the linger the
// last lease gave the status record; here the record's expiry is cut to
// 1 s before the sweep, within the 2 s debounce: 200 ms once ran out
// during the sweep's script on a loaded machine's embedded store, whose
// clock, unlike Redis', runs on within a script, and the record was made
// anew without an expiry) keeps the record past the platform's deadline
// (a reviewer's find): the sweep after the deadline announces the offline
// once, and the lapse is counted once. Before, the record expired first,
// and the offline came through lapsed_online, counted as a second lapse.
func TestLapseFoundLateIsCountedOnce(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := context.Background()
		dead, live := twoInstances(t, b, store.Config{PresenceTTL: time.Minute, PresenceDebounce: 2 * time.Second,
			WebhookOutboxLen: 1000})
		uid := "u-" + redistest.Prefix(t)
		pc := sse.Session{UserID: uid, Platform: "pc", ID: "pc.dead"}
		if _, err := dead.Sessions().OpenSession(ctx, pc, sse.Cursor{}, 0); err != nil {
			t.Fatal(err)
		}
		lapseSession(t, dead, pc)
		if n, err := rediskeys.Scan(ctx, live.Client(), "*:status:"+uid); err != nil || len(n) != 1 {
			t.Fatalf("status keys %v, %v", n, err)
		} else if err := live.Client().PExpire(ctx, n[0], time.Second).Err(); err != nil {
			t.Fatal(err)
		}
		reps := store.Report{}
		sweepAll(t, live, reps)
		if ttl := statusTTL(t, live, uid); ttl < 10*time.Minute {
			t.Errorf("the record expires in %s once the sweep set the deadline, want past it by the linger (10 min)", ttl)
		}
		wait.Until(t, "offline after the debounce", func() bool {
			sweepAll(t, live, reps)
			got, err := live.Sessions().Statuses(ctx, []string{uid})
			if err != nil {
				t.Fatal(err)
			}
			return !got[0].Online
		})
		sweepAll(t, live, reps)
		if n := reps["session_lapsed"]; n != 1 {
			t.Errorf("%d session_lapsed for one lapse, want 1", n)
		}
		if hooks := outboxEvents(t, live); hooks["user_offline"][uid] != 1 {
			t.Errorf("webhook events %v, want one user_offline", hooks)
		}
	})
}

// A close debounces every platform it leaves without a session: its own,
// and one whose lease lapsed (its instance died) and which the close
// purges, as the sweep would; so the close changes nothing shown, and
// both go after the window.
func TestCloseDebouncesLapsedPlatformsToo(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := context.Background()
		s, _ := twoInstances(t, b, store.Config{PresenceTTL: time.Minute, SessionPolicy: players.PolicyReplace,
			PresenceDebounce: time.Minute, WebhookOutboxLen: 1000})
		uid := "u-" + redistest.Prefix(t)
		pc, mobile := sse.Session{UserID: uid, Platform: "pc", ID: "pc.1"}, sse.Session{UserID: uid, Platform: "mobile", ID: "m.1"}
		for _, ss := range []sse.Session{pc, mobile} {
			if _, err := s.Sessions().OpenSession(ctx, ss, sse.Cursor{}, 0); err != nil {
				t.Fatal(err)
			}
		}
		lapseSession(t, s, pc)
		if err := s.Sessions().CloseSession(ctx, mobile); err != nil {
			t.Fatal(err)
		}
		got, err := s.Sessions().Statuses(ctx, []string{uid})
		if err != nil {
			t.Fatal(err)
		}
		if st := got[0]; !st.Online || !slices.Equal(st.Platforms, []string{"pc", "mobile"}) {
			t.Errorf("pc lapsed, mobile closed within the window: %+v, want online on both", st)
		}
		if fs := statusFields(t, s, uid); !slices.Equal(fs, []string{"g:mobile", "g:pc", "p", "v"}) {
			t.Errorf("status fields %q, want both deadlines", fs)
		}
		if hooks := outboxEvents(t, s); hooks["user_platforms_changed"][uid] != 1 || hooks["user_offline"][uid] != 0 {
			t.Errorf("webhook events %v, want mobile added (one platform change), nothing since", hooks)
		}
	})
}

// lapseSession makes ss's lease lapse, as its instance's death would, a
// TTL on: its score in the user's sessions, and the user's in the
// shard's online index, go to the past.
func lapseSession(t *testing.T, s *store.Store, ss sse.Session) {
	t.Helper()
	ctx := context.Background()
	for shard := range 8 {
		k := s.Base().Tag(shard) + ":sess:" + ss.UserID
		n, err := s.Client().ZAddXX(ctx, k, redis.Z{Score: 1, Member: ss.Platform + "/" + ss.ID}).Result()
		if err != nil {
			t.Fatal(err)
		}
		if ok, _ := s.Client().ZScore(ctx, k, ss.Platform+"/"+ss.ID).Result(); n == 0 && ok == 1 {
			if err := s.Client().ZAddXX(ctx, s.Base().Tag(shard)+":online", redis.Z{Score: 1, Member: ss.UserID}).Err(); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	t.Fatalf("no session %+v", ss)
}
