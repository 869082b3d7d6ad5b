package api

import (
	"fmt"
	"testing"

	"github.com/realsync/realsync/internal/race"
)

// BenchmarkVerify verifies the identity tokens of n users in turn, as an
// instance serving n active users does: with the verified tokens kept,
// each is checked (signature, claims) once, then found. -short, and
// under -race: 1 000 users only (30 000 tokens take 17 s under -race).
func BenchmarkVerify(b *testing.B) {
	sizes := []int{1_000, 30_000}
	if race.Smoke() {
		sizes = sizes[:1]
	}
	for _, n := range sizes {
		b.Run(fmt.Sprintf("users=%d", n), func(b *testing.B) {
			a := &Auth{Secret: []byte("bench-secret-bench-secret-bench-secret"), GuestEnabled: true}
			tokens := make([]string, n)
			for i := range tokens {
				g, err := a.Issue(fmt.Sprint("u", i))
				if err != nil {
					b.Fatal(err)
				}
				tokens[i] = g.Token
			}
			for _, t := range tokens { // warm: every token checked once
				if _, err := a.Verify(t); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				if _, err := a.Verify(tokens[i%n]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
