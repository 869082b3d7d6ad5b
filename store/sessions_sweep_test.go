package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/realsync/realsync/internal/rediskeys"
	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/internal/wait"
	"github.com/realsync/realsync/players"
	"github.com/realsync/realsync/sse"
	"github.com/realsync/realsync/store"
)

// openSessions opens one session of each of n users ("<prefix>-<i>", pc)
// through s, 16 at a time, and returns them.
func openSessions(tb testing.TB, s *store.Store, prefix string, n int) []sse.Session {
	tb.Helper()
	ss := make([]sse.Session, n)
	for i := range ss {
		ss[i] = sse.Session{UserID: fmt.Sprintf("%s-%d", prefix, i), Platform: "pc", ID: fmt.Sprintf("dead.%d", i)}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w := range 16 {
		wg.Go(func() {
			for i := w; i < n; i += 16 {
				if _, err := s.Sessions().OpenSession(context.Background(), ss[i], sse.Cursor{}, 0); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		tb.Fatal(err)
	}
	return ss
}

// outboxEvents reads the webhook events of every shard's outbox (8
// shards), by type and user.
func outboxEvents(tb testing.TB, s *store.Store) map[string]map[string]int {
	tb.Helper()
	out := map[string]map[string]int{}
	for shard := range 8 {
		entries, err := s.Client().XRange(context.Background(), s.Base().Tag(shard)+":webhooks", "-", "+").Result()
		if err != nil {
			tb.Fatal(err)
		}
		for _, e := range entries {
			var ev struct {
				Type   string `json:"type"`
				UserID string `json:"userId"`
			}
			if err := json.Unmarshal([]byte(e.Values["d"].(string)), &ev); err != nil {
				tb.Fatal(err)
			}
			if out[ev.Type] == nil {
				out[ev.Type] = map[string]int{}
			}
			out[ev.Type][ev.UserID]++
		}
	}
	return out
}

// A dead instance that held many sessions (3 000 users) takes them all
// offline in the janitor's first pass over the shards after the TTL (the
// documented bound: the TTL plus a janitor interval), however many users
// a shard holds: each is announced offline once (one user_offline
// webhook), at a version above its online one, and the users who came back
// on another instance meanwhile stay online, unannounced.
func TestDeadInstanceSessionsOfflineInOnePass(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := context.Background()
		// longer than the 75 openings below take on a loaded machine
		// (1 s was not, once under CI's load: their first leases lapsed
		// before the first renewal)
		ttl := 2 * time.Second
		if b.Name == "embedded" { // a shard's visit there may take most of a second
			ttl = 3 * time.Second
		}
		dead, live := twoInstances(t, b, store.Config{PresenceTTL: ttl, SessionPolicy: players.PolicyReplace,
			WebhookOutboxLen: 100000})
		ss, uids := openDeadSessions(t, dead, b, 3000)
		users := len(ss)
		before, err := live.Sessions().Statuses(ctx, uids)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(ttl + 100*time.Millisecond) // no renewal: every lease lapses
		back := map[string]bool{}
		var again []sse.Session
		for i := 0; i < users; i += 40 { // these come back on the live instance
			x := sse.Session{UserID: ss[i].UserID, Platform: "web", ID: "back"}
			if _, err := live.Sessions().OpenSession(ctx, x, sse.Cursor{}, 0); err != nil {
				t.Fatal(err)
			}
			back[x.UserID], again = true, append(again, x)
		}
		// one janitor pass: every shard once
		lapsed := 0
		for shard := range 8 {
			// the live instance renews the leases of those who came
			// back, as its hub does (here before each visit: a loaded
			// machine may stall longer than their TTL between two)
			if lost, err := live.Sessions().RenewSessions(ctx, again); err != nil || len(lost) > 0 {
				t.Fatalf("renewal: lost %v, %v", lost, err)
			}
			rep, err := live.Sweep(ctx, shard, "janitor", time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			lapsed += rep["session_lapsed"]
		}
		// the users who came back changed platforms (pc → web) by
		// their open, not by the sweep
		if lapsed != users-len(back) {
			t.Errorf("the pass changed %d users' status, want %d", lapsed, users-len(back))
		}
		if n, _ := live.Sessions().OnlineUsers(ctx); n != int64(len(back)) {
			t.Errorf("after one janitor pass past the TTL: %d users online, want %d (those who came back)", n, len(back))
		}
		sts, err := live.Sessions().Statuses(ctx, uids)
		if err != nil {
			t.Fatal(err)
		}
		for i, st := range sts {
			if st.Online != back[st.UserID] || !before[i].Online || st.Version <= before[i].Version {
				t.Fatalf("after one pass: %+v, online want %v, after %+v", st, back[st.UserID], before[i])
			}
		}
		evs := outboxEvents(t, live)
		for _, uid := range uids {
			want := 1
			if back[uid] {
				want = 0
			}
			if got := evs["user_offline"][uid]; got != want {
				t.Fatalf("user %s: %d user_offline webhooks, want %d", uid, got, want)
			}
		}
	})
}

// Sweeps that race (four at once, on two instances, each over every
// shard: the janitor's lease would keep all but one out) announce each
// lapsed user offline exactly once; from an empty script cache too (the
// EVAL fallback).
func TestSessionsSweepsRaceAnnounceOnce(t *testing.T) {
	const ttl = time.Second
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := context.Background()
		s1, s2 := twoInstances(t, b, store.Config{PresenceTTL: ttl, SessionPolicy: players.PolicyReplace,
			WebhookOutboxLen: 100000})
		_, uids := openDeadSessions(t, s1, b, 1500)
		time.Sleep(ttl + 100*time.Millisecond)
		if b.Name != "embedded" {
			flushScripts(t, s1)
		}
		var changed atomic.Int64
		var wg sync.WaitGroup
		for _, s := range []*store.Store{s1, s2, s1, s2} {
			wg.Go(func() {
				for shard := range 8 {
					n, err := s.Sessions().Sweep(ctx, shard, time.Now().Add(time.Minute))
					if err != nil {
						t.Error(err)
					}
					changed.Add(int64(n))
				}
			})
		}
		wg.Wait()
		if n := changed.Load(); n != int64(len(uids)) {
			t.Errorf("the sweeps changed %d users' status, want %d", n, len(uids))
		}
		if n, _ := s2.Sessions().OnlineUsers(ctx); n != 0 {
			t.Errorf("%d users online", n)
		}
		evs := outboxEvents(t, s2)
		for _, uid := range uids {
			if got := evs["user_offline"][uid]; got != 1 {
				t.Fatalf("user %s: %d user_offline webhooks, want 1", uid, got)
			}
		}
	})
}

// openDeadSessions opens a session of each of n users through s and
// returns them and their user ids. The embedded store gets 160 (20 a
// shard): miniredis checks every key's expiry on each command, so its
// commands slow down with the keys (1 000 opens take 10 s), and under the
// race detector a sweep of 50 users holds it for half a second, longer
// than renewals may wait.
func openDeadSessions(t *testing.T, s *store.Store, b redistest.Backend, n int) ([]sse.Session, []string) {
	t.Helper()
	if b.Name == "embedded" {
		n = 160
	}
	ss := openSessions(t, s, "u-"+redistest.Prefix(t), n)
	uids := make([]string, n)
	for i, x := range ss {
		uids[i] = x.UserID
	}
	if got, _ := s.Sessions().OnlineUsers(context.Background()); got != int64(n) {
		t.Fatalf("online users %d, want %d", got, n)
	}
	return ss, uids
}

// A status record that lapsed while online (no instance swept for the
// linger: a full outage; PEXPIRE stands in for the 10 minutes) reads as
// offline at a version above every online one, not as "never seen"
// (version 0, which a client keeping the highest version would drop);
// the janitor's first pass once instances are back announces it offline
// (published, one user_offline webhook), as does a close of a session of
// such a user; and a later online is later still.
func TestLapsedOnlineStatusReadsAndGoesOffline(t *testing.T) {
	const ttl = 500 * time.Millisecond
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := context.Background()
		s, _ := twoInstances(t, b, store.Config{PresenceTTL: ttl, SessionPolicy: players.PolicyReplace,
			WebhookOutboxLen: 1000})
		swept, closed := "u-"+redistest.Prefix(t), "u-c-"+redistest.Prefix(t)
		sink := watchUser(t, s, swept)
		sess := map[string]sse.Session{}
		for _, uid := range []string{swept, closed} {
			sess[uid] = sse.Session{UserID: uid, Platform: "pc", ID: "outage.1"}
			if _, err := s.Sessions().OpenSession(ctx, sess[uid], sse.Cursor{}, 0); err != nil {
				t.Fatal(err)
			}
		}
		online, err := s.Sessions().Statuses(ctx, []string{swept, closed})
		if err != nil || !online[0].Online || !online[1].Online {
			t.Fatalf("after the opens: %+v, %v", online, err)
		}
		// every instance down: no renewal, no sweep; the leases lapse,
		// then the status records
		time.Sleep(ttl + 100*time.Millisecond)
		for _, uid := range []string{swept, closed} {
			expireStatus(t, s, uid)
		}
		got, err := s.Sessions().Statuses(ctx, []string{swept, closed, "nobody-" + swept})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 2 {
			if got[i].Online || got[i].Version <= online[i].Version {
				t.Errorf("status record lapsed online: %+v, want offline above version %d", got[i], online[i].Version)
			}
		}
		if got[2].Online || got[2].Version != 0 {
			t.Errorf("never seen: %+v, want offline at version 0", got[2])
		}
		// instances back: a close of the session (its instance was cut
		// off) announces it, the first janitor pass the other
		if err := s.Sessions().CloseSession(ctx, sess[closed]); err != nil {
			t.Fatal(err)
		}
		for shard := range 8 {
			if _, err := s.Sweep(ctx, shard, "back", time.Minute); err != nil {
				t.Fatal(err)
			}
		}
		wait.Until(t, "offline published", func() bool { ss, _ := sink.snapshot(); return len(ss) >= 2 })
		ss, _ := sink.snapshot()
		if len(ss) != 2 || !ss[0].Online || ss[1].Online || ss[1].Version < got[0].Version {
			t.Fatalf("published %+v, want online then offline at or above %d", ss, got[0].Version)
		}
		after, _ := s.Sessions().Statuses(ctx, []string{swept, closed})
		for i := range 2 {
			if after[i].Online || after[i].Version < got[i].Version {
				t.Errorf("after the sweep and the close: %+v, want offline at or above %d", after[i], got[i].Version)
			}
		}
		if after[0].Version != ss[1].Version {
			t.Errorf("read version %d, published %d", after[0].Version, ss[1].Version)
		}
		evs := outboxEvents(t, s)
		for _, uid := range []string{swept, closed} {
			if evs["user_offline"][uid] != 1 {
				t.Errorf("user %s: %d user_offline webhooks, want 1", uid, evs["user_offline"][uid])
			}
		}
		if n, _ := s.Sessions().OnlineUsers(ctx); n != 0 {
			t.Errorf("%d users online", n)
		}
		if _, err := s.Sessions().OpenSession(ctx, sse.Session{UserID: swept, Platform: "web", ID: "again"}, sse.Cursor{}, 0); err != nil {
			t.Fatal(err)
		}
		if again, _ := s.Sessions().Statuses(ctx, []string{swept}); !again[0].Online || again[0].Version <= after[0].Version {
			t.Errorf("online again: %+v, want above %d", again[0], after[0].Version)
		}
	})
}

// expireStatus makes user uid's status record expire now, as it does 10
// minutes after the last lease when no instance sweeps.
func expireStatus(t *testing.T, s *store.Store, uid string) {
	t.Helper()
	ctx := context.Background()
	keys, err := rediskeys.Scan(ctx, s.Client(), "*:status:"+uid)
	if err != nil || len(keys) != 1 {
		t.Fatalf("status keys of %s: %v, %v", uid, keys, err)
	}
	if err := s.Client().PExpire(ctx, keys[0], time.Millisecond).Err(); err != nil {
		t.Fatal(err)
	}
	wait.Until(t, "the status record gone", func() bool { return s.Client().Exists(ctx, keys[0]).Val() == 0 })
}

// Statuses reads the status record, then, for a user without one, the
// online index: a session opened between the two reads leaves a lease
// still running there, which is no lapsed status. Read as one, its
// version (the lease's expiry, seconds ahead) made an offline status
// later than the user's real online one, and followers then dropped
// every status of the user until it passed (a reviewer's find). The
// state the second read sees (a running lease, no record) reads version
// 0, which hides nothing.
func TestStatusReadRacingAnOpenIsNotFromTheFuture(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := context.Background()
		s, _ := twoInstances(t, b, store.Config{PresenceTTL: time.Minute, SessionPolicy: players.PolicyReplace})
		uid := "u-" + redistest.Prefix(t)
		if _, err := s.Sessions().OpenSession(ctx, sse.Session{UserID: uid, Platform: "pc", ID: "p.1"}, sse.Cursor{}, 0); err != nil {
			t.Fatal(err)
		}
		online, err := s.Sessions().Statuses(ctx, []string{uid})
		if err != nil || !online[0].Online {
			t.Fatalf("after the open: %+v, %v", online, err)
		}
		expireStatus(t, s, uid) // as the first read found it: no record yet
		got, err := s.Sessions().Statuses(ctx, []string{uid})
		if err != nil || got[0].Online || got[0].Version >= online[0].Version {
			t.Fatalf("a running lease without a record: %+v, %v; want offline below the online version %d", got, err, online[0].Version)
		}
	})
}

// A user back before any sweep after a full outage (the status record
// lapsed while online): the open announces the outage's offline first,
// then its online, each once (a reviewer's find: the open published
// user_online over the lapsed status and the offline was never
// announced, so a webhook receiver saw user_online twice).
func TestReopenAfterALapsedStatusAnnouncesTheOffline(t *testing.T) {
	const ttl = 500 * time.Millisecond
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := context.Background()
		s, _ := twoInstances(t, b, store.Config{PresenceTTL: ttl, SessionPolicy: players.PolicyReplace, WebhookOutboxLen: 1000})
		uid := "u-" + redistest.Prefix(t)
		sink := watchUser(t, s, uid)
		if _, err := s.Sessions().OpenSession(ctx, sse.Session{UserID: uid, Platform: "pc", ID: "before"}, sse.Cursor{}, 0); err != nil {
			t.Fatal(err)
		}
		time.Sleep(ttl + 100*time.Millisecond)
		expireStatus(t, s, uid)
		if _, err := s.Sessions().OpenSession(ctx, sse.Session{UserID: uid, Platform: "pc", ID: "after"}, sse.Cursor{}, 0); err != nil {
			t.Fatal(err)
		}
		wait.Until(t, "three statuses published", func() bool { ss, _ := sink.snapshot(); return len(ss) >= 3 })
		ss, _ := sink.snapshot()
		if len(ss) != 3 || !ss[0].Online || ss[1].Online || !ss[2].Online || ss[1].Version <= ss[0].Version || ss[2].Version <= ss[1].Version {
			t.Fatalf("published %+v, want online, offline, online, versions rising", ss)
		}
		evs := outboxEvents(t, s)
		if evs["user_online"][uid] != 2 || evs["user_offline"][uid] != 1 {
			t.Errorf("webhooks: %d user_online, %d user_offline; want 2 and 1", evs["user_online"][uid], evs["user_offline"][uid])
		}
	})
}

// The status record gone while a lease still runs (evicted): an open
// refused by the policy changes and announces nothing (a reviewer's find:
// the lapsed-status step published user_platforms_changed for platforms
// that had not changed, and left the record without its expiry).
func TestRefusedOpenWithALiveLeaseAnnouncesNothing(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := context.Background()
		s, _ := twoInstances(t, b, store.Config{PresenceTTL: time.Minute, SessionPolicy: players.PolicyRejectNew, WebhookOutboxLen: 1000})
		uid := "u-" + redistest.Prefix(t)
		if _, err := s.Sessions().OpenSession(ctx, sse.Session{UserID: uid, Platform: "pc", ID: "p.1"}, sse.Cursor{}, 0); err != nil {
			t.Fatal(err)
		}
		expireStatus(t, s, uid)
		if _, err := s.Sessions().OpenSession(ctx, sse.Session{UserID: uid, Platform: "pc", ID: "p.2"}, sse.Cursor{}, 0); !errors.Is(err, players.ErrSessionExists) {
			t.Fatalf("second pc session: %v, want ErrSessionExists", err)
		}
		evs := outboxEvents(t, s)
		if evs["user_online"][uid] != 1 || evs["user_platforms_changed"][uid] != 0 || evs["user_offline"][uid] != 0 {
			t.Errorf("webhooks %v, want the first open's user_online alone", evs)
		}
	})
}

// The record gone while another lease of the user runs (allow-multiple):
// a close of one session announces no lapsed status (a reviewer's find:
// close and the sweep marked it, so user_platforms_changed went out for
// platforms that had not changed).
func TestCloseWithALeaseLeftAnnouncesNoLapse(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := context.Background()
		s, _ := twoInstances(t, b, store.Config{PresenceTTL: time.Minute, SessionPolicy: players.PolicyAllowMultiple, WebhookOutboxLen: 1000})
		uid := "u-" + redistest.Prefix(t)
		one, two := sse.Session{UserID: uid, Platform: "pc", ID: "p.1"}, sse.Session{UserID: uid, Platform: "pc", ID: "p.2"}
		for _, ss := range []sse.Session{one, two} {
			if _, err := s.Sessions().OpenSession(ctx, ss, sse.Cursor{}, 0); err != nil {
				t.Fatal(err)
			}
		}
		expireStatus(t, s, uid)
		if err := s.Sessions().CloseSession(ctx, one); err != nil {
			t.Fatal(err)
		}
		if evs := outboxEvents(t, s); evs["user_platforms_changed"][uid] != 0 || evs["user_offline"][uid] != 0 {
			t.Errorf("webhooks %v after closing one of two pc sessions", evs)
		}
	})
}
