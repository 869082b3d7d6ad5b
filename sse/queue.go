package sse

import "sync"

// queue is a stream's items not yet handled, for a stream served by its
// own goroutine (a lobby or personal stream): an array grown as items come,
// whose drained array is kept for the next batch only while small
// (keptQueue), so that an idle stream holds none larger. A channel of
// Config.QueueSize items held its whole array for the stream's life: 10
// KiB a personal stream, 2 KiB a lobby stream, with QueueSize 256.
type queue[T any] struct {
	max   int // the items it holds at most
	mu    sync.Mutex
	items []T
	spare []T // the last batch's array, for the next one
}

// push queues it unless q.max items wait already, and reports whether it
// did.
func (q *queue[T]) push(it T) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.items) >= q.max {
		return false
	}
	if q.items == nil {
		q.items, q.spare = q.spare, nil
	}
	q.items = append(q.items, it)
	return true
}

// take returns the queued items, in the order they came (nil when none),
// and empties the queue; recycle gives the array back once they are
// handled.
func (q *queue[T]) take() []T {
	q.mu.Lock()
	defer q.mu.Unlock()
	batch := q.items
	q.items = nil
	return batch
}

// recycle keeps a handled batch's array for the next one, unless it is
// larger than keptQueue.
func (q *queue[T]) recycle(batch []T) {
	if batch == nil || cap(batch) > keptQueue {
		return
	}
	clear(batch[:cap(batch)])
	q.mu.Lock()
	if q.spare == nil {
		q.spare = batch[:0]
	}
	q.mu.Unlock()
}
