package sse

import (
	"slices"
	"testing"
)

// A stream's queue hands its items over in order, refuses past its
// bound, and keeps a drained array for the next batch only while small:
// an idle stream holds no array larger than keptQueue.
func TestQueue(t *testing.T) {
	for _, tc := range []struct {
		name      string
		max, push int
		kept      bool // the drained array is kept for the next batch
	}{
		{"none", 8, 0, false},
		{"a few", 8, 3, true},
		{"up to its bound", 8, 10, true},
		{"a burst past keptQueue", 4 * keptQueue, 3 * keptQueue, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := queue[int]{max: tc.max}
			var want []int
			for i := range tc.push {
				ok := q.push(i)
				if ok != (i < tc.max) {
					t.Fatalf("push %d of a queue of %d: %v", i, tc.max, ok)
				}
				if ok {
					want = append(want, i)
				}
			}
			batch := q.take()
			if !slices.Equal(batch, want) {
				t.Fatalf("took %v, want %v", batch, want)
			}
			if q.take() != nil {
				t.Fatal("a drained queue gave a batch again")
			}
			q.recycle(batch)
			if kept := q.spare != nil; kept != tc.kept {
				t.Fatalf("the drained array (cap %d) kept: %v, want %v", cap(batch), kept, tc.kept)
			}
			if tc.kept && slices.ContainsFunc(q.spare[:cap(q.spare)], func(v int) bool { return v != 0 }) {
				t.Fatal("a kept array still holds its items")
			}
			// the next batch reuses the kept array, and is its own
			if !q.push(7) || !slices.Equal(q.take(), []int{7}) {
				t.Fatal("the next batch")
			}
			if q.spare != nil {
				t.Fatal("the kept array is both the queue's and its spare")
			}
		})
	}
}
