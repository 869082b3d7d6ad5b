package store_test

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/internal/storetest"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/sse"
	"github.com/realsync/realsync/store"
)

// BenchmarkScripts runs every Lua script through its Go wrapper against a
// standalone Redis, with 64 goroutines (b.SetParallelism over GOMAXPROCS).
// Run:
//
//	go test ./store -run '^$' -bench Scripts -benchtime 3s
func BenchmarkScripts(b *testing.B) {
	ctx := context.Background()
	s := storetest.Open(b, store.Config{RedisURL: redistest.StandaloneURL(b), Prefix: redistest.Prefix(b), Shards: 16,
		PresenceTTL: time.Minute, DisconnectGrace: time.Minute})
	var seq atomic.Int64
	uniq := func() string { return strconv.FormatInt(seq.Add(1), 36) }
	// big rooms to join and patch without filling up
	room := func() (string, rooms.User) {
		owner := rooms.User{ID: "owner-" + uniq()}
		r := newRoom(func(r *rooms.NewRoom) { r.MaxPlayers, r.StatePolicy = 100, rooms.PolicyOpen })
		j, err := s.Create(ctx, owner, r)
		if err != nil {
			b.Fatal(err)
		}
		return j.Room.ID, owner
	}
	parallel := func(b *testing.B, op func(i int) error) {
		b.SetParallelism(32) // 64 goroutines on 2 cores
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := op(int(seq.Add(1))); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}

	b.Run("room_create", func(b *testing.B) {
		parallel(b, func(i int) error {
			_, err := s.Create(ctx, rooms.User{ID: fmt.Sprint("c", i)}, newRoom())
			return err
		})
	})
	b.Run("room_join+player_remove", func(b *testing.B) {
		var ids []string
		for range 4 {
			id, _ := room()
			ids = append(ids, id)
		}
		parallel(b, func(i int) error {
			u, id := rooms.User{ID: fmt.Sprint("j", i)}, ids[i%4]
			if _, err := s.Join(ctx, u, id); err != nil {
				return err
			}
			return s.Leave(ctx, u, id)
		})
	})
	b.Run("state_patch", func(b *testing.B) {
		id, owner := room()
		parallel(b, func(i int) error {
			_, err := s.PatchState(ctx, owner, id, rooms.StatePatch{
				Set: rooms.State{"k" + strconv.Itoa(i%16): []byte(strconv.Itoa(i))}, IfMatch: rooms.NoIfMatch})
			return err
		})
	})
	b.Run("room_update", func(b *testing.B) {
		owner := rooms.User{ID: "upd"}
		j, _ := s.Create(ctx, owner, newRoom())
		parallel(b, func(i int) error {
			_, err := s.Update(ctx, owner, j.Room.ID, rooms.UpdateParams{Name: ptr(fmt.Sprint("n", i))})
			return err
		})
	})
	b.Run("room read (MULTI/EXEC, no script)", func(b *testing.B) {
		id, _ := room()
		parallel(b, func(int) error {
			_, _, err := s.Get(ctx, id, true)
			return err
		})
	})
	b.Run("message_send", func(b *testing.B) {
		owner := rooms.User{ID: "msg"}
		j, _ := s.Create(ctx, owner, newRoom())
		parallel(b, func(i int) error {
			_, err := s.SendMessage(ctx, owner, j.Room.ID, rooms.Message{Type: "chat", Data: []byte(`"hi"`)})
			return err
		})
	})
	b.Run("message_list", func(b *testing.B) {
		owner := rooms.User{ID: "msgl"}
		j, _ := s.Create(ctx, owner, newRoom())
		for range 50 {
			s.SendMessage(ctx, owner, j.Room.ID, rooms.Message{Type: "chat", Data: []byte(`"hi"`)})
		}
		parallel(b, func(int) error {
			_, _, err := s.Messages(ctx, owner, j.Room.ID, 0)
			return err
		})
	})
	b.Run("stream_open+stream_close", func(b *testing.B) {
		// A player may hold only a few streams of one room at once, so each
		// of the 64 goroutines takes a room of its own from a pool.
		owner := rooms.User{ID: "str"}
		pool := make(chan string, 64)
		for range cap(pool) {
			j, err := s.Create(ctx, owner, newRoom())
			if err != nil {
				b.Fatal(err)
			}
			pool <- j.Room.ID
		}
		parallel(b, func(i int) error {
			room := <-pool
			defer func() { pool <- room }()
			l := sse.Lease{Room: room, UserID: owner.ID, Stream: fmt.Sprint("s", i)}
			o, err := s.OpenStream(ctx, l, sse.ReadFrom, sse.Cursor{}, 1000)
			if err != nil {
				return err
			}
			l.PlayerID = o.PlayerID
			return s.CloseStream(ctx, l)
		})
	})
	b.Run("presence_renew/100-leases", func(b *testing.B) {
		owner := rooms.User{ID: "ren"}
		j, _ := s.Create(ctx, owner, newRoom())
		var ls []sse.Lease
		for i := range 100 {
			l := sse.Lease{Room: j.Room.ID, UserID: owner.ID, Stream: fmt.Sprint("r", i)}
			o, _ := s.OpenStream(ctx, l, sse.ReadNone, sse.Cursor{}, 0)
			l.PlayerID = o.PlayerID
			ls = append(ls, l)
		}
		parallel(b, func(int) error {
			_, err := s.RenewStreams(ctx, ls)
			return err
		})
	})
	b.Run("room_create+room_delete", func(b *testing.B) {
		parallel(b, func(i int) error {
			u := rooms.User{ID: fmt.Sprint("d", i)}
			j, err := s.Create(ctx, u, newRoom())
			if err != nil {
				return err
			}
			_, err = s.Delete(ctx, u, j.Room.ID)
			return err
		})
	})
}
