package userlog_test

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/internal/rediskeys"
	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/internal/storetest"
	"github.com/realsync/realsync/players"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/sse"
	"github.com/realsync/realsync/store"
	"github.com/realsync/realsync/store/internal/redisx"
	"github.com/realsync/realsync/store/userlog"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// A send whose run fails after the script ran (match_found's, short of
// replicas) returns the run's error and counts the entry the cap dropped.
func TestDroppedCountedWhenTheRunFails(t *testing.T) {
	const capped = userlog.ResumeMargin + 1
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := context.Background()
		var dropped atomic.Int64
		st := storetest.Open(t, store.Config{RedisURL: b.URL, ClusterAddrs: b.ClusterAddrs, Prefix: redistest.Prefix(t), Shards: 4,
			Offline: userlog.Config{MaxLen: capped, Dropped: func(n int) { dropped.Add(int64(n)) }}})
		l, uid := st.UserLogs(), "u-"+redistest.Prefix(t)
		for range capped {
			if _, err := l.Send(ctx, uid, []byte(`{"type":"message"}`)); err != nil {
				t.Fatal(err)
			}
		}
		short := errors.New("short of replicas")
		_, err := l.SendEventOnceBy(ctx, uid, players.DirectMessageEvent{UserEventHeader: players.NewHeader(players.EventMessage, uid, time.Now()),
			Message: players.DirectMessageBody{Type: "chat", Data: json.RawMessage("0")}}, userlog.Once{},
			func(ctx context.Context, call redisx.Call) (any, error) {
				reply, err := st.Base().Runner.Run(ctx, call).Result()
				return reply, cmp.Or(err, short)
			})
		if n := st.Client().XLen(ctx, l.KeysOf(uid).Log).Val(); !errors.Is(err, short) || dropped.Load() != 1 || n != capped {
			t.Fatalf("a send whose run failed after the script: %v, %d dropped, a log of %d; want the run's error, 1, %d", err, dropped.Load(), n, capped)
		}
	})
}

// The cap drops the oldest events, counted; an ack moves one platform's
// cursor forward only, and drops what every platform with a cursor got,
// but the resume margin; an ack of another write (its seq's event is not
// the tagged one: the history's tag, another) or history changes nothing.
func TestLogCapAndAcks(t *testing.T) {
	// a cap past the resume margin, so that acks trim; seqs below are
	// relative to o (the sends' number past the margin)
	const capped, o = userlog.ResumeMargin + 100, userlog.ResumeMargin
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := context.Background()
		var dropped atomic.Int64
		prefix := redistest.Prefix(t)
		st := storetest.Open(t, store.Config{RedisURL: b.URL, ClusterAddrs: b.ClusterAddrs, Prefix: prefix, Shards: 4,
			Offline: userlog.Config{MaxLen: capped, Dropped: func(n int) { dropped.Add(int64(n)) }}})
		l, uid := st.UserLogs(), "u-"+redistest.Prefix(t)
		k := l.KeysOf(uid)
		n := capped + 50
		for i := 1; i <= n; i++ {
			seq, err := l.Send(ctx, uid, []byte(fmt.Sprintf(`{"type":"message","n":%d}`, i)))
			if err != nil || seq != int64(i) {
				t.Fatalf("send %d: seq %d, %v", i, seq, err)
			}
		}
		c := st.Client()
		if got := c.XLen(ctx, k.Log).Val(); got != int64(capped) || dropped.Load() != 50 {
			t.Fatalf("log of %d, %d dropped", got, dropped.Load())
		}
		tag := c.HGet(ctx, k.Meta, "tag").Val()
		at := func(uid string, seq int64) string { return writeTag(t, st, uid, seq) }
		tag140 := at(uid, 140)
		for _, a := range []struct {
			platform, tag string
			seq           int64
			moved         bool
		}{{"pc", at(uid, o+140), o + 140, true}, {"pc", at(uid, o+130), o + 130, false}, {"pc", "other", o + 150, false},
			{"pc", tag, o + 150, false}, {"pc", at(uid, o+149), o + 150, false}, {"pc", tag, o + 151, false},
			{"mobile", at(uid, o+145), o + 145, true}} {
			moved, err := l.Ack(ctx, uid, a.platform, a.tag, a.seq)
			if err != nil || moved != a.moved {
				t.Fatalf("ack %+v: %v %v", a, moved, err)
			}
		}
		// pc has o+140, mobile o+145: entries before o+140-ResumeMargin
		// are gone; 140 stays, the position of a resume that asks for
		// the last ResumeMargin delivered (its tag tells it from
		// another history's)
		first := c.XRangeN(ctx, k.Log, "-", "+", 1).Val()
		if len(first) != 1 || first[0].ID != "140-0" {
			t.Fatalf("first kept %v", first)
		}
		op, err := st.Sessions().OpenSession(ctx, sse.Session{UserID: uid, Platform: "pc", ID: "p.1"}, sse.Cursor{Set: true, Version: 140, Tag: tag140}, 2*o)
		if err != nil || op.Gap || op.From != 140 || len(op.Replay) == 0 || op.Replay[0].Seq != 141 {
			t.Fatalf("resume from 140, ResumeMargin behind pc's cursor: gap %v, from %d, %d events (%v)", op.Gap, op.From, len(op.Replay), err)
		}
		// the cap dropping what every platform with a cursor was
		// delivered (kept for resumes) is no loss: not counted (the log
		// holds 140..o+150, 1 011 entries: 99 more drop 140..149)
		for range 99 {
			if _, err := l.Send(ctx, uid, []byte(`{"type":"message"}`)); err != nil {
				t.Fatal(err)
			}
		}
		if first := c.XRangeN(ctx, k.Log, "-", "+", 1).Val(); len(first) != 1 || first[0].ID != "150-0" {
			t.Fatalf("first kept after the cap %v, want 150", first)
		}
		if n := dropped.Load(); n != 50 {
			t.Fatalf("%d dropped counted after the cap dropped 10 delivered events, want 50", n)
		}
		// a platform's first session starts FirstInbox behind the
		// others' lowest cursor (pc's, o+140), not at the log's oldest
		op, err = st.Sessions().OpenSession(ctx, sse.Session{UserID: uid, Platform: "web", ID: "w.1"}, sse.Cursor{}, 2*o)
		if want := int64(o + 140 - userlog.FirstInbox); err != nil || op.From != want || len(op.Replay) == 0 || op.Replay[0].Seq != want+1 {
			t.Fatalf("web's first session: from %d (want %d), %d events (%v)", op.From, want, len(op.Replay), err)
		}
		// a platform that opened (and was delivered nothing) holds back
		// the trim: what it was not delivered stays for it
		u2 := uid + "-2"
		c1 := sse.Session{UserID: u2, Platform: "console", ID: "c.1"}
		if _, err := st.Sessions().OpenSession(ctx, c1, sse.Cursor{}, 10); err != nil {
			t.Fatal(err)
		}
		if err := st.Sessions().CloseSession(ctx, c1); err != nil {
			t.Fatal(err)
		}
		for range capped {
			if _, err := l.Send(ctx, u2, []byte(`{"type":"message"}`)); err != nil {
				t.Fatal(err)
			}
		}
		if moved, err := l.Ack(ctx, u2, "pc", at(u2, capped), capped); err != nil || !moved {
			t.Fatalf("ack: %v %v", moved, err)
		}
		if first := c.XRangeN(ctx, l.KeysOf(u2).Log, "-", "+", 1).Val(); len(first) != 1 || first[0].ID != "1-0" {
			t.Fatalf("console's undelivered events trimmed: first kept %v", first)
		}
		op, err = st.Sessions().OpenSession(ctx, sse.Session{UserID: u2, Platform: "console", ID: "c.2"}, sse.Cursor{}, 10)
		if err != nil || op.From != 0 || len(op.Replay) == 0 || op.Replay[0].Seq != 1 {
			t.Fatalf("console's inbox: from %d, %d events, %v", op.From, len(op.Replay), err)
		}
		// the cap dropping what console was not delivered is a loss
		before := dropped.Load()
		if _, err := l.Send(ctx, u2, []byte(`{"type":"message"}`)); err != nil {
			t.Fatal(err)
		}
		if n := dropped.Load() - before; n != 1 {
			t.Fatalf("%d dropped counted for an event console was not delivered, want 1", n)
		}
		// one body for many users: stored once, each log refers to it,
		// each user reads it with its own id and seq; gone when it expires
		many := []string{uid + "-a", uid + "-b", uid + "-c"}
		ev := players.RoomClosedEvent{UserEventHeader: players.UserEventHeader{Type: players.EventRoomClosed, TS: time.Now().UTC().Format(time.RFC3339)},
			RoomID: "r1", Reason: rooms.ClosedByOwner}
		if err := l.SendToMany(ctx, many, ev); err != nil {
			t.Fatal(err)
		}
		bodies, err := rediskeys.Scan(ctx, st.Client(), "*"+prefix+"*:ubody:*")
		if err != nil || len(bodies) != 1 {
			t.Fatalf("bodies %v %v, want one", bodies, err)
		}
		if ttl := c.PTTL(ctx, bodies[0]).Val(); ttl <= 0 {
			t.Errorf("the body's TTL %v", ttl)
		}
		for _, u := range many {
			entries := c.XRange(ctx, l.KeysOf(u).Log, "-", "+").Val()
			if len(entries) != 1 || entries[0].Values["r"] != bodies[0] || entries[0].Values["d"] != nil {
				t.Fatalf("%s's log %v", u, entries)
			}
			o, err := st.Sessions().OpenSession(ctx, sse.Session{UserID: u, Platform: "pc", ID: "p"}, sse.Cursor{}, 10)
			if err != nil || len(o.Replay) != 1 {
				t.Fatalf("%s's inbox %+v %v", u, o, err)
			}
			var got players.RoomClosedEvent
			if err := json.Unmarshal(o.Replay[0].Data, &got); err != nil || got.UserID != u || got.Seq != 1 || got.RoomID != "r1" ||
				got.Reason != rooms.ClosedByOwner || got.Type != players.EventRoomClosed {
				t.Fatalf("%s read %s (%v)", u, o.Replay[0].Data, err)
			}
		}
		c.Del(ctx, bodies[0]) // as its expiry would
		// its entry is not read, a loss: a catch-up's gap
		if evs, gap, err := st.Sessions().UserLog(ctx, many[0], 0, c.HGet(ctx, l.KeysOf(many[0]).Meta, "tag").Val(), 10); err != nil || !gap || len(evs) != 0 {
			t.Fatalf("an expired body's entry: %v %v %v; want a gap", evs, gap, err)
		}
		for _, key := range []string{k.Log, k.Meta, k.Cursors} {
			if ttl := c.PTTL(ctx, key).Val(); ttl <= 0 {
				t.Errorf("%s: TTL %v", key, ttl)
			}
		}
	})
}

// An event expires REALSYNC_OFFLINE_TTL after it was sent, however long
// newer events keep its log alive: a session opening gets only the events
// younger than the TTL, as it does for a body stored once (which expires
// TTL after it was written). Leaving one out is a loss the client is told
// of (the snapshot's resync): a fresh opening's Lost, a resume's gap (the
// rest after its cursor given), a catch-up's gap; a resume from past the
// expired events is whole. The opening's position (From) moves past the
// expired events before every kept one, and Past names the last one after
// every kept one, so that the stream's position passes them. The openings
// count what they found expired (Config.Expired: the metric), the
// catch-ups nothing (their client resumes into an opening that counts).
func TestEventsExpireByTheirAge(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := context.Background()
		var counted atomic.Int64
		st := storetest.Open(t, store.Config{RedisURL: b.URL, ClusterAddrs: b.ClusterAddrs, Prefix: redistest.Prefix(t), Shards: 4,
			Offline: userlog.Config{TTL: time.Hour, Expired: func(n int) { counted.Add(int64(n)) }}})
		count := func(step string, want int64) {
			t.Helper()
			if n := counted.Load(); n != want {
				t.Fatalf("after %s: %d events counted expired, want %d", step, n, want)
			}
		}
		l, now := st.UserLogs(), time.Now().UTC()
		// inbox sends events aged ages to a new user; returns the user and
		// its log's entries
		inbox := func(uid string, ages ...time.Duration) []redis.XMessage {
			t.Helper()
			for _, age := range ages {
				ev := fmt.Sprintf(`{"type":"message","ts":%q}`, now.Add(-age).Format(time.RFC3339Nano))
				if _, err := l.Send(ctx, uid, []byte(ev)); err != nil {
					t.Fatal(err)
				}
			}
			xs, err := st.Client().XRange(ctx, l.KeysOf(uid).Log, "-", "+").Result()
			if err != nil || len(xs) != len(ages) {
				t.Fatalf("the log: %v, %v", xs, err)
			}
			return xs
		}
		seqsOf := func(o sse.UserOpening) string {
			var seqs []int64
			for _, e := range o.Replay {
				seqs = append(seqs, e.Seq)
			}
			return fmt.Sprint(seqs)
		}
		const old, young = 61 * time.Minute, 59 * time.Minute
		uid := "u-age"
		xs := inbox(uid, 2*time.Hour, old, young, 0)
		o, err := st.Sessions().OpenSession(ctx, sse.Session{UserID: uid, Platform: "pc", ID: "p.1"}, sse.Cursor{}, 10)
		if err != nil || seqsOf(o) != "[3 4]" || !o.Lost || o.From != 2 || o.Tag != userlog.TagOf(xs[1], "") || o.Past != 0 {
			t.Fatalf("replayed seqs %v, lost %v, from %d-%s, past %d, %v; want [3 4] (the two younger than the TTL), lost, from 2 (past the expired), no past",
				seqsOf(o), o.Lost, o.From, o.Tag, o.Past, err)
		}
		count("the first opening", 2)
		for _, c := range []struct {
			from      int
			gap, lost bool
		}{{1, true, true}, {2, false, false}} {
			cur := sse.Cursor{Set: true, Version: int64(c.from), Tag: userlog.TagOf(xs[c.from-1], "")}
			o, err := st.Sessions().OpenSession(ctx, sse.Session{UserID: uid, Platform: "mobile", ID: fmt.Sprint("m.", c.from)}, cur, 10)
			if err != nil || seqsOf(o) != "[3 4]" || o.Gap != c.gap || o.Lost != c.lost || o.From != 2 {
				t.Errorf("resume from %d: seqs %v, gap %v, lost %v, from %d, %v; want [3 4], gap and lost %v, from 2", c.from, seqsOf(o), o.Gap, o.Lost, o.From, err, c.gap)
			}
			evs, gap, err := st.Sessions().UserLog(ctx, uid, cur.Version, cur.Tag, 10)
			if err != nil || gap != c.gap || !gap && len(evs) != 2 {
				t.Errorf("catch-up from %d: %d events, gap %v, %v; want gap %v", c.from, len(evs), gap, err, c.gap)
			}
		}
		count("the resumes from 1 and 2 (and their catch-ups)", 3)
		// times out of their order (a room's close stored before a message
		// logged first, or instances' clocks apart): the position moves
		// past the expired events before every kept one only, and Past
		// names the last expired one after them
		xs = inbox("u-age-mixed", old, young, old, young, old)
		o, err = st.Sessions().OpenSession(ctx, sse.Session{UserID: "u-age-mixed", Platform: "pc", ID: "p.3"}, sse.Cursor{}, 10)
		if err != nil || seqsOf(o) != "[2 4]" || !o.Lost || o.From != 1 || o.Past != 5 || o.PastTag != userlog.TagOf(xs[4], "") {
			t.Fatalf("old, young, old, young, old: seqs %v, lost %v, from %d, past %d-%s, %v; want [2 4], lost, from 1, past 5",
				seqsOf(o), o.Lost, o.From, o.Past, o.PastTag, err)
		}
		inbox("u-age-mixed2", old, young, old, young)
		o, err = st.Sessions().OpenSession(ctx, sse.Session{UserID: "u-age-mixed2", Platform: "pc", ID: "p.4"}, sse.Cursor{}, 10)
		if err != nil || seqsOf(o) != "[2 4]" || o.From != 1 || o.Past != 0 {
			t.Fatalf("old, young, old, young: seqs %v, from %d, past %d, %v; want [2 4], from 1, no past", seqsOf(o), o.From, o.Past, err)
		}
		// an inbox of expired events only: the opening's position passes
		// them, and once it is delivered (as the stream does after its
		// snapshot) the platform's next opening has lost nothing
		inbox("u-age-old", 2*time.Hour, 2*time.Hour)
		ss := sse.Session{UserID: "u-age-old", Platform: "pc", ID: "p.2"}
		for i, lost := range []bool{true, false} {
			o, err := st.Sessions().OpenSession(ctx, ss, sse.Cursor{}, 10)
			if err != nil || len(o.Replay) != 0 || o.Lost != lost || o.From != 2 || o.Past != 0 {
				t.Fatalf("opening %d of an expired inbox: %d events, lost %v, from %d, past %d, %v; want none, lost %v, from 2", i+1, len(o.Replay), o.Lost, o.From, o.Past, err, lost)
			}
			if err := st.Sessions().Delivered(ctx, ss, o.Tag, o.From); err != nil {
				t.Fatal(err)
			}
		}
		count("the openings of the mixed and the expired inboxes", 10)
	})
}

// A direct message sent with an Idempotency-Key reaches its recipient's
// log once: the same key and message again answer the first send (its seq
// and time) and log nothing; the key with another message is refused;
// another sender's key of the same name is its own. The inbox remembers
// its last rooms.MessageKeysKept keys, and both key sets expire the
// window after the last keyed send.
func TestSendEventOnce(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := context.Background()
		st := openLogStore(t, store.Config{RedisURL: b.URL, ClusterAddrs: b.ClusterAddrs})
		l, uid := st.UserLogs(), "u-"+redistest.Prefix(t)
		k, c := l.KeysOf(uid), st.Client()
		ev := func(n int) any {
			return players.DirectMessageEvent{UserEventHeader: players.NewHeader(players.EventMessage, uid, time.Now()),
				Message: players.DirectMessageBody{Type: "chat", Data: json.RawMessage(fmt.Sprint(n))}}
		}
		once := func(key, digest string, at int64) userlog.Once {
			return userlog.Once{Key: key, Digest: digest, AtMs: at, Window: rooms.MessageKeyWindow, Kept: rooms.MessageKeysKept}
		}
		first, err := l.SendEventOnce(ctx, uid, ev(1), once("k1 alice", "d1", 1000))
		if err != nil || first.Seq != 1 || first.AtMs != 1000 || first.Tag == "" {
			t.Fatalf("first send: %+v, %v", first, err)
		}
		// a known key's send writes nothing (a direct message's
		// retry), or with Renew the key sets' expiry: a WAIT after
		// it (match_found's) waits for the first send's write too
		for _, renew := range []bool{false, true} {
			for _, key := range []string{k.Seen, k.SeenAt} {
				c.PExpire(ctx, key, time.Minute)
			}
			o := once("k1 alice", "d1", 1500)
			o.Renew = renew
			if again, err := l.SendEventOnce(ctx, uid, ev(1), o); err != nil || again != first {
				t.Fatalf("the first send again (renew %v): %+v, %v; want the first's %+v (its tag read from its entry)", renew, again, err, first)
			}
			for _, key := range []string{k.Seen, k.SeenAt} {
				if ttl := c.PTTL(ctx, key).Val(); (ttl > time.Minute) != renew {
					t.Errorf("%s expires in %v after a known key's send (renew %v), want %v", key, ttl, renew, map[bool]string{false: "a minute, untouched", true: "renewed to " + rooms.MessageKeyWindow.String()}[renew])
				}
			}
		}
		for _, tc := range []struct {
			name    string
			o       userlog.Once
			seq, at int64
			err     error
			logged  int64
		}{
			{"the same again", once("k1 alice", "d1", 2000), 1, 1000, nil, 1},
			{"another message", once("k1 alice", "d2", 2000), 0, 0, rooms.ErrKeyReused, 1},
			{"bob's k1", once("k1 bob", "d1", 3000), 2, 3000, nil, 2},
			{"no key", once("", "", 4000), 3, 4000, nil, 3},
			{"no key again", once("", "", 5000), 4, 5000, nil, 4},
		} {
			sent, err := l.SendEventOnce(ctx, uid, ev(2), tc.o)
			seq, at := sent.Seq, sent.AtMs
			if seq != tc.seq || at != tc.at || !errors.Is(err, tc.err) || c.XLen(ctx, k.Log).Val() != tc.logged {
				t.Errorf("%s: seq %d at %d err %v, %d logged; want %d %d %v %d", tc.name, seq, at, err, c.XLen(ctx, k.Log).Val(), tc.seq, tc.at, tc.err, tc.logged)
			}
		}
		for i := range rooms.MessageKeysKept + 5 {
			if _, err := l.SendEventOnce(ctx, uid, ev(i), once(fmt.Sprint("m", i, " carol"), "d", time.Now().UnixMilli())); err != nil {
				t.Fatal(err)
			}
		}
		nh, nz := c.HLen(ctx, k.Seen).Val(), c.ZCard(ctx, k.SeenAt).Val()
		if nh != rooms.MessageKeysKept || nz != rooms.MessageKeysKept {
			t.Fatalf("keys remembered: %d and %d, want %d", nh, nz, rooms.MessageKeysKept)
		}
		if sent, _ := l.SendEventOnce(ctx, uid, ev(1), once("k1 alice", "d1", 6000)); sent.Seq <= 4 {
			t.Errorf("alice's k1, forgotten, answered seq %d: want a new send", sent.Seq)
		}
		// a key older than the window is forgotten, whether or not a
		// send dropped it yet
		key := fmt.Sprint("m", rooms.MessageKeysKept+4, " carol")
		carols, _ := l.SendEventOnce(ctx, uid, ev(1), once(key, "d", 7000))
		old := float64(time.Now().Add(-rooms.MessageKeyWindow - time.Second).UnixMilli())
		if err := c.ZAddXX(ctx, k.SeenAt, redis.Z{Score: old, Member: key}).Err(); err != nil {
			t.Fatal(err)
		}
		if sent, err := l.SendEventOnce(ctx, uid, ev(1), once(key, "d", 8000)); err != nil || sent.Seq <= carols.Seq || sent.AtMs != 8000 {
			t.Errorf("carol's newest key past the window: %+v (its first %+v), %v; want a new send", sent, carols, err)
		}
		for _, key := range []string{k.Seen, k.SeenAt} {
			if ttl := c.PTTL(ctx, key).Val(); ttl <= 0 || ttl > rooms.MessageKeyWindow {
				t.Errorf("%s expires in %v, want within %v", key, ttl, rooms.MessageKeyWindow)
			}
		}
	})
}

// A client that stopped reading (a suspended app, a half-open
// connection) while its stream wrote many events, all recorded delivered,
// resumes from the last id it read and gets every one of them. With a
// resume margin of 100 a tester's client lagging 101 events got a
// snapshot (resync) and none of them, 100 still in the log.
func TestResumeAfterManyWrittenUnread(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := context.Background()
		st := storetest.Open(t, store.Config{RedisURL: b.URL, ClusterAddrs: b.ClusterAddrs, Prefix: redistest.Prefix(t), Shards: 4})
		l, uid := st.UserLogs(), "u-"+redistest.Prefix(t)
		const unread = 300
		var read sse.Cursor // the client read the first
		for i := range unread + 1 {
			seq, err := l.Send(ctx, uid, []byte(`{"type":"message"}`))
			if err != nil {
				t.Fatal(err)
			}
			tag := writeTag(t, st, uid, seq)
			if i == 0 {
				read = sse.Cursor{Set: true, Version: seq, Tag: tag}
			}
			// the stream wrote it: delivered, as far as the server knows
			if moved, err := l.Ack(ctx, uid, "pc", tag, seq); err != nil || !moved {
				t.Fatalf("ack %d: %v %v", i, moved, err)
			}
		}
		o, err := st.Sessions().OpenSession(ctx, sse.Session{UserID: uid, Platform: "pc", ID: "p.2"}, read, 1000)
		if err != nil || o.Gap || o.From != 1 || len(o.Replay) == 0 || o.Replay[0].Seq != 2 {
			t.Fatalf("resume from 1 after %d delivered unread: gap %v, from %d, %d events (%v)", unread, o.Gap, o.From, len(o.Replay), err)
		}
	})
}

// writeTag is the tag of the write of uid's logged event seq (its entry's
// field g).
func writeTag(t *testing.T, st *store.Store, uid string, seq int64) string {
	t.Helper()
	id := fmt.Sprintf("%d-0", seq)
	xs, err := st.Client().XRange(context.Background(), st.UserLogs().KeysOf(uid).Log, id, id).Result()
	if err != nil || len(xs) != 1 {
		t.Fatalf("%s's entry %s: %v %v", uid, id, xs, err)
	}
	g, _ := xs[0].Values["g"].(string)
	if g == "" {
		t.Fatalf("%s's entry %s has no tag: %v", uid, id, xs[0].Values)
	}
	return g
}

// olderEntryReader is how the release before the tag per write read a
// log entry (session_open.lua's entry(), as it was): the first field's
// value, the event JSON (d) or, after "\1", a shared body's key (r). Its
// instances run it against the entries a newer one writes during a
// rolling upgrade.
const olderEntryReader = `local out = {}
for _, e in ipairs(redis.call('XRANGE', KEYS[1], '-', '+')) do
  if e[2][1] == 'r' then out[#out + 1] = '\1' .. e[2][2] else out[#out + 1] = e[2][2] end
end
return out`

// During a rolling upgrade an older instance opens personal streams on
// logs a newer one writes: its reader takes an entry's first field as
// the event (or "r", the shared body's key), so the write's tag (g) comes
// after it. With g first, the older instance sent the tag as the event's
// data.
func TestOlderReleaseReadsANewerLog(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := context.Background()
		st := openLogStore(t, store.Config{RedisURL: b.URL, ClusterAddrs: b.ClusterAddrs})
		l, uid := st.UserLogs(), "u-"+redistest.Prefix(t)
		if _, err := l.Send(ctx, uid, []byte(`{"type":"message","n":1}`)); err != nil {
			t.Fatal(err)
		}
		ev := players.RoomClosedEvent{UserEventHeader: players.UserEventHeader{Type: players.EventRoomClosed, TS: time.Now().UTC().Format(time.RFC3339)},
			RoomID: "r1", Reason: rooms.ClosedByOwner}
		if err := l.SendToMany(ctx, []string{uid}, ev); err != nil {
			t.Fatal(err)
		}
		got, err := st.Client().Eval(ctx, olderEntryReader, []string{l.KeysOf(uid).Log}).StringSlice()
		if err != nil || len(got) != 2 {
			t.Fatalf("the older reader: %q %v", got, err)
		}
		if got[0] != `{"type":"message","n":1,"seq":1}` {
			t.Errorf("the older reader's event 1: %q, want the event JSON", got[0])
		}
		if key, ok := strings.CutPrefix(got[1], userlog.RefMark); !ok || !strings.Contains(key, ":ubody:") || st.Client().Exists(ctx, key).Val() != 1 {
			t.Errorf("the older reader's event 2: %q, want the shared body's key", got[1])
		}
		for seq := int64(1); seq <= 2; seq++ { // and the newer reader's tags
			writeTag(t, st, uid, seq)
		}
		evs, gap, err := st.Sessions().UserLog(ctx, uid, 0, st.Client().HGet(ctx, l.KeysOf(uid).Meta, "tag").Val(), 10)
		if err != nil || gap || len(evs) != 2 || evs[0].Tag != writeTag(t, st, uid, 1) || evs[1].Tag != writeTag(t, st, uid, 2) {
			t.Fatalf("the newer reader: %+v %v %v", evs, gap, err)
		}
		o, err := st.Sessions().OpenSession(ctx, sse.Session{UserID: uid, Platform: "pc", ID: "p"}, sse.Cursor{}, 10)
		if err != nil || len(o.Replay) != 2 || string(o.Replay[0].Data) != got[0] || o.Replay[0].Tag != evs[0].Tag ||
			o.Replay[1].Tag != evs[1].Tag || !strings.Contains(string(o.Replay[1].Data), `"roomId":"r1"`) {
			t.Fatalf("the newer opening: %+v %v", o, err)
		}
	})
}

// A logged event keeps what the user sent as they sent it: a message of
// 4 KiB of '<' (rooms.MaxMessageData) is logged at about that size, and
// read back the same. json.Marshal's HTML escaping logged each '<' as the
// six bytes of \u003c: 24.7 KB a message in a tester's run, every inbox
// up to 6 times what its limits say (docs/SECURITY.md).
func TestLoggedEventKeepsTheDataAsSent(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := context.Background()
		st := openLogStore(t, store.Config{RedisURL: b.URL, ClusterAddrs: b.ClusterAddrs})
		l, uid := st.UserLogs(), "u-"+redistest.Prefix(t)
		data := json.RawMessage(`"` + strings.Repeat("<&>", (rooms.MaxMessageData-2)/3) + `"`)
		ev := func(to string) players.DirectMessageEvent {
			return players.DirectMessageEvent{UserEventHeader: players.NewHeader(players.EventMessage, to, time.Now()),
				Message: players.DirectMessageBody{Type: "chat", Data: data}}
		}
		if _, err := l.SendEvent(ctx, uid, ev(uid)); err != nil {
			t.Fatal(err)
		}
		if err := l.SendToMany(ctx, []string{uid}, ev("")); err != nil { // its body stored once, for many
			t.Fatal(err)
		}
		o, err := st.Sessions().OpenSession(ctx, sse.Session{UserID: uid, Platform: "pc", ID: "p"}, sse.Cursor{}, 10)
		if err != nil || len(o.Replay) != 2 {
			t.Fatalf("inbox %+v %v", o, err)
		}
		for i, e := range o.Replay {
			var got players.DirectMessageEvent
			if err := json.Unmarshal(e.Data, &got); err != nil || string(got.Message.Data) != string(data) {
				t.Fatalf("event %d read back: %.80s… (%v)", i+1, e.Data, err)
			}
			if n := len(e.Data); n > len(data)+300 {
				t.Errorf("event %d: %d bytes for %d bytes of data", i+1, n, len(data))
			}
		}
	})
}

// xranges is a go-redis hook that counts the XRANGE commands the client
// sends itself (not those of scripts) and the largest COUNT they ask for.
type xranges struct{ n, most atomic.Int64 }

// hook is h as a go-redis hook.
func (h *xranges) hook() redistest.Around {
	return func(_ context.Context, cmds []redis.Cmder, send func() error) error {
		for _, c := range cmds {
			h.record(c)
		}
		return send()
	}
}
func (h *xranges) record(cmd redis.Cmder) {
	a := cmd.Args()
	if cmd.Name() != "xrange" {
		return
	}
	h.n.Add(1)
	count := int64(-1) // none: the whole range
	for i := range a {
		if s, _ := a[i].(string); strings.EqualFold(s, "count") && i+1 < len(a) {
			count, _ = strconv.ParseInt(fmt.Sprint(a[i+1]), 10, 64)
		}
	}
	for cur := h.most.Load(); (count < 0 || count > cur) && cur >= 0 && !h.most.CompareAndSwap(cur, count); cur = h.most.Load() {
	}
}

// A replay larger than one page comes whole and in order, from a stream
// opened without a cursor and from one that resumes, bodies stored once
// for many users resolved; a catch-up reads as many pages; the opening's
// script carries 64 KiB of it at most (the rest is read in pages). A
// tester's 1 000 entries of 24.7 KB came in one script reply: 0.2 s of
// Redis an open, 4-6 s with 20 opens at once.
func TestReplayReadInPages(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := context.Background()
		st := openLogStore(t, store.Config{RedisURL: b.URL, ClusterAddrs: b.ClusterAddrs})
		hook := &xranges{}
		st.Client().AddHook(hook.hook())
		l, uid := st.UserLogs(), "u-"+redistest.Prefix(t)
		const n = 300
		var err error
		body := strings.Repeat("x", 1000)
		for i := 1; i <= n; i++ {
			to := uid
			if i%50 == 0 {
				to = "" // stored once for many
			}
			ev := players.DirectMessageEvent{UserEventHeader: players.NewHeader(players.EventMessage, to, time.Now()),
				Message: players.DirectMessageBody{Type: "chat", Data: json.RawMessage(fmt.Sprintf(`{"n":%d,"b":"%s"}`, i, body))}}
			if to == "" {
				err = l.SendToMany(ctx, []string{uid}, ev)
			} else {
				_, err = l.SendEvent(ctx, uid, ev)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		check := func(what string, evs []sse.UserEvent, from int) {
			t.Helper()
			if len(evs) != n-from {
				t.Fatalf("%s: %d events, want %d", what, len(evs), n-from)
			}
			for i, e := range evs {
				var got players.DirectMessageEvent
				var data struct{ N int }
				if err := json.Unmarshal(e.Data, &got); err != nil || json.Unmarshal(got.Message.Data, &data) != nil ||
					e.Seq != int64(from+1+i) || data.N != from+1+i || got.Seq != e.Seq || e.Tag == "" {
					t.Fatalf("%s: event %d: seq %d tag %q, %.60s (%v)", what, i, e.Seq, e.Tag, e.Data, err)
				}
			}
		}
		o, err := st.Sessions().OpenSession(ctx, sse.Session{UserID: uid, Platform: "pc", ID: "p"}, sse.Cursor{}, 10)
		if err != nil {
			t.Fatal(err)
		}
		check("opened without a cursor", o.Replay, 0)
		at := o.Replay[49]
		o, err = st.Sessions().OpenSession(ctx, sse.Session{UserID: uid, Platform: "web", ID: "w"},
			sse.Cursor{Set: true, Version: at.Seq, Tag: at.Tag}, 10)
		if err != nil || o.Gap {
			t.Fatalf("resume: gap %v, %v", o.Gap, err)
		}
		check("resumed after 50", o.Replay, 50)
		evs, gap, err := st.Sessions().UserLog(ctx, uid, at.Seq, at.Tag, 10)
		if err != nil || gap {
			t.Fatalf("catch-up: gap %v, %v", gap, err)
		}
		check("caught up after 50", evs, 50)
		// 300 entries of 1 KB: the openings' scripts stopped at 64 KiB,
		// the rest read in pages of 64, as the catch-up
		if n, most := hook.n.Load(), hook.most.Load(); n < 3 || most < 0 || most > 65 {
			t.Errorf("%d reads of the log by the client, the largest COUNT %d (-1: none): want pages of 64", n, most)
		}
	})
}

// An opening whose replay pages find the inbox moved (a full log, new
// events trimming the entries the script had read) still opens, its
// replay whole up to where the log still holds it (the new events come
// live, past a gap the stream catches up on); and one whose page read
// fails gives its session back, so the client's retry is not refused
// under reject-new. A reviewer's find: the first answered 503 with the
// session kept, the retry then refused SESSION_EXISTS until its lease
// lapsed.
func TestOpeningWhoseReplayPagesFail(t *testing.T) {
	ctx := context.Background()
	st := openLogStore(t, store.Config{RedisURL: redistest.StandaloneURL(t), SessionPolicy: players.PolicyRejectNew,
		Offline: userlog.Config{MaxLen: 200}})
	uid := "u-" + redistest.Prefix(t)
	send := func(from, to int) error {
		for i := from; i <= to; i++ {
			ev := players.DirectMessageEvent{UserEventHeader: players.NewHeader(players.EventMessage, uid, time.Now()),
				Message: players.DirectMessageBody{Type: "chat", Data: json.RawMessage(fmt.Sprintf(`{"n":%d,"b":"%s"}`, i, strings.Repeat("x", 4000)))}}
			if _, err := st.UserLogs().SendEvent(ctx, uid, ev); err != nil {
				return err
			}
		}
		return nil
	}
	if err := send(1, 200); err != nil {
		t.Fatal(err)
	}
	h := &redistest.BeforePipeline{Name: "xrange", F: func() error { return send(201, 220) }} // the 20 oldest trimmed
	h.Arm()
	st.Client().AddHook(h)
	o, err := st.Sessions().OpenSession(ctx, sse.Session{UserID: uid, Platform: "pc", ID: "s1"}, sse.Cursor{}, 10)
	if err != nil {
		t.Fatalf("open while the inbox moved: %v", err)
	}
	if len(o.Replay) == 0 || o.Replay[0].Seq != 1 {
		t.Fatalf("replay of %d from %v", len(o.Replay), o.Replay)
	}
	for i, e := range o.Replay {
		if e.Seq != int64(1+i) || e.Seq > 200 {
			t.Fatalf("replay entry %d: seq %d", i, e.Seq)
		}
	}
	if err := st.Sessions().CloseSession(ctx, sse.Session{UserID: uid, Platform: "pc", ID: "s1"}); err != nil {
		t.Fatal(err)
	}
	h.F = func() error { return errors.New("connection reset") }
	h.Arm()
	if _, err := st.Sessions().OpenSession(ctx, sse.Session{UserID: uid, Platform: "pc", ID: "s2"}, sse.Cursor{}, 10); err == nil {
		t.Fatal("an open whose page read failed succeeded")
	}
	if _, err := st.Sessions().OpenSession(ctx, sse.Session{UserID: uid, Platform: "pc", ID: "s3"}, sse.Cursor{}, 10); err != nil {
		t.Fatalf("the retry: %v (the failed open's session was kept)", err)
	}
}

// The pages of an opening's replay go on from the last entry read, its
// write checked again: a failover that lost the log's last 30 writes
// while the pages were read (simulated: the log and its meta set back to
// 10), then 20 new writes of seqs 11 to 30, end the replay at what the
// script had read (the old 1 to 16), never the new history's 17 on,
// whose 11 to 16 it would skip: the stream catches up from there and
// finds the gap. A reviewer's find: the pages spliced the new 17..30 onto
// the old 1..16, and the stream's ack moved the platform's cursor past
// the new 11..16, never delivered.
func TestReplayPagesStopAtARewrittenHistory(t *testing.T) {
	ctx := context.Background()
	st := openLogStore(t, store.Config{RedisURL: redistest.StandaloneURL(t)})
	uid := "u-" + redistest.Prefix(t)
	send := func(from, to int, what string) error {
		for i := from; i <= to; i++ {
			ev := players.DirectMessageEvent{UserEventHeader: players.NewHeader(players.EventMessage, uid, time.Now()),
				Message: players.DirectMessageBody{Type: "chat", Data: json.RawMessage(fmt.Sprintf(`{"n":"%s%d","b":"%s"}`, what, i, strings.Repeat("x", 4000)))}}
			if _, err := st.UserLogs().SendEvent(ctx, uid, ev); err != nil {
				return err
			}
		}
		return nil
	}
	if err := send(1, 40, "old"); err != nil {
		t.Fatal(err)
	}
	k, c := st.UserLogs().KeysOf(uid), st.Client()
	h := &redistest.BeforePipeline{Name: "xrange", F: func() error { // the failover: the promoted replica had 1..10
		xs, err := c.XRange(ctx, k.Log, "-", "10-0").Result()
		if err != nil {
			return err
		}
		c.Del(ctx, k.Log)
		for _, x := range xs {
			var vals []any
			for _, f := range []string{"d", "r", "g"} {
				if v, ok := x.Values[f]; ok {
					vals = append(vals, f, v)
				}
			}
			c.XAdd(ctx, &redis.XAddArgs{Stream: k.Log, ID: x.ID, Values: vals})
		}
		c.HSet(ctx, k.Meta, "seq", 10)
		return send(11, 30, "new")
	}}
	h.Arm()
	c.AddHook(h)
	o, err := st.Sessions().OpenSession(ctx, sse.Session{UserID: uid, Platform: "pc", ID: "p"}, sse.Cursor{}, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Replay) == 0 || o.Replay[len(o.Replay)-1].Seq >= o.Seq {
		t.Fatalf("replay of %d to seq %d: want it short", len(o.Replay), o.Seq)
	}
	for i, e := range o.Replay {
		var ev players.DirectMessageEvent
		var d struct{ N string }
		if json.Unmarshal(e.Data, &ev) != nil || json.Unmarshal(ev.Message.Data, &d) != nil || e.Seq != int64(i+1) || d.N != fmt.Sprint("old", i+1) {
			t.Fatalf("replay entry %d: seq %d %q, want the old history's %d", i, e.Seq, d.N, i+1)
		}
	}
}

// openLogStore opens a store as cfg says, on the test's own prefix and 4
// shards, closed with the test.
func openLogStore(t *testing.T, cfg store.Config) *store.Store {
	t.Helper()
	cfg.Prefix, cfg.Shards = redistest.Prefix(t), 4
	st := storetest.Open(t, cfg)
	return st
}

// A log longer than the opening instance's cap (written by an instance of
// another cap during a rollout, or before REALSYNC_OFFLINE_MAX was
// lowered) is replayed up to the cap to a stream opened without a
// cursor, and a catch-up from there reads on. A reviewer's find: the
// pages after the script's stopped at the cap's check, the replay was 65
// events and the catch-up a gap, every resume then another snapshot.
func TestLogLongerThanTheCapReplaysTheCap(t *testing.T) {
	ctx := context.Background()
	url, prefix := redistest.StandaloneURL(t), redistest.Prefix(t)
	open := func(maxLen int) *store.Store { // two instances of one deployment
		st := storetest.Open(t, store.Config{RedisURL: url, Prefix: prefix, Shards: 4, Offline: userlog.Config{MaxLen: maxLen}})
		return st
	}
	big, small := open(400), open(200)
	uid := "u-" + prefix
	for range 400 {
		if _, err := big.UserLogs().SendEvent(ctx, uid, players.NewHeader("x", uid, time.Now())); err != nil {
			t.Fatal(err)
		}
	}
	o, err := small.Sessions().OpenSession(ctx, sse.Session{UserID: uid, Platform: "pc", ID: "p"}, sse.Cursor{}, 10)
	if err != nil || len(o.Replay) != 200 || o.Replay[0].Seq != 1 || o.Replay[199].Seq != 200 {
		t.Fatalf("replay of %d events (%v), want 1..200: the cap", len(o.Replay), err)
	}
	last := o.Replay[199]
	evs, gap, err := small.Sessions().UserLog(ctx, uid, last.Seq, last.Tag, 10)
	if err != nil || gap || len(evs) != 200 || evs[0].Seq != 201 {
		t.Fatalf("the catch-up after it: %d events, gap %v, %v; want 201..400", len(evs), gap, err)
	}
}
