package redisx

import (
	"context"
	"testing"
	"time"
)

// A call gets the client's bound, or the one Patient gave its context,
// unless its context already ends within that bound.
func TestBoundOf(t *testing.T) {
	const b = Bound(3 * time.Second)
	bg := context.Background()
	deadline := func(ctx context.Context, in time.Duration) context.Context {
		ctx, cancel := context.WithTimeout(ctx, in)
		t.Cleanup(cancel)
		return ctx
	}
	for _, tc := range []struct {
		name string
		ctx  context.Context
		want time.Duration // 0: none of its own
	}{
		{"no deadline", bg, 3 * time.Second},
		{"a later deadline", deadline(bg, 10*time.Second), 3 * time.Second},
		{"an earlier deadline", deadline(bg, time.Second), 0},
		{"an opening", Opening(bg), OpeningBound},
		{"an opening within a request's deadline", Opening(deadline(bg, 10*time.Second)), 0},
		{"an opening past a request's deadline", Opening(deadline(bg, time.Hour)), OpeningBound},
		{"patient without a bound", Patient(bg, 0), 0},
		{"a deadline set after Patient", deadline(Patient(bg, time.Minute), 10*time.Second), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := b.of(tc.ctx)
			if !ok {
				got = 0
			}
			if got != tc.want {
				t.Fatalf("bound %v (own: %v), want %v", got, ok, tc.want)
			}
		})
	}
}
