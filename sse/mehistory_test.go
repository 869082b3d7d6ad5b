package sse_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/internal/wait"
	"github.com/realsync/realsync/players"
	"github.com/realsync/realsync/sse"
	"github.com/realsync/realsync/store"
)

// A personal stream that wrote an event a failover then lost (simulated:
// the user's log, meta and cursors set back to what the promoted replica
// holds, up to 2) gets the new history's event of the same seq live: it
// ends (gap) rather than drop it as written already, and its client,
// resuming with the lost event's id, gets a snapshot (resync) then the
// new 3 and 4. With one tag per history the new 3 had the lost one's id:
// the stream dropped it and wrote 4, and the new 3 never reached the
// client.
func TestPersonalStreamNoticesAChangedHistory(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		m := openBobsStream(t, b)
		e, st, cl, ctx := m.e, m.st, m.cl, m.ctx
		send := func(n int) { t.Helper(); m.send(t, n) }
		lost := cl.all()[3]
		k := st.UserLogs().KeysOf(bob.ID)
		wait.Until(t, "3 acknowledged", func() bool { return st.Client().HGet(ctx, k.Cursors, "web").Val() == "3" })

		setBack(t, st, bob.ID, 2)
		send(30) // the new 3
		send(4)
		m.endedByGap(t, "the stream that wrote the lost 3", 4)

		cl2 := newClient()
		done2 := make(chan error, 1)
		go func() { done2 <- e.hub.ServeMe(ctx, cl2, bob, "web", sse.ParseCursor(lost.ID)) }()
		wait.Until(t, "the resume's snapshot and events", func() bool { return len(cl2.all()) >= 3 })
		fs := cl2.all()
		if fs[0].Type != players.EventSnapshot || !strings.Contains(fs[0].Data, `"resync":true`) ||
			!strings.Contains(fs[1].Data, `"data":30`) || !strings.Contains(fs[2].Data, `"data":4`) ||
			!strings.HasPrefix(fs[1].ID, "3-") || fs[1].ID == lost.ID {
			t.Fatalf("resume from the lost %s: %+v; want a snapshot (resync), the new 3 (another id), 4", lost.ID, fs)
		}
		m.cancel()
		awaitEnd(t, done2, "the resumed stream")
	})
}

// bobsStream is bob's personal stream (platform web) on a hub of its own,
// which was sent direct messages 1, 2 and 3 and wrote them.
type bobsStream struct {
	e      *env
	st     *store.Store
	rec    *recorder
	cl     *client
	done   chan error
	ctx    context.Context
	cancel context.CancelFunc // ends the streams
}

func openBobsStream(t *testing.T, b redistest.Backend) *bobsStream {
	m := newBobs(t, b)
	go func() { m.done <- m.e.hub.ServeMe(m.ctx, m.cl, bob, "web", sse.Cursor{}) }()
	wait.Until(t, "the personal stream opened", func() bool { return len(m.cl.all()) > 0 })
	for n := 1; n <= 3; n++ {
		m.send(t, n)
	}
	wait.Until(t, "3 written", func() bool { return len(m.cl.all()) == 4 })
	return m
}

// newBobs is a hub of its own, its store's sessions serving bob's
// personal streams, no stream open yet.
func newBobs(t *testing.T, b redistest.Backend) *bobsStream {
	m := &bobsStream{rec: newRecorder(), cl: newClient(), done: make(chan error, 1)}
	m.e = newEnv(t, b, func(c *sse.Config) {
		m.st = c.Source.(*store.Store)
		c.Metrics, c.Users = m.rec, m.st.Sessions()
	})
	m.ctx, m.cancel = context.WithCancel(context.Background())
	t.Cleanup(m.cancel)
	return m
}

// send sends bob a direct message whose data is n.
func (m *bobsStream) send(t *testing.T, n int) {
	t.Helper()
	dm := players.DirectMessageEvent{UserEventHeader: players.NewHeader(players.EventMessage, bob.ID, time.Now()),
		From: players.Sender{Server: true}, Message: players.DirectMessageBody{Type: "n", Data: fmt.Appendf(nil, "%d", n)}}
	if err := m.st.Sessions().Send(m.ctx, bob.ID, dm); err != nil {
		t.Fatal(err)
	}
}

// endedByGap fails unless the stream ends by a gap, having written no
// frame past its first written.
func (m *bobsStream) endedByGap(t *testing.T, what string, written int) {
	t.Helper()
	var ended bool
	wait.Until(t, what+" ended, or wrote on", func() bool {
		select {
		case <-m.done:
			ended = true
		default:
		}
		return ended || len(m.cl.all()) > written
	})
	if _, why, _, _ := m.rec.snapshot(); !ended || why["me "+sse.EndGap] != 1 {
		t.Fatalf("%s: ended %v (%v), wrote %+v; want it ended by a gap", what, ended, why, m.cl.all()[written:])
	}
}

// setBack makes uid's log, meta and cursors what a replica that had the
// log up to seq holds once promoted: the entries after seq gone, the
// meta's seq seq, no cursor past it.
func setBack(t *testing.T, st *store.Store, uid string, seq int64) {
	t.Helper()
	ctx := context.Background()
	k := st.UserLogs().KeysOf(uid)
	c := st.Client()
	kept, err := c.XRange(ctx, k.Log, "-", fmt.Sprintf("%d-0", seq)).Result()
	if err != nil {
		t.Fatal(err)
	}
	cur, err := c.HGetAll(ctx, k.Cursors).Result()
	if err != nil {
		t.Fatal(err)
	}
	p := c.TxPipeline()
	p.Del(ctx, k.Log)
	for _, x := range kept {
		var vs []any
		for _, f := range []string{"d", "r", "g"} { // in their order (user_send.lua)
			if v, ok := x.Values[f]; ok {
				vs = append(vs, f, v)
			}
		}
		p.XAdd(ctx, &redis.XAddArgs{Stream: k.Log, ID: x.ID, Values: vs})
	}
	p.PExpire(ctx, k.Log, time.Hour)
	p.HSet(ctx, k.Meta, "seq", seq)
	for platform, v := range cur {
		if n, _ := strconv.ParseInt(v, 10, 64); n > seq {
			p.HSet(ctx, k.Cursors, platform, seq)
		}
	}
	if _, err := p.Exec(ctx); err != nil {
		t.Fatal(err)
	}
}

// A personal stream open while its user's log expired (no event, no
// opening within REALSYNC_OFFLINE_TTL: simulated, the log, meta and
// cursors deleted as their expiry would) gets the new history's events
// from 1 on, below the seq it wrote last: the first ends it (gap), as a
// changed history, and its client's resume gets a snapshot (resync) then
// the new event. Dropped as written already, they never reached the
// client (until the new history reached the stream's seq). Late messages
// of the events it wrote (their tags) are still dropped.
func TestPersonalStreamNoticesAnExpiredLog(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		m := openBobsStream(t, b)
		e, st, cl, ctx := m.e, m.st, m.cl, m.ctx
		send := func(n int) { t.Helper(); m.send(t, n) }
		// late messages of events written (as after a catch-up) are
		// dropped: 4 comes next
		for _, f := range cl.all()[2:4] {
			seq, tag, _ := strings.Cut(f.ID, "-")
			n, _ := strconv.ParseInt(seq, 10, 64)
			e.hub.DeliverUser(bob.ID, sse.UserEvent{Seq: n, Tag: tag, Data: []byte(f.Data)})
		}
		send(4)
		wait.Until(t, "4 written", func() bool { return len(cl.all()) >= 5 })
		if fs := cl.all(); len(fs) != 5 || !strings.Contains(fs[4].Data, `"data":4`) {
			t.Fatalf("after late messages of 2 and 3, then 4: %+v", fs[4:])
		}
		last := cl.all()[4]
		k := st.UserLogs().KeysOf(bob.ID)
		wait.Until(t, "4 acknowledged", func() bool { return st.Client().HGet(ctx, k.Cursors, "web").Val() == "4" })

		for _, key := range []string{k.Log, k.Meta, k.Cursors} { // as their expiry
			if err := st.Client().Del(ctx, key).Err(); err != nil {
				t.Fatal(err)
			}
		}
		send(10) // the new history's 1
		m.endedByGap(t, "the stream that wrote 4", 5)

		cl2 := newClient()
		done2 := make(chan error, 1)
		go func() { done2 <- e.hub.ServeMe(ctx, cl2, bob, "web", sse.ParseCursor(last.ID)) }()
		wait.Until(t, "the resume's snapshot and event", func() bool { return len(cl2.all()) >= 2 })
		fs := cl2.all()
		if fs[0].Type != players.EventSnapshot || !strings.Contains(fs[0].Data, `"resync":true`) ||
			!strings.Contains(fs[1].Data, `"data":10`) || !strings.HasPrefix(fs[1].ID, "1-") {
			t.Fatalf("resume from %s: %+v; want a snapshot (resync), the new 1", last.ID, fs)
		}
		m.cancel()
		awaitEnd(t, done2, "the resumed stream")
	})
}

// A stream that resumes into a replay ending short of the log (its rest
// trimmed while the pages were read: the other platforms' streams acked
// the whole log meanwhile through an older release, and no new event
// comes) catches up at once and
// finds the gap: it ends (gap), and its client resumes into a snapshot.
// A reviewer's find: it wrote `resumed` and waited, the events after its
// replay missing until the user's next event.
func TestResumeWhoseReplayEndsShortEndsByAGap(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		m := newBobs(t, b)
		ctx := m.ctx
		for n := 1; n <= 400; n++ {
			m.send(t, n)
		}
		o, err := m.st.Sessions().OpenSession(ctx, sse.Session{UserID: bob.ID, Platform: "mobile", ID: "m"}, sse.Cursor{}, 10)
		if err != nil || len(o.Replay) != 400 {
			t.Fatalf("the log: %d events, %v", len(o.Replay), err)
		}
		tags := map[int64]string{}
		for _, e := range o.Replay {
			tags[e.Seq] = e.Tag
		}
		if err := m.st.Sessions().CloseSession(ctx, sse.Session{UserID: bob.ID, Platform: "mobile", ID: "m"}); err != nil {
			t.Fatal(err)
		}
		for _, a := range []struct {
			platform string
			seq      int64
		}{{"mobile", 50}, {"web", 50}, {"pc", 400}} {
			if _, err := m.st.UserLogs().Ack(ctx, bob.ID, a.platform, tags[a.seq], a.seq); err != nil {
				t.Fatal(err)
			}
		}
		h := &redistest.BeforePipeline{Name: "xrange", F: func() error {
			// the others acked it all, through an older release's instance
			// (a rolling upgrade), whose acks keep a margin of 100: the
			// log trimmed to its last 100 (this release's margin keeps as
			// many as a resume replays)
			for _, p := range []string{"mobile", "web"} {
				if _, err := m.st.UserLogs().Ack(ctx, bob.ID, p, tags[400], 400); err != nil {
					return err
				}
			}
			return m.st.Client().XTrimMinID(ctx, m.st.UserLogs().KeysOf(bob.ID).Log, "300-0").Err()
		}}
		h.Arm()
		m.st.Client().AddHook(h)
		go func() {
			m.done <- m.e.hub.ServeMe(ctx, m.cl, bob, "pc", sse.Cursor{Set: true, Version: 60, Tag: tags[60]})
		}()
		var ended bool
		wait.Until(t, "the resumed stream ended", func() bool {
			select {
			case <-m.done:
				ended = true
			default:
			}
			return ended
		})
		fs := m.cl.all()
		if _, why, _, _ := m.rec.snapshot(); why["me "+sse.EndGap] != 1 || len(fs) == 0 || fs[0].ID != "61-"+tags[61] {
			t.Fatalf("ended %v (%v) after %d frames: want its replay from 61, then the end by a gap", ended, why, len(fs))
		}
	})
}
