package userlog_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/players"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/sse"
	"github.com/realsync/realsync/store"
	"github.com/realsync/realsync/store/userlog"
)

// strangersEnv is a user's log of the least cap (userlog.MinMaxLen: a
// share of 100 for strangers) whose user follows "friend".
type strangersEnv struct {
	st  *store.Store
	l   *userlog.Log
	uid string
	n   atomic.Int64 // sends made, for the messages' data (sent at once, by TestStrangersAtOnce)
}

func newStrangersEnv(t *testing.T, b redistest.Backend) *strangersEnv {
	t.Helper()
	st := openLogStore(t, store.Config{RedisURL: b.URL, ClusterAddrs: b.ClusterAddrs, Offline: userlog.Config{MaxLen: userlog.MinMaxLen}})
	e := &strangersEnv{st: st, l: st.UserLogs(), uid: "u-" + redistest.Prefix(t)}
	e.follow(t, "friend")
	return e
}

func (e *strangersEnv) follow(t *testing.T, ids ...string) {
	t.Helper()
	if err := e.st.Sessions().SetFollowing(context.Background(), e.uid, ids); err != nil {
		t.Fatal(err)
	}
}

// send sends a direct message from from ("": the server) as the API does
// (players.Inbox.SendOnce, unkeyed); returns its error.
func (e *strangersEnv) send(from string) error {
	n := e.n.Add(1)
	ev := players.DirectMessageEvent{UserEventHeader: players.NewHeader(players.EventMessage, e.uid, time.Now()),
		From: players.Sender{UserID: from, Server: from == ""}, Message: players.DirectMessageBody{Type: "chat", Data: json.RawMessage(fmt.Sprint(n))}}
	_, err := e.st.Sessions().SendOnce(context.Background(), e.uid, ev, players.Once{From: from, At: time.Now()})
	return err
}

// sends sends n messages from from (a stranger numbered when it ends in
// "#": the i-th send's "<from>#<i mod 10>"), and returns how many were
// sent and how many refused with rooms.ErrInboxFull.
func (e *strangersEnv) sends(t *testing.T, from string, n int) (sent, full int) {
	t.Helper()
	for i := range n {
		who := from
		if strings.HasSuffix(from, "#") {
			who = fmt.Sprint(from, i%10)
		}
		switch err := e.send(who); {
		case err == nil:
			sent++
		case errors.Is(err, rooms.ErrInboxFull):
			full++
		default:
			t.Fatal(err)
		}
	}
	return sent, full
}

// senders reads the log: each entry's sender ("" the server's).
func (e *strangersEnv) senders(t *testing.T) []string {
	t.Helper()
	xs, err := e.st.Client().XRange(context.Background(), e.l.KeysOf(e.uid).Log, "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, x := range xs {
		var ev struct {
			From players.Sender `json:"from"`
		}
		if err := json.Unmarshal([]byte(x.Values["d"].(string)), &ev); err != nil {
			t.Fatal(err)
		}
		out = append(out, ev.From.UserID)
	}
	return out
}

// expireStrangers rewrites the time of every strangers' entry of the log
// to long ago (1970): expired.
func (e *strangersEnv) expireStrangers(t *testing.T) {
	t.Helper()
	ctx, c, k := context.Background(), e.st.Client(), e.l.KeysOf(e.uid)
	for _, m := range c.ZRangeByScore(ctx, k.Strangers, &redis.ZRangeBy{Min: "1", Max: "+inf"}).Val() {
		seq, _, _ := strings.Cut(m, " ")
		score, _ := strconv.ParseFloat(seq, 64)
		if err := c.ZRem(ctx, k.Strangers, m).Err(); err != nil {
			t.Fatal(err)
		}
		if err := c.ZAdd(ctx, k.Strangers, redis.Z{Score: score, Member: seq + " 1000"}).Err(); err != nil {
			t.Fatal(err)
		}
	}
}

func count(xs []string, f func(string) bool) (n int) {
	for _, x := range xs {
		if f(x) {
			n++
		}
	}
	return n
}

func isStranger(s string) bool { return strings.HasPrefix(s, "s") }

// The events of senders the user does not follow, which no platform of
// the user was delivered, hold at most half of the log: past it a
// stranger's message is refused (rooms.ErrInboxFull) and changes nothing,
// while the users the user follows and the server still send; so
// strangers writing while the user is away push none of a friend's
// messages out (a tester's find: 1 003 messages from 30 accounts took a
// friend's 3 earlier ones). A platform delivered them, a sender followed,
// or their entries dropped by the cap, and strangers send again.
func TestStrangersHoldHalfTheLog(t *testing.T) {
	share := userlog.StrangersShare(userlog.MinMaxLen)
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := context.Background()
		e := newStrangersEnv(t, b)
		c, k := e.st.Client(), e.l.KeysOf(e.uid)
		if sent, full := e.sends(t, "friend", 3); sent != 3 || full != 0 {
			t.Fatalf("the friend's messages: %d sent, %d refused", sent, full)
		}
		// 30 strangers, three times the share
		if sent, full := e.sends(t, "s#", 3*share); sent != share || full != 2*share {
			t.Fatalf("strangers: %d sent, %d refused; want %d and %d", sent, full, share, 2*share)
		}
		if n := c.XLen(ctx, k.Log).Val(); n != int64(3+share) {
			t.Fatalf("a log of %d entries, want %d: a refused send wrote", n, 3+share)
		}
		if seq, _ := c.HGet(ctx, k.Meta, "seq").Int(); seq != 3+share {
			t.Fatalf("the log's seq %d after refusals, want %d", seq, 3+share)
		}
		// the friend and the server are neither counted nor refused: the
		// friend's messages fill the rest and push out the oldest, the
		// friend's own first
		if sent, _ := e.sends(t, "friend", userlog.MinMaxLen-share-3); sent != userlog.MinMaxLen-share-3 {
			t.Fatalf("the friend's messages past the strangers' share: %d sent", sent)
		}
		if err := e.send(""); err != nil {
			t.Fatalf("the server's message past the strangers' share: %v", err)
		}
		got := e.senders(t)
		if len(got) != userlog.MinMaxLen || count(got, isStranger) != share || got[0] != "friend" {
			t.Fatalf("the log: %d entries, %d of strangers, the first %q; want %d, %d and the friend's", len(got), count(got, isStranger), got[0], userlog.MinMaxLen, share)
		}
		if err := e.send("s1"); !errors.Is(err, rooms.ErrInboxFull) {
			t.Fatalf("a stranger at the share: %v, want ErrInboxFull", err)
		}
		// a sender followed is no stranger
		e.follow(t, "friend", "s1")
		if err := e.send("s1"); err != nil {
			t.Fatalf("a sender followed since: %v", err)
		}
		if err := e.send("s2"); !errors.Is(err, rooms.ErrInboxFull) {
			t.Fatalf("another stranger: %v, want ErrInboxFull", err)
		}
		// a platform delivered the log's events (another one its first
		// only): none counts now
		first := c.XRangeN(ctx, k.Log, "-", "+", 1).Val()[0]
		firstSeq, _ := strconv.ParseInt(strings.TrimSuffix(first.ID, "-0"), 10, 64)
		if moved, err := e.l.Ack(ctx, e.uid, "phone", userlog.TagOf(first, ""), firstSeq); err != nil || !moved {
			t.Fatalf("phone's ack: %v, %v", moved, err)
		}
		if err := e.send("s2"); !errors.Is(err, rooms.ErrInboxFull) {
			t.Fatalf("a stranger once a platform was delivered the first entry only: %v, want ErrInboxFull", err)
		}
		seq, _ := c.HGet(ctx, k.Meta, "seq").Int64()
		last := c.XRevRangeN(ctx, k.Log, "+", "-", 1).Val()[0]
		if moved, err := e.l.Ack(ctx, e.uid, "pc", userlog.TagOf(last, ""), seq); err != nil || !moved {
			t.Fatalf("pc's ack: %v, %v", moved, err)
		}
		if sent, full := e.sends(t, "s#", share+1); sent != share || full != 1 {
			t.Fatalf("strangers after the log was delivered: %d sent, %d refused; want %d and 1", sent, full, share)
		}
		// the strangers' set holds no more than the log (the cap's window) and expires with it
		if n := c.ZCard(ctx, k.Strangers).Val(); n > int64(userlog.MinMaxLen+1) {
			t.Errorf("the strangers' set holds %d members, more than the log's %d and its history", n, userlog.MinMaxLen)
		}
		if ttl, lttl := c.PTTL(ctx, k.Strangers).Val(), c.PTTL(ctx, k.Log).Val(); ttl <= 0 || ttl > userlog.DefaultTTL || ttl > lttl+time.Second {
			t.Errorf("the strangers' set expires in %v (the log in %v), want with the log", ttl, lttl)
		}
	})
}

// The strangers' entries the cap dropped, and those expired (sent a TTL
// ago: readers skip them), are not counted: a stranger at the share is
// sent once they are gone.
func TestStrangersDroppedOrExpiredAreNotCounted(t *testing.T) {
	share := userlog.StrangersShare(userlog.MinMaxLen)
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		t.Run("Dropped", func(t *testing.T) {
			e := newStrangersEnv(t, b)
			e.sends(t, "s#", share)
			// the friend's messages fill the log and push out half of
			// the strangers' entries
			e.sends(t, "friend", userlog.MinMaxLen-share+share/2)
			if got := e.senders(t); count(got, isStranger) != share/2 {
				t.Fatalf("%d strangers' entries left, want %d", count(got, isStranger), share/2)
			}
			if err := e.send("s0"); err != nil {
				t.Fatalf("a stranger once the cap dropped half of the strangers' entries: %v", err)
			}
		})
		t.Run("Expired", func(t *testing.T) {
			e := newStrangersEnv(t, b)
			e.sends(t, "s#", share)
			// every strangers' entry sent long ago (its time rewritten)
			e.expireStrangers(t)
			if sent, full := e.sends(t, "s#", share+1); sent != share || full != 1 {
				t.Fatalf("strangers once theirs expired: %d sent, %d refused; want %d and 1", sent, full, share)
			}
		})
		// counted past the share (tickets' match_found), then all
		// expired: the next stranger's send forgets them all at once
		t.Run("ExpiredPastTheShare", func(t *testing.T) {
			ctx := context.Background()
			e := newStrangersEnv(t, b)
			for i := range share + share/2 {
				ev := players.MatchFoundEvent{UserEventHeader: players.NewHeader(players.EventMatchFound, e.uid, time.Now()),
					TicketID: "t", MatchID: fmt.Sprint("m", i), RoomID: "r", Mode: "m", Region: "r"}
				if _, err := e.l.SendEventOnce(ctx, e.uid, ev, userlog.Once{From: "leader", Following: e.st.Sessions().FollowingKey(e.uid), Counted: true}); err != nil {
					t.Fatal(err)
				}
			}
			e.expireStrangers(t)
			if err := e.send("s0"); err != nil {
				t.Fatalf("a stranger once %d counted entries expired: %v", share+share/2, err)
			}
		})
	})
}

// A stranger's sends at once: exactly the share is sent, whatever the
// order.
func TestStrangersAtOnce(t *testing.T) {
	share := userlog.StrangersShare(userlog.MinMaxLen)
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		e := newStrangersEnv(t, b)
		var mu sync.Mutex
		var wg sync.WaitGroup
		sent, full := 0, 0
		for w := range 16 {
			wg.Go(func() {
				for i := range share * 2 / 16 {
					err := e.send(fmt.Sprintf("s%d-%d", w, i))
					mu.Lock()
					switch {
					case err == nil:
						sent++
					case errors.Is(err, rooms.ErrInboxFull):
						full++
					default:
						t.Error(err)
					}
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if sent != share || full != share*2/16*16-share {
			t.Fatalf("%d sent, %d refused at once; want %d and %d", sent, full, share, share*2/16*16-share)
		}
	})
}

// A log that expired starts a new history, by a send or by a session's
// opening: the strangers' set of the old one counts nothing in it.
func TestStrangersOfAnExpiredLogCountNothing(t *testing.T) {
	share := userlog.StrangersShare(userlog.MinMaxLen)
	for _, b := range redistest.Backends(t) {
		for _, opened := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/opened=%v", b.Name, opened), func(t *testing.T) {
				ctx := context.Background()
				e := newStrangersEnv(t, b)
				c, k := e.st.Client(), e.l.KeysOf(e.uid)
				e.sends(t, "s#", share)
				if err := e.send("s0"); !errors.Is(err, rooms.ErrInboxFull) {
					t.Fatalf("at the share: %v", err)
				}
				c.Del(ctx, k.Log, k.Meta, k.Cursors) // expired; the set outlived them
				if opened {
					ss := sse.Session{UserID: e.uid, Platform: "pc", ID: "s-1"}
					if _, err := e.st.Sessions().OpenSession(ctx, ss, sse.Cursor{}, 10); err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { e.st.Sessions().CloseSession(ctx, ss) })
				}
				if sent, full := e.sends(t, "s#", share+1); sent != share || full != 1 {
					t.Fatalf("strangers in a new history: %d sent, %d refused; want %d and 1", sent, full, share)
				}
			})
		}
	}
}

// A user who follows no one has no strangers: nothing is counted nor
// refused, and the cap drops the oldest events as before (a game that
// does not use following keeps its inbox whole).
func TestNoStrangersForAUserWhoFollowsNoOne(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		e := newStrangersEnv(t, b)
		e.follow(t) // no one
		if sent, full := e.sends(t, "s#", userlog.MinMaxLen+10); sent != userlog.MinMaxLen+10 || full != 0 {
			t.Fatalf("%d sent, %d refused; want every one sent", sent, full)
		}
		if n := e.st.Client().Exists(context.Background(), e.l.KeysOf(e.uid).Strangers).Val(); n != 0 {
			t.Fatalf("a strangers' set for a user who follows no one")
		}
	})
}
