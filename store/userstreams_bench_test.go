package store_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/realsync/realsync/internal/race"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/sse"
	"github.com/realsync/realsync/store"
)

// BenchmarkRenewalRound measures one instance's lease renewal round with
// 1 000 open streams (1 000 users, one stream each, in 50 rooms over 16
// shards: every lease in a user key of its own, the worst case), as the
// hub runs it (sorted by room, 256 leases a call), with the per-user
// stream cap off and on: Redis' own time per round (INFO commandstats)
// (per round, and per stream: what a log of either size means alike) and
// the round's wall time, on a redis-server of its own (100 streams with
// -short or the race detector). Run:
//
//	go test ./store -run '^$' -bench RenewalRound -benchtime 200x
func BenchmarkRenewalRound(b *testing.B) {
	streams, roomsN := 1000, 50
	if race.Smoke() {
		streams = 100
	}
	for _, cap := range []int{0, 16} {
		b.Run(fmt.Sprintf("cap=%d", cap), func(b *testing.B) {
			s, _ := freshStore(b, func(c *store.Config) {
				c.Shards, c.PresenceTTL, c.Quotas = 16, time.Minute, store.Quotas{StreamsPerUser: cap}
			})
			ctx := context.Background()
			var ids []string
			for i := range roomsN {
				j := mustCreate(b, s, rooms.User{ID: fmt.Sprint("owner-", i)},
					newRoom(func(r *rooms.NewRoom) { r.MaxPlayers = 100; r.Mode = fmt.Sprint("m", i) }))
				ids = append(ids, j.Room.ID)
			}
			var ls []sse.Lease
			for i := range streams {
				u := rooms.User{ID: fmt.Sprint("user-", i), Name: "u"}
				id := ids[i%roomsN]
				mustJoin(b, s, u, id)
				l := sse.Lease{Room: id, UserID: u.ID, Stream: fmt.Sprint("bench.", i)}
				o, err := s.OpenStream(ctx, l, sse.ReadNone, sse.Cursor{}, 0)
				if err != nil {
					b.Fatal(err)
				}
				l.PlayerID = o.PlayerID
				ls = append(ls, l)
			}
			slices.SortFunc(ls, func(a, b sse.Lease) int { return strings.Compare(a.Room, b.Room) })
			if err := s.Client().ConfigResetStat(ctx).Err(); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for range b.N {
				for chunk := range slices.Chunk(ls, 256) {
					if lost, err := s.RenewStreams(ctx, chunk); err != nil || len(lost) > 0 {
						b.Fatalf("lost %d, err %v", len(lost), err)
					}
				}
			}
			b.StopTimer()
			redis := scriptTotalMicros(b, s.Client()) / float64(b.N)
			b.ReportMetric(redis, "redis-µs/round")
			b.ReportMetric(redis/float64(streams), "redis-µs/stream")
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "wall-µs/round")
		})
	}
}
