package api

import (
	"bytes"
	"context"
	"math"
	"net/http"
	"time"

	"github.com/maypok86/otter/v2"
)

// MaxBrowseCacheTTL bounds how old a cached browsing answer may be
// (REALSYNC_BROWSE_CACHE_TTL).
const MaxBrowseCacheTTL = 10 * time.Second

// browseCacheBytes bounds the memory a BrowseCache holds (browseWeight):
// past it the least used answers go first. A list page of 100 rooms is
// tens of KiB, so this holds hundreds of distinct pages.
const browseCacheBytes = 32 << 20

// browseEntryBytes is what the cache spends on an answer besides its key's
// and its body's bytes: its node (key and slice headers, links, expiry,
// weight), its hash table slot, the key's rounding to an allocation size.
// Measured near 150 bytes (TestBrowseCacheMemoryBound); an empty page is
// 31 bytes, so without this a cache of empty pages took three to four
// times its bound.
const browseEntryBytes = 192

// browseWeight is an answer's share of the bound: its key's and its
// body's bytes (the body's capacity: what it holds), and its bookkeeping.
func browseWeight(key string, body []byte) uint32 {
	return uint32(min(len(key)+cap(body)+browseEntryBytes, math.MaxUint32))
}

// BrowseCache keeps the encoded answers of the browsing reads, room list
// pages (GET /v1/rooms) and the lobby's counts (GET /v1/lobby/stats), for
// a TTL on this instance: a request answered from it reads nothing from
// Redis and encodes nothing. An answer is read once however many requests
// ask for it together (they wait for that one read, each at most until it
// ends itself), and kept by the request's route and query, so two
// spellings of one query (parameters in another order) share it. Errors
// are never kept. What it costs clients: a room created, changed or
// closed within the TTL (from the end of the read) may be missing from a
// page or shown as it was (a join re-checks the room, as it does with
// replica reads); see openapi.yaml's GET /v1/rooms. Safe for concurrent
// use; it starts one goroutine (otter's clean-ups, every second), which
// ends once the cache is collected.
type BrowseCache struct {
	c       *otter.Cache[string, []byte]
	metrics Metrics
}

// NewBrowseCache returns a cache of browsing answers kept for ttl (from
// 1ms to MaxBrowseCacheTTL; 0 or less: nil, no cache), counting what it
// answers on metrics (nil: nothing counted).
func NewBrowseCache(ttl time.Duration, metrics Metrics) *BrowseCache {
	return newBrowseCache(ttl, metrics, nil, browseCacheBytes)
}

// newBrowseCache is NewBrowseCache on clock (nil: the system's), holding
// at most maxBytes.
func newBrowseCache(ttl time.Duration, metrics Metrics, clock otter.Clock, maxBytes uint64) *BrowseCache {
	if ttl <= 0 {
		return nil
	}
	if metrics == nil {
		metrics = noMetrics{}
	}
	return &BrowseCache{metrics: metrics, c: otter.Must(&otter.Options[string, []byte]{
		MaximumWeight:    maxBytes,
		Weigher:          browseWeight,
		ExpiryCalculator: otter.ExpiryWriting[string, []byte](min(ttl, MaxBrowseCacheTTL)),
		Clock:            clock,
	})}
}

// get returns the answer kept under key, or the one build makes (into a
// pooled buffer, kept as a copy of its exact size: an answer grown by
// appending holds up to twice its bytes), and whether this call ran
// build. Concurrent calls for one key run build once, on the context of
// the call that runs it, bounded as that call is (its timeout, its
// client's hang-up, a shutdown's cut), as a read of its own would be. Its
// end fails no other call: otter hands a build that failed after its
// runner's context ended to no waiter, and a waiter still live builds
// again. A call stops waiting when its own ctx ends (its error). build's
// errors are not kept.
func (bc *BrowseCache) get(ctx context.Context, key string, build func(context.Context, []byte) ([]byte, error)) (body []byte, built bool, err error) {
	body, err = bc.c.Get(ctx, key, otter.LoaderFunc[string, []byte](func(ctx context.Context, _ string) ([]byte, error) {
		built = true
		buf := bodyBuffers.Get().(*[]byte)
		b, err := build(ctx, (*buf)[:0])
		if err != nil {
			bodyBuffers.Put(buf)
			return nil, err
		}
		kept := bytes.Clone(b)
		if cap(b) <= maxPooledBody {
			*buf = b
			bodyBuffers.Put(buf)
		}
		return kept, nil
	}))
	return body, built, err
}

// browse answers r with 200 and the JSON body build makes from arg:
// through the cache, when there is one, under key() (route and the
// request's query, canonical; counted under route), else built for this
// request alone. build is a function of its arguments alone and arg a
// value, so without a cache the request allocates nothing for them (no
// closure, no key): browsing costs what it cost before the cache. build's
// errors go to writeError and are not kept.
func browse[T any](s *Server, w http.ResponseWriter, r *http.Request, route string, key func() string, arg T,
	build func(context.Context, T, []byte) ([]byte, error)) {
	if s.browseCache == nil {
		buf := bodyBuffers.Get().(*[]byte)
		b, err := build(r.Context(), arg, (*buf)[:0])
		if err != nil {
			bodyBuffers.Put(buf)
			s.writeError(w, r, err)
			return
		}
		writeBody(w, http.StatusOK, b)
		if cap(b) <= maxPooledBody {
			*buf = b
			bodyBuffers.Put(buf)
		}
		return
	}
	b, built, err := s.browseCache.get(r.Context(), key(), func(ctx context.Context, b []byte) ([]byte, error) {
		return build(ctx, arg, b)
	})
	// A request that read nothing and got nothing (it left, or reached
	// its timeout, while it waited) is neither a hit nor a miss.
	if built || err == nil || r.Context().Err() == nil {
		s.browseCache.metrics.BrowseCache(route, !built)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeBody(w, http.StatusOK, b)
}
