package api

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"testing"
	"time"
)

// A BrowseCache holds at most its bound in memory, its bookkeeping
// included, whether its answers are empty pages (a 31-byte body, the most
// answers a bound holds) or pages of rooms built by appending (a body's
// buffer is larger than its bytes): filled with twice the answers its
// bound holds counted by their bytes alone, the heap it keeps is within
// its bound and an eighth.
func TestBrowseCacheMemoryBound(t *testing.T) {
	key := func(i int) string { return "/v1/rooms?mode=m" + strconv.Itoa(10_000_000+i) }
	const bound = 1 << 20
	for _, c := range []struct {
		name string
		body func(b []byte, i int) []byte // appends an answer's body to b
	}{
		{"EmptyPages", func(b []byte, _ int) []byte { return append(b, `{"nextCursor":null,"rooms":[]}`+"\n"...) }},
		{"PagesOfRooms", func(b []byte, i int) []byte {
			for range 20 { // about 8 KiB, grown room by room as appendRoomPage does
				b = fmt.Appendf(b, `{"attributes":{},"id":"%016d","name":"%0360d"},`, i, i)
			}
			return b
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			clock := &TestClock{}
			clock.now.Store(int64(time.Hour))
			var before, filled, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			bc := newBrowseCache(time.Second, nil, clock, bound)
			n := 2 * bound / (len(key(0)) + len(c.body(nil, 0)))
			for i := range n {
				_, _, err := bc.get(context.Background(), key(i), func(_ context.Context, b []byte) ([]byte, error) {
					return c.body(b, i), nil
				})
				if err != nil {
					t.Fatal(err)
				}
			}
			bc.c.CleanUp()
			runtime.GC()
			runtime.ReadMemStats(&filled)
			entries := bc.c.EstimatedSize()
			runtime.KeepAlive(bc)
			bc = nil
			runtime.GC()
			runtime.ReadMemStats(&after)
			kept := int64(filled.HeapAlloc) - int64(after.HeapAlloc)
			t.Logf("%d answers asked for, %d kept in %d KiB of heap (bound %d KiB)", n, entries, kept>>10, bound>>10)
			if kept > bound+bound/8 {
				t.Fatalf("the cache keeps %d KiB of heap (%d answers), over its bound of %d KiB", kept>>10, entries, bound>>10)
			}
		})
	}
}
