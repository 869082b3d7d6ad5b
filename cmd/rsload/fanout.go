package main

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// The fanout scenario is the machine's SSE baseline: the minimal server
// (-serve-minimal) holds streams as realsyncd does, one goroutine and a
// bounded queue each, and fans every published frame (the size of a state
// event) out to its room's streams, flushing each; no Redis, no API, no
// auth. The load is the sse scenario's (measureStreams): -streams readers
// over -rooms, a publish (POST) -rate times a second round-robin over
// rooms, latency from the POST's response to the frame's arrival.

// fanoutHub is the minimal server's streams by room.
type fanoutHub struct {
	mu    sync.Mutex
	rooms map[string]map[chan []byte]bool
	seq   atomic.Int64
}

// serveEvents is GET /fanout/events?room=r.
func (h *fanoutHub) serveEvents(w http.ResponseWriter, r *http.Request) {
	room := r.URL.Query().Get("room")
	q := make(chan []byte, 256)
	h.mu.Lock()
	if h.rooms[room] == nil {
		h.rooms[room] = map[chan []byte]bool{}
	}
	h.rooms[room][q] = true
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		delete(h.rooms[room], q)
		h.mu.Unlock()
	}()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Write([]byte("retry: 3000\n\nid: 0-open\nevent: open\ndata: {}\n\n")) // readers start counting at the first event
	rc := http.NewResponseController(w)
	rc.Flush()
	for {
		select {
		case <-r.Context().Done():
			return
		case f := <-q:
			if _, err := w.Write(f); err != nil || rc.Flush() != nil {
				return
			}
		}
	}
}

// servePublish is POST /fanout/publish?room=r: one frame to every stream
// of the room (dropped for a stream whose queue is full); answers the
// frame's sequence number.
func (h *fanoutHub) servePublish(w http.ResponseWriter, r *http.Request) {
	room := r.URL.Query().Get("room")
	n := h.seq.Add(1)
	f := []byte(fmt.Sprintf("id: %d-abcd\nevent: state\ndata: {\"type\":\"state\",\"roomId\":%q,\"version\":%d,\"ts\":\"2026-11-21T22:13:28.123Z\",\"by\":1,\"set\":{\"n\":%d},\"del\":[],\"stateVersion\":%d}\n\n",
		n, room, n, n, n))
	h.mu.Lock()
	for q := range h.rooms[room] {
		select {
		case q <- f:
		default:
		}
	}
	h.mu.Unlock()
	fmt.Fprintf(w, `{"version":%d}`, n)
}

// runFanout drives a -serve-minimal server's fan-out the way runSSE drives
// realsyncd: the same streams, rate, settling and report.
func runFanout(ctx context.Context, c Config) (*Report, error) {
	rooms := make([]*room, c.Rooms)
	for i := range rooms {
		rooms[i] = &room{id: strconv.Itoa(i), sent: map[int64]time.Time{}}
	}
	return measureStreams(ctx, c, rooms, func(i int) (url, token string, r *room) {
		r = rooms[i%len(rooms)]
		return c.URLs[i%len(c.URLs)] + "/fanout/events?room=" + r.id, "", r
	}, func(ctx context.Context, base string, r *room, n int) (int64, error) {
		var v struct{ Version int64 }
		err := call(ctx, "POST", base+"/fanout/publish?room="+r.id, "", nil, &v)
		return v.Version, err
	})
}
