package store_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/internal/redistest"
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
	const debounce = time.Second
	for _, b := range redistest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			ctx := context.Background()
			s1, s2 := twoInstances(t, b, store.Config{PresenceTTL: time.Minute, SessionPolicy: players.PolicyReplace,
				PresenceDebounce: debounce, WebhookOutboxLen: 100000})
			uid := "u-" + redistest.Prefix(t)
			follower := watchUser(t, s2, uid)
			lapsed := 0 // the janitor's session_lapsed: no lease lapses here
			sweep := func() {
				t.Helper()
				for shard := range 8 {
					rep, err := s1.Sweep(ctx, shard, "test", time.Millisecond)
					if err != nil {
						t.Fatal(err)
					}
					lapsed += rep["session_lapsed"]
				}
			}
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
			waitUntil(t, "online", func() bool { return len(published()) >= 1 })
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

			waitUntil(t, "mobile dropped after the window", func() bool { sweep(); return len(published()) >= 3 })
			if err := s1.Sessions().CloseSession(ctx, pc); err != nil {
				t.Fatal(err)
			}
			sweep()
			if st := status(); !st.Online {
				t.Errorf("the last session closed, within the window: %+v, want online", st)
			}
			waitUntil(t, "offline after the window", func() bool { sweep(); return len(published()) >= 4 })
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
			if lapsed != 0 {
				t.Errorf("the janitor reported %d session_lapsed, want 0: every session closed, none lapsed", lapsed)
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

// Only the platform whose last session closes is debounced: one whose
// lease lapsed (its instance died: the score stands in for the missed
// renewals) and which the close purges is dropped at once, as the sweep
// drops it, so the close shows the user on the closed platform alone; the
// closed one goes after the window.
func TestCloseDebouncesOnlyItsPlatform(t *testing.T) {
	for _, b := range redistest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
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
			if st := got[0]; !st.Online || !slices.Equal(st.Platforms, []string{"mobile"}) {
				t.Errorf("pc lapsed, mobile closed within the window: %+v, want online on mobile only", st)
			}
			if fs := statusFields(t, s, uid); !slices.Equal(fs, []string{"g:mobile", "p", "v"}) {
				t.Errorf("status fields %q, want mobile's deadline only", fs)
			}
			if hooks := outboxEvents(t, s); hooks["user_platforms_changed"][uid] != 2 || hooks["user_offline"][uid] != 0 {
				t.Errorf("webhook events %v, want mobile added, then pc dropped (two platform changes), no offline yet", hooks)
			}
		})
	}
}

// lapseSession makes ss's lease lapse, as its instance's death would: its
// score in the user's sessions goes to the past.
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
			return
		}
	}
	t.Fatalf("no session %+v", ss)
}
