package growstack_test

import (
	"testing"

	"github.com/realsync/realsync/internal/growstack"
	"github.com/realsync/realsync/internal/stacktest"
)

// Grow takes a fresh goroutine's stack to Size in one step: after it,
// calls using half of Size (more than Grow's own frame: a second Grow
// moves nothing either) do not grow the stack again, where on a fresh
// goroutine they do; calls using Size do (Grow leaves Size, not more).
func TestGrow(t *testing.T) {
	cases := []struct {
		name  string
		grow  bool
		n     int
		moves bool
	}{
		{"a fresh goroutine grows on the way down", false, growstack.Size / 2, true},
		{"grown, half of Size fits", true, growstack.Size / 2, false},
		{"grown, Size does not fit", true, growstack.Size, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			moved := make(chan bool)
			go func() {
				if tc.grow {
					growstack.Grow()
				}
				moved <- stacktest.Moves(tc.n)
			}()
			if got := <-moved; got != tc.moves {
				t.Fatalf("the stack moved: %v, want %v", got, tc.moves)
			}
		})
	}
}
