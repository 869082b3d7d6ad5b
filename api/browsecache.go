package api

import (
	"context"
	"net/http"
	"time"

	"github.com/maypok86/otter/v2"
)

// MaxBrowseCacheTTL bounds how old a cached browsing answer may be
// (REALSYNC_BROWSE_CACHE_TTL).
const MaxBrowseCacheTTL = 10 * time.Second

// browseCacheBytes bounds the answers a BrowseCache holds, keys included:
// past it the least used go first. A list page of 100 rooms is tens of
// KiB, so this holds hundreds of distinct pages.
const browseCacheBytes = 32 << 20

// BrowseCache keeps the encoded answers of the browsing reads, room list
// pages (GET /v1/rooms) and the lobby's counts (GET /v1/lobby/stats), for
// a TTL on this instance: a request answered from it reads nothing from
// Redis and encodes nothing. An answer is read once however many requests
// ask for it together (they wait for that one read, each at most until it
// ends itself), and kept by the request's route and query, so two
// spellings of one query (parameters in another order) share it. Errors are never kept. What it costs clients:
// a room created, changed or closed within the TTL may be missing from a
// page or shown as it was (a join re-checks the room, as it does with
// replica reads); see openapi.yaml's GET /v1/rooms.
type BrowseCache struct {
	c       *otter.Cache[string, []byte]
	metrics Metrics
}

// NewBrowseCache returns a cache of browsing answers kept for ttl (from
// 1ms to MaxBrowseCacheTTL; 0 or less: nil, no cache), counting what it
// answers on metrics (nil: nothing counted).
func NewBrowseCache(ttl time.Duration, metrics Metrics) *BrowseCache {
	return newBrowseCache(ttl, metrics, nil)
}

// newBrowseCache is NewBrowseCache on clock (nil: the system's).
func newBrowseCache(ttl time.Duration, metrics Metrics, clock otter.Clock) *BrowseCache {
	if ttl <= 0 {
		return nil
	}
	if metrics == nil {
		metrics = noMetrics{}
	}
	return &BrowseCache{metrics: metrics, c: otter.Must(&otter.Options[string, []byte]{
		MaximumWeight:    browseCacheBytes,
		Weigher:          func(k string, v []byte) uint32 { return uint32(len(k) + len(v)) },
		ExpiryCalculator: otter.ExpiryWriting[string, []byte](min(ttl, MaxBrowseCacheTTL)),
		Clock:            clock,
	})}
}

// browse answers r with 200 and the JSON body build makes: through the
// cache, when there is one, under r's route and key (the request's query,
// canonical), else built for this request alone. build's errors go to
// writeError and are not kept.
func (s *Server) browse(w http.ResponseWriter, r *http.Request, route, key string, build func(context.Context, []byte) ([]byte, error)) {
	if s.browseCache == nil {
		buf := bodyBuffers.Get().(*[]byte)
		b, err := build(r.Context(), (*buf)[:0])
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
	loaded := false
	// The read runs on the context of the request that runs it, bounded as
	// that request is (its timeout, its client's hang-up, a shutdown's
	// cut), as a read of its own would be. Its end fails no other request:
	// otter hands a read that failed after its runner's context ended to
	// no waiter, and a waiter still live reads again. A waiter stops
	// waiting when its own context ends.
	b, err := s.browseCache.c.Get(r.Context(), route+"?"+key, otter.LoaderFunc[string, []byte](
		func(ctx context.Context, _ string) ([]byte, error) {
			loaded = true
			return build(ctx, nil)
		}))
	// A request that read nothing and got nothing (it left, or reached
	// its timeout, while it waited) is neither a hit nor a miss.
	if loaded || err == nil || r.Context().Err() == nil {
		s.browseCache.metrics.BrowseCache(route, !loaded)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeBody(w, http.StatusOK, b)
}
