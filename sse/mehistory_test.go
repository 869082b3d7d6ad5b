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
	eachBackend(t, func(t *testing.T, b redistest.Backend) {
		rec := newRecorder()
		var st *store.Store
		e := newEnv(t, b, func(c *sse.Config) {
			st = c.Source.(*store.Store)
			c.Metrics, c.Users = rec, st.Sessions()
		})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		send := func(n int) {
			t.Helper()
			dm := players.DirectMessageEvent{UserEventHeader: players.NewHeader(players.EventMessage, bob.ID, time.Now()),
				From: players.Sender{Server: true}, Message: players.DirectMessageBody{Type: "n", Data: fmt.Appendf(nil, "%d", n)}}
			if err := st.Sessions().Send(ctx, bob.ID, dm); err != nil {
				t.Fatal(err)
			}
		}
		cl := newClient()
		done := make(chan error, 1)
		go func() { done <- e.hub.ServeMe(ctx, cl, bob, "web", sse.Cursor{}) }()
		waitUntil(t, "the personal stream opened", func() bool { return len(cl.all()) > 0 })
		for n := 1; n <= 3; n++ {
			send(n)
		}
		waitUntil(t, "3 written", func() bool { return len(cl.all()) == 4 })
		lost := cl.all()[3]
		k := st.UserLogs().KeysOf(bob.ID)
		waitUntil(t, "3 acknowledged", func() bool { return st.Client().HGet(ctx, k.Cursors, "web").Val() == "3" })

		setBack(t, st, bob.ID, 2)
		send(30) // the new 3
		send(4)
		var ended bool
		waitUntil(t, "the stream that wrote the lost 3 ended, or wrote on", func() bool {
			select {
			case <-done:
				ended = true
			default:
			}
			return ended || len(cl.all()) > 4
		})
		for _, f := range cl.all()[4:] {
			t.Errorf("written after the lost 3 (%s): %s %s", lost.ID, f.ID, f.Data)
		}
		if _, why, _, _ := rec.snapshot(); !ended || why["me "+sse.EndGap] != 1 {
			t.Fatalf("the stream that wrote the lost 3: ended %v (%v); want it ended by a gap", ended, why)
		}

		cl2 := newClient()
		done2 := make(chan error, 1)
		go func() { done2 <- e.hub.ServeMe(ctx, cl2, bob, "web", sse.ParseCursor(lost.ID)) }()
		waitUntil(t, "the resume's snapshot and events", func() bool { return len(cl2.all()) >= 3 })
		fs := cl2.all()
		if fs[0].Type != players.EventSnapshot || !strings.Contains(fs[0].Data, `"resync":true`) ||
			!strings.Contains(fs[1].Data, `"data":30`) || !strings.Contains(fs[2].Data, `"data":4`) ||
			!strings.HasPrefix(fs[1].ID, "3-") || fs[1].ID == lost.ID {
			t.Fatalf("resume from the lost %s: %+v; want a snapshot (resync), the new 3 (another id), 4", lost.ID, fs)
		}
		cancel()
		wait(t, done2, "the resumed stream")
	})
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
