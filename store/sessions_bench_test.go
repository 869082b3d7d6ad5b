package store_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/realsync/realsync/sse"
	"github.com/realsync/realsync/store"
)

// BenchmarkSessionRenewalRound measures one instance's renewal round of
// 1 000 personal stream sessions (1 000 users over 16 shards, one session
// each), as the hub runs it (256 sessions a call, one session_renew per
// user shard in one pipeline), with the per-user stream cap off and on:
// Redis' own time per round (INFO commandstats) and the round's wall time.
// Run:
//
//	go test ./store -run '^$' -bench SessionRenewalRound -benchtime 200x
func BenchmarkSessionRenewalRound(b *testing.B) {
	const sessions = 1000
	for _, cap := range []int{0, 16} {
		b.Run(fmt.Sprintf("cap=%d", cap), func(b *testing.B) {
			s, _ := freshStore(b, func(c *store.Config) {
				c.Shards, c.PresenceTTL, c.Quotas = 16, time.Minute, store.Quotas{StreamsPerUser: cap}
			})
			ctx := context.Background()
			var ss []sse.Session
			for i := range sessions {
				x := sse.Session{UserID: fmt.Sprint("user-", i), Platform: "pc", ID: fmt.Sprint("bench.", i)}
				if _, err := s.Sessions().OpenSession(ctx, x, sse.Cursor{}, 0); err != nil {
					b.Fatal(err)
				}
				ss = append(ss, x)
			}
			if err := s.Client().ConfigResetStat(ctx).Err(); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for range b.N {
				for chunk := range slices.Chunk(ss, 256) {
					if lost, err := s.Sessions().RenewSessions(ctx, chunk); err != nil || len(lost) > 0 {
						b.Fatalf("lost %d, err %v", len(lost), err)
					}
				}
			}
			b.StopTimer()
			b.ReportMetric(scriptTotalMicros(b, s.Client())/float64(b.N), "redis-µs/round")
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "wall-µs/round")
		})
	}
}
