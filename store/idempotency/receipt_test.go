package idempotency_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	contract "github.com/realsync/realsync/internal/idempotency"
	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/internal/storetest"
	"github.com/realsync/realsync/store"
	"github.com/realsync/realsync/store/idempotency"
)

// An answer kept with a receipt is replayed while its write is held, or
// cannot be told otherwise; it is taken back (the key claimed anew) when
// the write's history lost it: another write at its position, a head
// below it, entries before it and not it, or, before the receipt's
// Until, the history gone or started anew. A history that started anew
// after Until (a personal log that expired, its seqs numbered again) is
// no loss (a reviewer's find: a retry 10 minutes to 24 hours after a
// direct message to a user whose log expired sent it again).
func TestReceiptChecks(t *testing.T) {
	type entry struct {
		pos int64
		tag string // "": an entry without one
	}
	later, earlier := time.Now().Add(time.Hour), time.Now().Add(-time.Hour)
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		ctx := context.Background()
		st := storetest.Open(t, store.Config{RedisURL: b.URL, ClusterAddrs: b.ClusterAddrs, Prefix: redistest.Prefix(t), Shards: 4})
		is, c := idempotency.New(st.Base()), st.Client()
		for i, tc := range []struct {
			name    string
			log     []entry
			head    int64 // 0: no head
			history string
			r       idempotency.Receipt
			lost    bool
		}{
			{"held", []entry{{1, "a"}, {2, "b"}}, 2, "", idempotency.Receipt{Pos: 2, Tag: "b"}, false},
			{"another write at its position", []entry{{1, "a"}, {2, "c"}}, 2, "", idempotency.Receipt{Pos: 2, Tag: "b"}, true},
			{"the head below it", []entry{{1, "a"}}, 1, "", idempotency.Receipt{Pos: 2, Tag: "b"}, true},
			{"entries before it, not it", []entry{{1, "a"}, {3, "c"}}, 3, "", idempotency.Receipt{Pos: 2, Tag: "b"}, true},
			{"trimmed", []entry{{5, "e"}, {6, "f"}}, 6, "", idempotency.Receipt{Pos: 2, Tag: "b"}, false},
			{"all trimmed", nil, 6, "", idempotency.Receipt{Pos: 2, Tag: "b"}, false},
			{"an entry without a tag", []entry{{2, ""}}, 2, "", idempotency.Receipt{Pos: 2, Tag: "b"}, false},
			{"gone, a room's", nil, 0, "", idempotency.Receipt{Pos: 2, Tag: "b"}, false},
			{"gone before Until", nil, 0, "", idempotency.Receipt{Pos: 2, Tag: "b", HistoryField: "tag", History: "h1", Until: later}, true},
			{"gone after Until", nil, 0, "", idempotency.Receipt{Pos: 2, Tag: "b", HistoryField: "tag", History: "h1", Until: earlier}, false},
			{"in its history", []entry{{1, "a"}, {2, "c"}}, 2, "h1", idempotency.Receipt{Pos: 2, Tag: "b", HistoryField: "tag", History: "h1", Until: earlier}, true},
			{"another history before Until", []entry{{1, "a"}, {2, "c"}}, 2, "h2", idempotency.Receipt{Pos: 2, Tag: "b", HistoryField: "tag", History: "h1", Until: later}, true},
			{"another history after Until", []entry{{1, "a"}, {2, "c"}}, 2, "h2", idempotency.Receipt{Pos: 2, Tag: "b", HistoryField: "tag", History: "h1", Until: earlier}, false},
		} {
			t.Run(tc.name, func(t *testing.T) {
				tag := fmt.Sprintf("{%s-r%d}", redistest.Prefix(t), i)
				tc.r.Log, tc.r.Head, tc.r.Field = tag+":log", tag+":head", "seq"
				t.Cleanup(func() { c.Del(context.Background(), tc.r.Log, tc.r.Head) })
				for _, e := range tc.log {
					fields := []any{"d", "{}"}
					if e.tag != "" {
						fields = []any{"d", "{}", "g", e.tag}
					}
					if err := c.XAdd(ctx, &redis.XAddArgs{Stream: tc.r.Log, ID: fmt.Sprint(e.pos, "-0"), Values: fields}).Err(); err != nil {
						t.Fatal(err)
					}
				}
				if tc.head > 0 {
					c.HSet(ctx, tc.r.Head, "seq", tc.head, "tag", tc.history)
				}
				scope, key, fp := "u-"+tag, "k", "fp"
				claim, err := is.Claim(ctx, scope, key, fp, time.Minute)
				if err != nil || claim.Outcome != contract.New {
					t.Fatalf("first claim: %+v, %v", claim, err)
				}
				answer := contract.Answer{Status: 202, ContentType: "application/json", Body: []byte(`{"v":1}`), Receipt: tc.r.String()}
				if ok, err := is.Record(ctx, claim, answer); !ok || err != nil {
					t.Fatalf("record: %v %v", ok, err)
				}
				again, err := is.Claim(ctx, scope, key, fp, time.Minute)
				if err != nil {
					t.Fatal(err)
				}
				if got := again.Outcome == contract.New; got != tc.lost {
					t.Fatalf("claim again: %+v; want taken back (New): %v", again, tc.lost)
				}
				if !tc.lost {
					if again.Token != "" || string(again.Answer.Body) != `{"v":1}` || again.Answer.Receipt != answer.Receipt {
						t.Errorf("replay %+v: want the answer kept, with its receipt, and no token", again)
					}
					return
				}
				// taken back: the key runs, once; then the new answer
				if busy, err := is.Claim(ctx, scope, key, fp, time.Minute); err != nil || busy.Outcome != contract.InUse {
					t.Errorf("claim while it runs again: %+v, %v; want InUse", busy, err)
				}
				if ok, err := is.Record(ctx, claim, answer); ok || err != nil {
					t.Errorf("the first claim's record after the redo: %v %v; want lost", ok, err)
				}
				redone := contract.Answer{Status: 202, ContentType: "application/json", Body: []byte(`{"v":2}`)}
				if ok, err := is.Record(ctx, again, redone); !ok || err != nil {
					t.Fatalf("record again: %v %v", ok, err)
				}
				if last, err := is.Claim(ctx, scope, key, fp, time.Minute); err != nil || last.Outcome != contract.Replay || string(last.Answer.Body) != `{"v":2}` {
					t.Errorf("after the redo: %+v, %v; want the new answer replayed", last, err)
				}
			})
		}
	})
}
