package metrics

import "github.com/prometheus/client_golang/prometheus"

// batchKinds are the kinds of store batches (store.BatchMetrics).
var batchKinds = []string{"script", "read", "transaction"}

// batchBuckets (calls per batch): 1 is a call that found its node idle; the
// store sends at most batch.DefaultMaxSize (128, store/internal/batch) calls
// in one batch.
var batchBuckets = []float64{1, 2, 4, 8, 16, 32, 64, 128}

// batchMetrics is realsync_redis_batch_size, by kind, its series resolved
// once.
type batchMetrics struct {
	sizes map[string]prometheus.Observer
}

// newBatchMetrics creates realsync_redis_batch_size and registers it on reg.
func newBatchMetrics(reg prometheus.Registerer) batchMetrics {
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "realsync_redis_batch_size",
		Help:    "Calls sent to Redis together in one batch (REALSYNC_REDIS_BATCH_WINDOW), by kind: script (script runs in one pipeline), read (pipelines of reads alone, in one pipeline), transaction (transactions that run a script or read a room, in one MULTI/EXEC).",
		Buckets: batchBuckets}, []string{"kind"})
	reg.MustRegister(h)
	b := batchMetrics{sizes: map[string]prometheus.Observer{}}
	for _, k := range batchKinds {
		b.sizes[k] = h.WithLabelValues(k)
	}
	return b
}

// RedisBatch records one batch the store sent (store.BatchMetrics).
func (m *Metrics) RedisBatch(kind string, size int) {
	if o, ok := m.batch.sizes[kind]; ok {
		o.Observe(float64(size))
	}
}
