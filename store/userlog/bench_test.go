package userlog_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/realsync/realsync/internal/redisinfo"
	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/internal/storetest"
	"github.com/realsync/realsync/players"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/store"
	"github.com/realsync/realsync/store/userlog"
)

// BenchmarkSend measures what a direct message's send (user_send.lua)
// costs Redis by its sender: the server's, a followed user's (one
// SISMEMBER more), a stranger's below the share (counted: the strangers'
// set's reads and writes), and a stranger's refused at a full share. 1 000
// recipients, each following one friend, a log of the least cap (200) so
// the share (100) fills; 64 goroutines through the store's batched client,
// on a redis-server of its own. Redis' µs per send from INFO commandstats.
//
//	go test ./store/userlog -run '^$' -bench Send -benchtime 20000x -count 3
func BenchmarkSend(b *testing.B) {
	srv, err := redistest.StartServer()
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Stop()
	ctx := context.Background()
	st := storetest.Open(b, store.Config{RedisURL: "redis://" + srv.Addr, Prefix: "bench", Shards: 16, Batch: &store.Batching{},
		Offline: userlog.Config{MaxLen: userlog.MinMaxLen}})
	const users = 1000
	for i := range users {
		if err := st.Sessions().SetFollowing(ctx, fmt.Sprint("u", i), []string{"friend"}); err != nil {
			b.Fatal(err)
		}
	}
	send := func(to, from string) error {
		ev := players.DirectMessageEvent{UserEventHeader: players.NewHeader(players.EventMessage, to, time.Now()),
			From: players.Sender{UserID: from, Server: from == ""}, Message: players.DirectMessageBody{Type: "chat", Data: json.RawMessage(`"hi"`)}}
		_, err := st.Sessions().SendOnce(ctx, to, ev, players.Once{From: from, At: time.Now()})
		return err
	}
	evalsha := func() redisinfo.Stat {
		info, err := st.Client().Info(ctx, "commandstats").Result()
		if err != nil {
			b.Fatal(err)
		}
		return redisinfo.Commandstats(info)["evalsha"]
	}
	for _, bc := range []struct {
		name, from string
		full       bool // the recipients' shares filled first: every send refused
	}{
		{"server", "", false},
		{"followed", "friend", false},
		{"stranger", "stranger", false},
		{"stranger-refused", "stranger", true},
	} {
		filled := 0 // the recipients whose share is full
		b.Run(bc.name, func(b *testing.B) {
			// Only the recipients this run sends to (u1 to uN, every one
			// from N = 1 000 on) are filled: a run of one send (CI's) no
			// longer fills 1 000 shares first (100 000 sends, 26 s).
			for ; bc.full && filled < min(users, b.N+1); filled++ {
				for range userlog.StrangersShare(userlog.MinMaxLen) {
					if err := send(fmt.Sprint("u", filled), "filler"); err != nil && !errors.Is(err, rooms.ErrInboxFull) {
						b.Fatal(err)
					}
				}
			}
			var n atomic.Int64
			before := evalsha()
			b.SetParallelism(32) // 64 goroutines on 2 cores
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					err := send(fmt.Sprint("u", n.Add(1)%users), bc.from)
					if full := errors.Is(err, rooms.ErrInboxFull); (err != nil && !full) || full != bc.full {
						b.Errorf("a send: %v (a full share: %v)", err, bc.full)
						return
					}
				}
			})
			b.StopTimer()
			d := evalsha().Sub(before)
			b.ReportMetric(float64(d.Usec)/float64(d.Calls), "redis-µs/send")
		})
	}
}
