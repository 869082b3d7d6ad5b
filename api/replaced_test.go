package api_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/realsync/realsync/internal/rediskeys"
	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/players"
	"github.com/realsync/realsync/sse"
	"github.com/realsync/realsync/store"
	"github.com/realsync/realsync/store/userlog"
)

// lossySink hands a hub what its feed delivers, but loses the user events
// drop says so (a Pub/Sub message lost on the way, which no
// resubscription tells).
type lossySink struct {
	sse.Sink
	us   sse.UserSink
	drop func(user string, e sse.UserEvent) bool
}

func (s lossySink) DeliverUser(u string, e sse.UserEvent) {
	if !s.drop(u, e) {
		s.us.DeliverUser(u, e)
	}
}
func (s lossySink) DeliverStatus(st players.Status) { s.us.DeliverStatus(st) }
func (s lossySink) ResubscribedUser(u string)       { s.us.ResubscribedUser(u) }
func (s lossySink) ResubscribedStatus(u string)     { s.us.ResubscribedStatus(u) }

// lossyEnvs are two instances with a lease TTL of 1 s (renewed every third
// of it), the log capped at userlog.MinMaxLen; the first instance loses
// every event of its users' channels while lose is set.
func lossyEnvs(t *testing.T, b redistest.Backend) (es []*env, lose *atomic.Bool) {
	t.Helper()
	lose = new(atomic.Bool)
	es, _ = lossyEnvsWith(t, b, time.Second, func(string, sse.UserEvent) bool { return lose.Load() })
	return es, lose
}

// lossyEnvsWith are two instances with a lease TTL of ttl, the log capped
// at userlog.MinMaxLen; the first instance loses the events of its users'
// channels drop says so. hub is the first instance's hub, as its feed
// tells it (a resubscription, say).
func lossyEnvsWith(t *testing.T, b redistest.Backend, ttl time.Duration, drop func(user string, e sse.UserEvent) bool) (es []*env, hub sse.UserSink) {
	t.Helper()
	var sink atomic.Value
	es = playerEnvsHub(t, b, 2, func(c *store.Config) {
		c.PresenceTTL, c.Offline = ttl, userlog.Config{MaxLen: userlog.MinMaxLen}
	}, func(i int, c *sse.Config) {
		c.PresenceTTL = ttl
		if i == 0 {
			feed := c.Feed
			c.Feed = func(s sse.Sink) sse.Feed {
				sink.Store(s.(sse.UserSink))
				return feed(lossySink{Sink: s, us: s.(sse.UserSink), drop: drop})
			}
		}
	})
	hub, _ = sink.Load().(sse.UserSink)
	if hub == nil {
		t.Fatal("the first instance's hub has no feed")
	}
	return es, hub
}

// alicePC makes the guest alice on e and opens her personal stream on pc
// there, read up to its first event; it returns her token and id, the
// stream and that event.
func (e *env) alicePC() (alice, aliceID string, s *stream, first sseFrame) {
	e.t.Helper()
	alice, aliceID = e.guest("alice")
	s = e.me(alice, "pc")
	return alice, aliceID, s, s.next()
}

// replacePC opens token's personal stream on pc through e, replacing the
// session open there, and fails unless its first event is its snapshot.
func (e *env) replacePC(token string) *stream {
	e.t.Helper()
	s := e.me(token, "pc")
	if f := s.next(); f.event != "snapshot" {
		e.t.Fatalf("the new session's first event %+v", f)
	}
	return s
}

// storeSend appends data to user uid's log through e's store, as a direct
// message is (published on the user's channel too).
func (e *env) storeSend(uid string, data []byte) {
	e.t.Helper()
	if _, err := e.store.UserLogs().Send(context.Background(), uid, data); err != nil {
		e.t.Fatal(err)
	}
}

// endsReplaced fails unless f, the replaced session's last event, is a
// UserEvent of the spec and the stream s ends after it, with nothing more.
func endsReplaced(t *testing.T, s *stream, f sseFrame) {
	t.Helper()
	checkUserEvent(t, f)
	if rest := s.ends(); len(rest) != 0 {
		t.Errorf("events after session_replaced: %v", rest)
	}
}

// A session replaced while its instance lost the live session_replaced
// (a Pub/Sub message lost, no resubscription to say so) still ends
// replaced, with its session_replaced, not lapsed (its client would
// reconnect and replace the new session in turn): the lease renewal finds
// the lease gone, and the replaced session's tombstone tells it was
// replaced, and by whom. It first writes what was logged before the
// replacement (not what came after: the new session's), even when its
// log cannot serve that any more (the cap dropped it): then the
// session_replaced alone. The event has no id: it is not logged, and its
// seq is the log's position at the replacement. (When session_replaced
// was logged, the catch-up read it from the log, and a log past its cap
// made it a gap: the stream ended with nothing, and its client resumed.)
func TestMeStreamReplacedWithItsMessageLost(t *testing.T) {
	for _, tc := range []struct {
		name   string
		before int // messages sent to the user, lost, before the replacement
		gap    bool
	}{{"lost", 2, false}, {"lost, the log past its cap", userlog.MinMaxLen + 5, true}} {
		for _, b := range redistest.Backends(t) {
			t.Run(tc.name+"/"+b.Name, func(t *testing.T) {
				es, lose := lossyEnvs(t, b)
				alice, aliceID, old, first := es[0].alicePC()
				if first.event != "snapshot" {
					t.Fatalf("first event %+v", first)
				}
				lose.Store(true)
				for i := range tc.before {
					es[1].storeSend(aliceID, fmt.Appendf(nil, `{"type":"message","n":%d}`, i))
				}
				es[1].replacePC(alice)
				// logged after the replacement: the new session's
				es[1].storeSend(aliceID, []byte(`{"type":"message","n":"after"}`))
				var got []sseFrame
				for {
					f := old.next()
					got = append(got, f)
					if f.event != "message" {
						break
					}
				}
				f := got[len(got)-1]
				if f.event != "session_replaced" || f.data["session"] != first.data["session"] || f.data["by"] == "" ||
					f.id != "" || f.data["seq"] != float64(tc.before) {
					t.Fatalf("the replaced session got %+v last, want its session_replaced, no id, seq %d", f, tc.before)
				}
				if want := tc.before; tc.gap && len(got) != 1 || !tc.gap && len(got) != want+1 {
					t.Errorf("the replaced session got %d events, want %d messages then session_replaced", len(got), want)
				}
				endsReplaced(t, old, f)
			})
		}
	}
}

// During a rolling upgrade an instance of an older release replaces a
// session as it did: session_replaced appended to the user's log (and
// published as a logged event), no tombstone. This release's stream of
// the replaced session ends replaced with it all the same, whether the
// live message reaches it or was lost (the renewal's catch-up finds no
// tombstone and reads it from the log), and writes it without an id as
// its own.
func TestMeStreamReplacedByAnOlderRelease(t *testing.T) {
	for _, lost := range []bool{false, true} {
		for _, b := range redistest.Backends(t) {
			t.Run(fmt.Sprintf("lost=%v/%s", lost, b.Name), func(t *testing.T) {
				ctx := context.Background()
				es, lose := lossyEnvs(t, b)
				_, aliceID, old, first := es[0].alicePC()
				session, _ := first.data["session"].(string)
				lose.Store(lost)
				// what the older release's session_open did: session_replaced
				// logged and published, the lease dropped (here in this
				// order: a renewal between the two finds the lease held,
				// not yet the entry missing)
				ev := fmt.Sprintf(`{"type":"session_replaced","userId":%q,"ts":%q,"platform":"pc","session":%q,"by":"older.1"}`,
					aliceID, time.Now().UTC().Format(time.RFC3339Nano), session)
				es[1].storeSend(aliceID, []byte(ev))
				c := es[1].store.Client()
				keys, err := rediskeys.Scan(ctx, c, "*:sess:"+aliceID)
				if err != nil || len(keys) > 1 {
					t.Fatalf("session keys %v %v", keys, err)
				}
				if len(keys) == 1 { // (the live message may have ended the session already)
					if err := c.ZRem(ctx, keys[0], "pc/"+session).Err(); err != nil {
						t.Fatal(err)
					}
				}
				f := old.next()
				if f.event != "session_replaced" || f.data["session"] != session || f.data["by"] != "older.1" || f.id != "" {
					t.Fatalf("the replaced session got %+v, want its session_replaced, no id", f)
				}
				endsReplaced(t, old, f)
			})
		}
	}
}

// A session replaced while its instance's subscription was cut (the live
// session_replaced lost, and the events logged after the replacement, the
// new session's) ends with its session_replaced at the resubscription's
// catch-up, which reads the session's tombstone: it does not write the
// new session's events, nor wait for its lease renewal (a long TTL here:
// none comes). (Without the tombstone read, the catch-up wrote the new
// session's event and the stream went on until the renewal.)
func TestMeStreamReplacedEndsAtItsResubscription(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		var lose atomic.Bool
		es, hub := lossyEnvsWith(t, b, time.Minute, func(string, sse.UserEvent) bool { return lose.Load() })
		alice, aliceID, old, first := es[0].alicePC()
		es[1].storeSend(aliceID, []byte(`{"type":"message","n":"before"}`))
		if f := old.next(); f.event != "message" {
			t.Fatalf("the message before: %+v", f)
		}
		lose.Store(true) // the connection cut
		repl := es[1].replacePC(alice)
		es[1].storeSend(aliceID, []byte(`{"type":"message","n":"after"}`))
		// (the message before too, when the new session opened before
		// the old one recorded its delivery)
		for f := repl.next(); f.data["n"] != "after"; f = repl.next() {
			if f.event != "message" || f.data["n"] != "before" {
				t.Fatalf("the new session got %+v, want the message after", f)
			}
		}
		lose.Store(false)
		hub.ResubscribedUser(aliceID) // the connection back
		f := old.next()
		if f.event != "session_replaced" || f.data["session"] != first.data["session"] || f.id != "" || f.data["seq"] != 1.0 {
			t.Fatalf("the replaced session got %+v, want its session_replaced (seq 1, no id), not the new session's message", f)
		}
		endsReplaced(t, old, f)
	})
}

// A replaced session whose instance lost logged events before the
// replacement, but not the live session_replaced, writes them from the
// log first (its seq says how far the log went at the replacement), then
// session_replaced: the events up to it are the replaced session's, as
// when the live message was lost too. (The live session_replaced used to
// end the stream at once, the events it had missed unwritten.)
func TestMeStreamReplacedCatchesUpBeforeItsLiveMessage(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		var lose atomic.Bool
		es, _ := lossyEnvsWith(t, b, time.Minute, func(_ string, e sse.UserEvent) bool { return lose.Load() && !e.Notice })
		alice, aliceID, old, first := es[0].alicePC()
		lose.Store(true) // logged events lost, not the notice
		for i := range 2 {
			es[1].storeSend(aliceID, fmt.Appendf(nil, `{"type":"message","n":%d}`, i))
		}
		es[1].replacePC(alice)
		es[1].storeSend(aliceID, []byte(`{"type":"message","n":"after"}`))
		for i := range 2 {
			if f := old.next(); f.event != "message" || f.data["n"] != float64(i) || f.id == "" {
				t.Fatalf("the replaced session's event %d: %+v, want message %d", i, f, i)
			}
		}
		f := old.next()
		if f.event != "session_replaced" || f.data["session"] != first.data["session"] || f.id != "" || f.data["seq"] != 2.0 {
			t.Fatalf("the replaced session got %+v, want its session_replaced (seq 2, no id)", f)
		}
		endsReplaced(t, old, f)
	})
}
