package store_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/internal/rediskeys"
	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/internal/wait"
	"github.com/realsync/realsync/players"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/sse"
	"github.com/realsync/realsync/store"
	"github.com/realsync/realsync/store/sessions"
	"github.com/realsync/realsync/store/userlog"
)

// userSink records what a Feed delivers on user and status channels.
type userSink struct {
	mu       sync.Mutex
	statuses []players.Status
	events   []sse.UserEvent
}

func (s *userSink) Deliver(string, sse.Event) {}
func (s *userSink) Resubscribed(string)       {}
func (s *userSink) Lobby(sse.LobbyNotice)     {}
func (s *userSink) ResubscribedUser(string)   {}
func (s *userSink) ResubscribedStatus(string) {}
func (s *userSink) DeliverUser(_ string, e sse.UserEvent) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, e)
}
func (s *userSink) DeliverStatus(st players.Status) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.statuses = append(s.statuses, st)
}

func (s *userSink) snapshot() ([]players.Status, []sse.UserEvent) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.statuses), slices.Clone(s.events)
}

// watchUser subscribes uid's user and status channels on st's feed.
func watchUser(t *testing.T, st *store.Store, uid string) *userSink {
	t.Helper()
	sink := &userSink{}
	f := st.Feed(sink)
	t.Cleanup(func() { f.Close() })
	uf := f.(sse.UserFeed)
	if err := uf.SubscribeUser(context.Background(), uid); err != nil {
		t.Fatal(err)
	}
	if err := uf.SubscribeStatus(context.Background(), uid); err != nil {
		t.Fatal(err)
	}
	return sink
}

func platformsOf(ss []players.Status) []string {
	var out []string
	for _, s := range ss {
		out = append(out, strings.Join(s.Platforms, ","))
	}
	return out
}

func sessionStore(t *testing.T, b redistest.Backend, policy players.Policy, ttl time.Duration) (*store.Store, *store.Store) {
	t.Helper()
	return twoInstances(t, b, store.Config{PresenceTTL: ttl, SessionPolicy: policy, Quotas: store.Quotas{StreamsPerUser: 4}})
}

// Two platforms of one user are online at once; the status is published
// only when the platforms change (a renewal, a replacement on the same
// platform publish nothing), its version grows with each change, and
// GET-style reads agree. The replaced session gets session_replaced on the
// user's channel (through the other instance), not logged (a notice at the
// log's position), and loses its lease.
func TestSessionsStatusPublishedOnChange(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := context.Background()
		s1, s2 := sessionStore(t, b, players.PolicyReplace, time.Minute)
		uid := "u-" + redistest.Prefix(t)
		sink := watchUser(t, s2, uid)
		pc := sse.Session{UserID: uid, Platform: "pc", ID: "a.1"}
		mobile := sse.Session{UserID: uid, Platform: "mobile", ID: "b.1"}
		pc2 := sse.Session{UserID: uid, Platform: "pc", ID: "b.2"}
		if _, err := s1.Sessions().OpenSession(ctx, pc, sse.Cursor{}, 100); err != nil {
			t.Fatal(err)
		}
		if _, err := s2.Sessions().OpenSession(ctx, mobile, sse.Cursor{}, 100); err != nil {
			t.Fatal(err)
		}
		if lost, err := s1.Sessions().RenewSessions(ctx, []sse.Session{pc, mobile}); err != nil || len(lost) != 0 {
			t.Fatalf("renew: lost %v, %v", lost, err)
		}
		o, err := s2.Sessions().OpenSession(ctx, pc2, sse.Cursor{}, 100)
		if err != nil || o.Replaced != 1 || o.Seq != 0 {
			t.Fatalf("replacing open: %+v, %v (want nothing logged)", o, err)
		}
		if lost, _ := s1.Sessions().RenewSessions(ctx, []sse.Session{pc, mobile}); len(lost) != 1 || lost[0] != pc {
			t.Fatalf("the replaced session's renewal: lost %v", lost)
		}
		got, err := s1.Sessions().Statuses(ctx, []string{uid, "nobody-" + uid})
		if err != nil || !got[0].Online || !slices.Equal(got[0].Platforms, []string{"pc", "mobile"}) || got[1].Online || got[1].Version != 0 {
			t.Fatalf("statuses %+v, %v", got, err)
		}
		if err := s1.Sessions().CloseSession(ctx, mobile); err != nil {
			t.Fatal(err)
		}
		if err := s1.Sessions().CloseSession(ctx, pc); err != nil { // replaced already: nothing changes
			t.Fatal(err)
		}
		if err := s2.Sessions().CloseSession(ctx, pc2); err != nil {
			t.Fatal(err)
		}
		wantPs := []string{"pc", "pc,mobile", "pc", ""}
		wait.Until(t, "4 status changes", func() bool { ss, _ := sink.snapshot(); return len(ss) >= 4 })
		time.Sleep(100 * time.Millisecond) // nothing more may come
		ss, evs := sink.snapshot()
		if !slices.Equal(platformsOf(ss), wantPs) {
			t.Fatalf("published %q, want %q", platformsOf(ss), wantPs)
		}
		for i := 1; i < len(ss); i++ {
			if ss[i].Version <= ss[i-1].Version {
				t.Errorf("version %d after %d", ss[i].Version, ss[i-1].Version)
			}
		}
		if len(evs) != 1 || !evs[0].Notice || evs[0].Seq != 0 || !strings.Contains(string(evs[0].Data), `"session":"a.1"`) ||
			!strings.Contains(string(evs[0].Data), `"type":"session_replaced"`) {
			t.Fatalf("user channel %d events: %+v", len(evs), evs)
		}
		// offline keeps the version of going offline: a client that saw
		// the user online reads this as the later status (not "never
		// seen", version 0), for 30 days
		if got, _ := s1.Sessions().Statuses(ctx, []string{uid}); got[0].Online || got[0].Version != ss[3].Version {
			t.Errorf("after the last close: %+v, want offline at version %d", got[0], ss[3].Version)
		}
		if ttl := statusTTL(t, s1, uid); ttl < 29*24*time.Hour || ttl > 30*24*time.Hour {
			t.Errorf("an offline status kept %s, want 30 days", ttl)
		}
	})
}

// reject-new refuses a second session of a platform (and changes
// nothing), saying how long the first one's lease has left; allow-multiple keeps both; a refused or counted session
// respects the per-user stream quota.
func TestSessionPolicies(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := context.Background()
		uid := "u-" + redistest.Prefix(t)
		rj, _ := sessionStore(t, b, players.PolicyRejectNew, time.Minute)
		first := sse.Session{UserID: uid, Platform: "web", ID: "r.1"}
		if _, err := rj.Sessions().OpenSession(ctx, first, sse.Cursor{}, 100); err != nil {
			t.Fatal(err)
		}
		before, _ := rj.Sessions().Statuses(ctx, []string{uid})
		_, err := rj.Sessions().OpenSession(ctx, sse.Session{UserID: uid, Platform: "web", ID: "r.2"}, sse.Cursor{}, 100)
		if !errors.Is(err, players.ErrSessionExists) {
			t.Fatalf("second web session: %v", err)
		}
		// how long the first one's lease holds the platform, unless renewed
		if se, ok := errors.AsType[*players.SessionExistsError](err); !ok || se.Left <= 0 || se.Left > time.Minute {
			t.Errorf("second web session: %#v, want the first one's lease's time left (0, 1m]", err)
		}
		after, _ := rj.Sessions().Statuses(ctx, []string{uid})
		if before[0].Version != after[0].Version {
			t.Errorf("a refused open changed the status: %+v → %+v", before[0], after[0])
		}
		if lost, _ := rj.Sessions().RenewSessions(ctx, []sse.Session{first}); len(lost) != 0 {
			t.Errorf("the first session lost its lease")
		}
		if _, err := rj.Sessions().OpenSession(ctx, sse.Session{UserID: uid, Platform: "console", ID: "r.3"}, sse.Cursor{}, 100); err != nil {
			t.Errorf("another platform: %v", err)
		}

		uid2 := uid + "-m"
		am, _ := sessionStore(t, b, players.PolicyAllowMultiple, time.Minute)
		var ss []sse.Session
		for i := range 4 {
			s := sse.Session{UserID: uid2, Platform: "pc", ID: fmt.Sprintf("m.%d", i)}
			if o, err := am.Sessions().OpenSession(ctx, s, sse.Cursor{}, 100); err != nil || o.Replaced != 0 {
				t.Fatalf("session %d: %+v %v", i, o, err)
			}
			ss = append(ss, s)
		}
		if _, err := am.Sessions().OpenSession(ctx, sse.Session{UserID: uid2, Platform: "pc", ID: "m.9"}, sse.Cursor{}, 100); !errors.Is(err, rooms.ErrStreamLimit) {
			t.Fatalf("past the stream quota: %v", err)
		}
		if lost, _ := am.Sessions().RenewSessions(ctx, ss); len(lost) != 0 {
			t.Errorf("allow-multiple lost %v", lost)
		}
		if _, err := am.Sessions().OpenSession(ctx, sse.Session{UserID: uid2, Platform: "tv", ID: "m.8"}, sse.Cursor{}, 100); !errors.Is(err, players.ErrInvalidPlatform) {
			t.Errorf("platform tv: %v", err)
		}
	})
}

// A session whose instance stops renewing it (killed) lapses: the
// janitor's sweep takes its user offline, published once, within the TTL
// plus a sweep; the keys left all expire (the log, its meta), and the
// shard's online index no longer holds the user.
func TestSessionLapsesOffline(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := context.Background()
		// 2 s: the checks right after the open come before the lapse
		// on a loaded machine too
		const ttl = 2 * time.Second
		s, _ := sessionStore(t, b, players.PolicyReplace, ttl)
		uid := "u-" + redistest.Prefix(t)
		before := countKeys(t, s)
		sink := watchUser(t, s, uid)
		// the session's lease is stamped while it opens, so no sooner
		// than start: a lapse before start+TTL is early however slow
		// the calls below are
		start := time.Now()
		if _, err := s.Sessions().OpenSession(ctx, sse.Session{UserID: uid, Platform: "console", ID: "dead.1"}, sse.Cursor{}, 100); err != nil {
			t.Fatal(err)
		}
		if n, _ := s.Sessions().OnlineUsers(ctx); n != 1 {
			t.Errorf("online users %d, want 1", n)
		}
		// no renewal: the instance is dead; until the TTL passes the
		// user is online
		if got, _ := s.Sessions().Statuses(ctx, []string{uid}); !got[0].Online {
			t.Fatalf("not online: %+v", got[0])
		}
		wait.Until(t, "offline", func() bool {
			for shard := range 8 {
				if _, err := s.Sweep(ctx, shard, "test", time.Millisecond); err != nil {
					t.Fatal(err)
				}
			}
			ss, _ := sink.snapshot()
			return len(ss) == 2 && !ss[1].Online
		})
		if took := time.Since(start); took < ttl-100*time.Millisecond {
			t.Errorf("offline after %v, before the TTL %v", took, ttl)
		}
		if n, _ := s.Sessions().OnlineUsers(ctx); n != 0 {
			t.Errorf("online users %d, want 0", n)
		}
		// what is left: the log's meta, the platform's delivery cursor
		// and the offline status (its version), expiring (the sessions
		// and the open streams expired with their lease, the online
		// entry went with the sweep)
		var left []string
		for _, k := range countKeys(t, s) {
			// the janitor's leases of the sweeps above expire by themselves
			if !slices.Contains(before, k) && !strings.HasSuffix(k, ":janitor") {
				left = append(left, k)
			}
		}
		slices.Sort(left)
		if len(left) != 3 || !strings.HasSuffix(left[0], ":status:"+uid) || !strings.HasSuffix(left[1], ":ulogc:"+uid) ||
			!strings.HasSuffix(left[2], ":ulogm:"+uid) {
			t.Fatalf("keys left %q", left)
		}
		for _, k := range left {
			if ttl, err := s.Client().PTTL(ctx, k).Result(); err != nil || ttl <= 0 {
				t.Errorf("key %s has no expiry (%v, %v)", k, ttl, err)
			}
		}
	})
}

// A resume with the last id of the user's log replays the events after
// it; the id's tag must be the tag of that event's write (each has its
// own), or the history's for a position without an event (0). An id of
// another history, another write's tag, or one the log no longer reaches
// is a gap. Replacing a session logs nothing.
func TestSessionResume(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := context.Background()
		s, _ := sessionStore(t, b, players.PolicyReplace, time.Minute)
		uid := "u-" + redistest.Prefix(t)
		o, err := s.Sessions().OpenSession(ctx, sse.Session{UserID: uid, Platform: "web", ID: "w.0"}, sse.Cursor{}, 100)
		if err != nil || o.Seq != 0 || o.Tag == "" {
			t.Fatalf("first open %+v %v", o, err)
		}
		history := o.Tag
		for i := range 3 { // three logged events, two replacements between them
			if _, err := s.UserLogs().Send(ctx, uid, fmt.Appendf(nil, `{"type":"message","n":%d}`, i)); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Sessions().OpenSession(ctx, sse.Session{UserID: uid, Platform: "pc", ID: fmt.Sprintf("p.%d", i)}, sse.Cursor{}, 100); err != nil {
				t.Fatal(err)
			}
		}
		tags := writeTags(t, s, uid, history, 3)
		c := sse.Cursor{Set: true, Version: 1, Tag: tags[1]}
		r, err := s.Sessions().OpenSession(ctx, sse.Session{UserID: uid, Platform: "mobile", ID: "m.1"}, c, 100)
		if err != nil || r.Gap || len(r.Replay) != 2 || r.Replay[0].Seq != 2 || r.Seq != 3 || r.From != 1 || r.Tag != tags[1] {
			t.Fatalf("resume from 1: %+v %v", r, err)
		}
		if !strings.Contains(string(r.Replay[1].Data), `"n":2`) || r.Replay[0].Tag != tags[2] || r.Replay[1].Tag != tags[3] {
			t.Errorf("replayed %s, tags %s %s, want %v", r.Replay[1].Data, r.Replay[0].Tag, r.Replay[1].Tag, tags)
		}
		for i, tag := range []string{"other", history, tags[2]} { // another history, the history's, another write's
			r, err = s.Sessions().OpenSession(ctx, sse.Session{UserID: uid, Platform: "console", ID: fmt.Sprintf("c.%d", i)}, sse.Cursor{Set: true, Version: 1, Tag: tag}, 100)
			// a gap: then the platform's inbox, here what the log holds
			// (console was delivered nothing)
			if err != nil || !r.Gap || r.From != 0 || r.Tag != history || len(r.Replay) != 3 || r.Seq != 3 {
				t.Errorf("resume from 1-%s: %+v %v", tag, r, err)
			}
		}
		if r.Tag != history || r.Replay[0].Tag != tags[1] {
			t.Errorf("inbox from 0: tag %s, first event's %s, want %s, %s", r.Tag, r.Replay[0].Tag, history, tags[1])
		}
		for _, tc := range []struct {
			seq   int64
			tag   string
			limit int
			gap   bool
			n     int
		}{{1, tags[1], 100, false, 2}, {3, tags[3], 100, false, 0}, {0, history, 2, false, 3}, // the log's cap is the least limit
			{9, tags[1], 100, true, 0}, {1, "other", 100, true, 0}, {1, history, 100, true, 0}, {2, tags[1], 100, true, 0}, {0, tags[1], 100, true, 0}} {
			evs, gap, err := s.Sessions().UserLog(ctx, uid, tc.seq, tc.tag, tc.limit)
			if err != nil || gap != tc.gap || len(evs) != tc.n {
				t.Errorf("user log after %d-%s (limit %d): %d events, gap %v, %v", tc.seq, tc.tag, tc.limit, len(evs), gap, err)
			}
			for _, e := range evs {
				if e.Tag != tags[e.Seq] {
					t.Errorf("user log after %d: event %d tagged %s, want %s", tc.seq, e.Seq, e.Tag, tags[e.Seq])
				}
			}
		}
	})
}

// writeTags returns the tags of user uid's logged events 1..n (index:
// seq), read from the log of history.
func writeTags(t *testing.T, s *store.Store, uid, history string, n int) []string {
	t.Helper()
	evs, gap, err := s.Sessions().UserLog(context.Background(), uid, 0, history, n)
	if err != nil || gap || len(evs) != n {
		t.Fatalf("%s's log: %d events, gap %v, %v", uid, len(evs), gap, err)
	}
	tags := []string{history}
	seen := map[string]bool{}
	for _, e := range evs {
		if e.Tag == "" || seen[e.Tag] {
			t.Fatalf("%s's event %d tagged %q: want a tag of its own", uid, e.Seq, e.Tag)
		}
		seen[e.Tag] = true
		tags = append(tags, e.Tag)
	}
	return tags
}

// A failover that lost a user's last events (the replica had the log up
// to 2; simulated: the entries after it deleted, the meta's seq set back,
// as the promoted replica holds them) and the new history's writes that
// reuse their seqs: a client whose last event was a lost one (3) resumes
// with a gap (a snapshot), not after the new history's 3; a stream that
// wrote it catches up with a gap; its ack changes nothing, so the
// platform's next session gets the new history's events. With one tag per
// history, the resume replayed from 4 and the new 3 was never delivered,
// and the ack moved the cursor past it.
func TestResumeFromALostWriteIsAGap(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := context.Background()
		s, _ := sessionStore(t, b, players.PolicyReplace, time.Minute)
		uid := "u-" + redistest.Prefix(t)
		o, err := s.Sessions().OpenSession(ctx, sse.Session{UserID: uid, Platform: "web", ID: "w.0"}, sse.Cursor{}, 100)
		if err != nil {
			t.Fatal(err)
		}
		for i := 1; i <= 3; i++ {
			if _, err := s.UserLogs().Send(ctx, uid, fmt.Appendf(nil, `{"type":"message","n":%d}`, i)); err != nil {
				t.Fatal(err)
			}
		}
		lost := writeTags(t, s, uid, o.Tag, 3)
		if err := s.Sessions().Delivered(ctx, sse.Session{UserID: uid, Platform: "web", ID: "w.0"}, lost[2], 2); err != nil {
			t.Fatal(err)
		}
		// the failover: the promoted replica had the log up to 2 (and
		// web's cursor at 2)
		k := s.UserLogs().KeysOf(uid)
		kept, err := s.Client().XRange(ctx, k.Log, "-", "2-0").Result()
		if err != nil || len(kept) != 2 {
			t.Fatal(kept, err)
		}
		p := s.Client().TxPipeline()
		p.Del(ctx, k.Log)
		for _, x := range kept {
			p.XAdd(ctx, &redis.XAddArgs{Stream: k.Log, ID: x.ID, Values: []any{"d", x.Values["d"], "g", x.Values["g"]}})
		}
		p.HSet(ctx, k.Meta, "seq", 2)
		p.PExpire(ctx, k.Log, time.Hour)
		if _, err := p.Exec(ctx); err != nil {
			t.Fatal(err)
		}
		for i := 3; i <= 4; i++ { // the new history
			if _, err := s.UserLogs().Send(ctx, uid, fmt.Appendf(nil, `{"type":"message","n":%d,"new":true}`, i)); err != nil {
				t.Fatal(err)
			}
		}
		now := writeTags(t, s, uid, o.Tag, 4)
		if now[2] != lost[2] || now[3] == lost[3] {
			t.Fatalf("tags before %v, after %v: want 2 kept, 3 another", lost, now)
		}
		web := sse.Session{UserID: uid, Platform: "web", ID: "w.1"}
		// the stream that wrote the lost 3 acknowledges it: nothing moves
		if err := s.Sessions().Delivered(ctx, web, lost[3], 3); err != nil {
			t.Fatal(err)
		}
		// web's inbox (a session without Last-Event-ID) starts after 2
		r, err := s.Sessions().OpenSession(ctx, sse.Session{UserID: uid, Platform: "web", ID: "w.2"}, sse.Cursor{}, 100)
		if err != nil || r.From != 2 || len(r.Replay) != 2 || r.Replay[0].Tag != now[3] {
			t.Fatalf("web's inbox after the lost 3's ack: from %d, %d events; want from 2, the new 3 and 4 (%v)", r.From, len(r.Replay), err)
		}
		// it catches up (a resubscription): a gap, so it ends and its
		// client resumes
		if evs, gap, err := s.Sessions().UserLog(ctx, uid, 3, lost[3], 100); err != nil || !gap {
			t.Errorf("catch-up from the lost 3: %d events, gap %v, %v; want a gap", len(evs), gap, err)
		}
		// the client resumes from the lost 3: a snapshot, then web's
		// inbox from its cursor (2): the new 3 and 4
		r, err = s.Sessions().OpenSession(ctx, web, sse.Cursor{Set: true, Version: 3, Tag: lost[3]}, 100)
		if err != nil || !r.Gap || r.From != 2 || r.Tag != now[2] || len(r.Replay) != 2 ||
			!strings.Contains(string(r.Replay[0].Data), `"n":3,"new":true`) || r.Replay[0].Tag != now[3] {
			t.Fatalf("resume from the lost 3: gap %v, from %d-%s, %d events %v; want a gap, from 2-%s, the new 3 and 4",
				r.Gap, r.From, r.Tag, len(r.Replay), r.Replay, now[2])
		}
		// from the kept 2: the new 3 and 4
		r, err = s.Sessions().OpenSession(ctx, sse.Session{UserID: uid, Platform: "pc", ID: "p.1"}, sse.Cursor{Set: true, Version: 2, Tag: lost[2]}, 100)
		if err != nil || r.Gap || len(r.Replay) != 2 || r.Replay[0].Tag != now[3] {
			t.Fatalf("resume from the kept 2: %+v %v", r, err)
		}
		// the tags live in the log's entries: no key of their own, and
		// every key of the user expires
		for _, key := range userKeys(t, s, uid) {
			if ttl := s.Client().PTTL(ctx, key).Val(); ttl <= 0 {
				t.Errorf("%s: TTL %v", key, ttl)
			}
		}
	})
}

// User ids may hold ":": the users "<id>:cur" and "<id>:meta" have keys of
// their own, never <id>'s (a tester's find: a direct message to
// "victim:cur" made victim's cursors a log, and every open of victim's
// personal stream failed with WRONGTYPE).
func TestUserIDsNeverShareKeys(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := context.Background()
		s, _ := sessionStore(t, b, players.PolicyReplace, time.Minute)
		victim := "u-" + redistest.Prefix(t)
		// one whose ":cur" id shares its slot, as an attacker picks (with
		// FNV and a power-of-two shard count, a quarter of all ids; at
		// most 1 000 tries)
		for i := 0; i < 1000 && s.UserShard(victim) != s.UserShard(victim+":cur"); i++ {
			victim = fmt.Sprintf("u-v%d", i)
		}
		ss := sse.Session{UserID: victim, Platform: "pc", ID: "v.1"}
		if _, err := s.UserLogs().Send(ctx, victim, []byte(`{"type":"message","n":0}`)); err != nil {
			t.Fatal(err)
		}
		o, err := s.Sessions().OpenSession(ctx, ss, sse.Cursor{}, 10)
		if err != nil || len(o.Replay) != 1 {
			t.Fatalf("open: %+v %v", o, err)
		}
		if err := s.Sessions().Delivered(ctx, ss, o.Tag, o.Replay[0].Seq); err != nil {
			t.Fatal(err)
		}
		if err := s.Sessions().CloseSession(ctx, ss); err != nil {
			t.Fatal(err)
		}
		for _, other := range []string{victim + ":cur", victim + ":meta"} {
			if _, err := s.UserLogs().Send(ctx, other, []byte(`{"type":"message","n":1}`)); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.UserLogs().Send(ctx, victim, []byte(`{"type":"message","n":2}`)); err != nil {
			t.Fatal(err)
		}
		o, err = s.Sessions().OpenSession(ctx, ss, sse.Cursor{}, 10)
		if err != nil || len(o.Replay) != 1 || !strings.Contains(string(o.Replay[0].Data), `"n":2`) {
			t.Fatalf("victim's open after messages to its ids with suffixes: %+v %v", o, err)
		}
	})
}

// statusTTL is the time left of user uid's status key, found by its name.
func statusTTL(t *testing.T, s *store.Store, uid string) time.Duration {
	t.Helper()
	ctx := context.Background()
	keys, err := rediskeys.Scan(ctx, s.Client(), "*:status:"+uid)
	if err != nil || len(keys) != 1 {
		t.Fatalf("status keys of %s: %v, %v", uid, keys, err)
	}
	ttl, err := s.Client().PTTL(ctx, keys[0]).Result()
	if err != nil {
		t.Fatal(err)
	}
	return ttl
}

// Past the log's cap the oldest events are dropped, whatever they are:
// the drops are counted as the sends' are, and a platform whose
// undelivered events went is told it lost events (Lost: its snapshot says
// resync) rather than starting silently after them (a tester's find,
// when session_replaced was logged: 1 001 replacements on pc took
// mobile's three direct messages, the metric stayed 0 and mobile's
// snapshot said resync false, pending 0). A platform that never opened
// loses nothing.
func TestOverflowingTheInboxIsCounted(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := context.Background()
		s, _, dropped := countingDrops(t, b, userlog.MinMaxLen)
		uid := "u-" + redistest.Prefix(t)
		messagesMissedOnMobile(t, s, uid)
		// MinMaxLen more: the log held 3 + MinMaxLen, 3 over
		for i := range userlog.MinMaxLen {
			if _, err := s.UserLogs().Send(ctx, uid, fmt.Appendf(nil, `{"type":"invite","n":%d}`, i)); err != nil {
				t.Fatal(err)
			}
		}
		if got := dropped.Load(); got != 3 {
			t.Errorf("dropped %d entries counted, want 3 (the messages)", got)
		}
		o, err := s.Sessions().OpenSession(ctx, sse.Session{UserID: uid, Platform: "mobile", ID: "m.1"}, sse.Cursor{}, 100)
		if err != nil || !o.Lost || o.Gap {
			t.Errorf("mobile after its inbox overflowed: lost %v gap %v %v, want lost", o.Lost, o.Gap, err)
		}
		for _, e := range o.Replay {
			if strings.Contains(string(e.Data), `"type":"message"`) {
				t.Errorf("a dropped message replayed: %s", e.Data)
			}
		}
		// a session that delivered nothing leaves it to the next
		if err := s.Sessions().CloseSession(ctx, sse.Session{UserID: uid, Platform: "mobile", ID: "m.1"}); err != nil {
			t.Fatal(err)
		}
		m2 := sse.Session{UserID: uid, Platform: "mobile", ID: "m.2"}
		o, err = s.Sessions().OpenSession(ctx, m2, sse.Cursor{}, 100)
		if err != nil || !o.Lost {
			t.Errorf("mobile again, nothing delivered: lost %v %v, want lost", o.Lost, err)
		}
		// its snapshot written, the stream records From: said once
		if err := s.Sessions().Delivered(ctx, m2, o.Tag, o.From); err != nil {
			t.Fatal(err)
		}
		if err := s.Sessions().CloseSession(ctx, m2); err != nil {
			t.Fatal(err)
		}
		o, err = s.Sessions().OpenSession(ctx, sse.Session{UserID: uid, Platform: "mobile", ID: "m.3"}, sse.Cursor{}, 100)
		if err != nil || o.Lost {
			t.Errorf("mobile after the snapshot was delivered: lost %v %v, want not", o.Lost, err)
		}
		o, err = s.Sessions().OpenSession(ctx, sse.Session{UserID: uid, Platform: "console", ID: "c.0"}, sse.Cursor{}, 100)
		if err != nil || o.Lost || len(o.Replay) == 0 {
			t.Errorf("console, never opened: lost %v, %d replayed %v; want what the log holds, nothing lost", o.Lost, len(o.Replay), err)
		}
	})
}

// countingDrops opens two instances on b (the replace policy, leases of
// a minute), whose users' logs are capped at maxLen (0: the default) and
// count the entries the cap dropped in dropped.
func countingDrops(t *testing.T, b redistest.Backend, maxLen int) (s, s2 *store.Store, dropped *atomic.Int64) {
	t.Helper()
	dropped = new(atomic.Int64)
	s, s2 = twoInstances(t, b, store.Config{SessionPolicy: players.PolicyReplace, PresenceTTL: time.Minute,
		Offline: userlog.Config{MaxLen: maxLen, Dropped: func(n int) { dropped.Add(int64(n)) }}})
	return s, s2, dropped
}

// messagesMissedOnMobile leaves user uid three direct messages that
// mobile has not been delivered: a session on mobile (m.0) opened and
// closed, then the messages sent ({"type":"message","n":0} to 2).
func messagesMissedOnMobile(t *testing.T, s *store.Store, uid string) {
	t.Helper()
	ctx := context.Background()
	mobile := sse.Session{UserID: uid, Platform: "mobile", ID: "m.0"}
	if _, err := s.Sessions().OpenSession(ctx, mobile, sse.Cursor{}, 100); err != nil {
		t.Fatal(err)
	}
	if err := s.Sessions().CloseSession(ctx, mobile); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := s.UserLogs().Send(ctx, uid, fmt.Appendf(nil, `{"type":"message","n":%d}`, i)); err != nil {
			t.Fatal(err)
		}
	}
}

// A client that keeps replacing its session on one platform (a flapping
// mobile app) takes nothing of the user's capped log: 2 000 replacements
// on pc, twice the log's cap (REALSYNC_OFFLINE_MAX, 1 000), leave
// mobile's three undelivered messages where they were, nothing dropped,
// and mobile's next session gets them without resync. What they leave is
// the replaced sessions' tombstones, at most ReplacedKept, each naming
// its session and who replaced it; the last replaced session finds its
// own (Replaced), a session never replaced none. (When session_replaced
// was logged, the replacements dropped the messages: mobile's next
// session said resync, pending 0.)
func TestReplacingSessionsKeepsTheOtherPlatformsInbox(t *testing.T) {
	alongside(t)
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := context.Background()
		s, s2, dropped := countingDrops(t, b, 0)
		uid := "u-" + redistest.Prefix(t)
		messagesMissedOnMobile(t, s, uid)
		const replacements = 2000
		if max := s.UserLogs().Config().MaxLen; max != userlog.DefaultMaxLen || replacements <= max {
			t.Fatalf("the log's cap %d, want the default, less than %d", max, replacements)
		}
		pc := func(i int) sse.Session { return sse.Session{UserID: uid, Platform: "pc", ID: fmt.Sprintf("p.%d", i)} }
		var last sse.UserOpening
		for i := range replacements + 1 { // every open but the first replaces one
			o, err := s.Sessions().OpenSession(ctx, pc(i), sse.Cursor{}, 100)
			if err != nil || o.Replaced != min(i, 1) {
				t.Fatalf("open %d: replaced %d, %v; want %d", i, o.Replaced, err, min(i, 1))
			}
			last = o
		}
		if last.Seq != 3 {
			t.Errorf("the log at %d after the replacements, want 3 (the messages)", last.Seq)
		}
		if got := dropped.Load(); got != 0 {
			t.Errorf("dropped %d entries, want none", got)
		}
		k := s.UserLogs().KeysOf(uid)
		if n := s.Client().XLen(ctx, k.Log).Val(); n != 3 {
			t.Errorf("the log holds %d entries, want the 3 messages", n)
		}
		o, err := s2.Sessions().OpenSession(ctx, sse.Session{UserID: uid, Platform: "mobile", ID: "m.1"}, sse.Cursor{}, 100)
		if err != nil || o.Lost || o.Gap || len(o.Replay) != 3 || o.From != 0 {
			t.Fatalf("mobile after pc's replacements: lost (resync) %v, gap %v, from %d, %d replayed, %v; want its 3 messages, no resync",
				o.Lost, o.Gap, o.From, len(o.Replay), err)
		}
		for i, e := range o.Replay {
			if !strings.Contains(string(e.Data), fmt.Sprintf(`"n":%d`, i)) {
				t.Errorf("mobile's message %d: %s", i, e.Data)
			}
		}
		// the tombstones: the latest ReplacedKept
		tomb := tombstoneKeys(t, s, uid)
		if len(tomb) != 1 {
			t.Fatalf("tombstone keys %v, want one", tomb)
		}
		if n := s.Client().ZCard(ctx, tomb[0]).Val(); n != sessions.ReplacedKept {
			t.Errorf("%d tombstones kept, want %d", n, sessions.ReplacedKept)
		}
		e, ok, err := s2.Sessions().Replaced(ctx, pc(replacements-1))
		if err != nil || !ok || !e.Notice || e.Seq != 3 || !strings.Contains(string(e.Data), `"by":"`+pc(replacements).ID+`"`) ||
			!strings.Contains(string(e.Data), `"session":"`+pc(replacements-1).ID+`"`) {
			t.Errorf("the last replaced session's tombstone: %+v %s %v %v", e, e.Data, ok, err)
		}
		for _, never := range []sse.Session{pc(replacements), pc(0)} { // open; replaced too long ago
			if _, ok, err := s.Sessions().Replaced(ctx, never); ok || err != nil {
				t.Errorf("%s has a tombstone: %v %v", never.ID, ok, err)
			}
		}
	})
}

// A replaced session's tombstone is kept three lease TTLs, then goes with
// its key: the user's keys are those they were before the replacements.
func TestReplacedSessionsTombstonesExpire(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := context.Background()
		const ttl = time.Second
		s, _ := twoInstances(t, b, store.Config{SessionPolicy: players.PolicyReplace, PresenceTTL: ttl})
		uid := "u-" + redistest.Prefix(t)
		// the user's keys with no session open: status, log, meta, cursors
		was := sse.Session{UserID: uid, Platform: "pc", ID: "p.was"}
		if _, err := s.Sessions().OpenSession(ctx, was, sse.Cursor{}, 100); err != nil {
			t.Fatal(err)
		}
		if err := s.Sessions().CloseSession(ctx, was); err != nil {
			t.Fatal(err)
		}
		if _, err := s.UserLogs().Send(ctx, uid, []byte(`{"type":"message"}`)); err != nil {
			t.Fatal(err)
		}
		before := userKeys(t, s, uid)
		first := sse.Session{UserID: uid, Platform: "pc", ID: "p.0"}
		if _, err := s.Sessions().OpenSession(ctx, first, sse.Cursor{}, 100); err != nil {
			t.Fatal(err)
		}
		var last sse.Session
		for i := range 5 {
			last = sse.Session{UserID: uid, Platform: "pc", ID: fmt.Sprintf("p.%d", i+1)}
			if _, err := s.Sessions().OpenSession(ctx, last, sse.Cursor{}, 100); err != nil {
				t.Fatal(err)
			}
		}
		tomb := tombstoneKeys(t, s, uid)
		if len(tomb) != 1 {
			t.Fatalf("tombstone keys %v, want one", tomb)
		}
		sess := strings.Replace(tomb[0], ":urepl:", ":sess:", 1)
		if !slices.Equal(userKeys(t, s, uid), slices.Sorted(slices.Values(append(before, tomb[0], sess)))) {
			t.Fatalf("keys %v after the replacements, want %v, the session's and the tombstones' %v", userKeys(t, s, uid), before, tomb)
		}
		if pttl := s.Client().PTTL(ctx, tomb[0]).Val(); pttl <= 0 || pttl > 3*ttl {
			t.Errorf("the tombstones expire in %v, want at most 3 TTLs (%v)", pttl, 3*ttl)
		}
		if _, ok, err := s.Sessions().Replaced(ctx, first); !ok || err != nil {
			t.Fatalf("the first session's tombstone: %v %v", ok, err)
		}
		// the last lease lapses with its TTL; the tombstones go later
		if err := s.Sessions().CloseSession(ctx, last); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(15 * time.Second); len(tombstoneKeys(t, s, uid)) > 0; time.Sleep(100 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("the tombstones still there after 15 s: %v", userKeys(t, s, uid))
			}
		}
		if got := userKeys(t, s, uid); !slices.Equal(got, before) {
			t.Errorf("the user's keys %v, want those before the replacements %v", got, before)
		}
		if _, ok, err := s.Sessions().Replaced(ctx, first); ok || err != nil {
			t.Errorf("the first session's tombstone after its expiry: %v %v", ok, err)
		}
	})
}

// userKeys are user uid's keys (on every master), sorted.
func userKeys(t *testing.T, s *store.Store, uid string) []string {
	t.Helper()
	keys, err := rediskeys.Scan(context.Background(), s.Client(), "*:"+uid)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(keys)
	return keys
}

// tombstoneKeys are user uid's keys of replaced sessions.
func tombstoneKeys(t *testing.T, s *store.Store, uid string) []string {
	t.Helper()
	keys, err := rediskeys.Scan(context.Background(), s.Client(), "*:urepl:"+uid)
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

// A log an older release wrote has no tag per entry (one tag, the
// history's, in every id): after the upgrade the ids its clients kept
// still resume (the history's tag is those entries'), and its streams'
// acks still count; an event written since has its own tag, and the
// history's is not its.
func TestOlderReleasesIDsStillResume(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := context.Background()
		s, _ := sessionStore(t, b, players.PolicyReplace, time.Minute)
		uid := "u-" + redistest.Prefix(t)
		k := s.UserLogs().KeysOf(uid)
		const history = "older1"
		p := s.Client().TxPipeline()
		for seq := 1; seq <= 2; seq++ { // as user_send.lua wrote them: field d alone
			p.XAdd(ctx, &redis.XAddArgs{Stream: k.Log, ID: fmt.Sprintf("%d-0", seq), Values: []any{"d", fmt.Sprintf(`{"type":"message","seq":%d}`, seq)}})
		}
		p.HSet(ctx, k.Meta, "seq", 2, "tag", history)
		for _, key := range []string{k.Log, k.Meta} {
			p.PExpire(ctx, key, time.Hour)
		}
		if _, err := p.Exec(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := s.UserLogs().Send(ctx, uid, []byte(`{"type":"message","new":true}`)); err != nil {
			t.Fatal(err)
		}
		r, err := s.Sessions().OpenSession(ctx, sse.Session{UserID: uid, Platform: "web", ID: "w.1"}, sse.Cursor{Set: true, Version: 1, Tag: history}, 100)
		if err != nil || r.Gap || len(r.Replay) != 2 || r.Replay[0].Tag != history || r.Replay[1].Tag == history || r.Replay[1].Tag == "" {
			t.Fatalf("resume from an older release's 1-%s: %+v %v; want 2 (the history's tag) and 3 (its own)", history, r, err)
		}
		if moved, err := s.UserLogs().Ack(ctx, uid, "web", history, 2); err != nil || !moved {
			t.Fatalf("an older release's stream's ack of 2: %v %v", moved, err)
		}
		if moved, err := s.UserLogs().Ack(ctx, uid, "web", history, 3); err != nil || moved {
			t.Fatalf("an ack of 3 with the history's tag: %v %v; want nothing moved (3 has its own)", moved, err)
		}
		r, err = s.Sessions().OpenSession(ctx, sse.Session{UserID: uid, Platform: "pc", ID: "p.1"}, sse.Cursor{Set: true, Version: 3, Tag: history}, 100)
		if err != nil || !r.Gap {
			t.Fatalf("resume from 3-%s: %+v %v; want a gap", history, r, err)
		}
	})
}
