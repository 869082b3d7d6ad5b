package main

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// The fanout scenario is the machine's SSE baseline: the minimal server
// (-serve-minimal) holds streams as realsyncd does, one goroutine and a
// bounded queue each, and fans every published frame (the size of a state
// event) out to its room's streams, flushing each; no API, no auth. With
// -redis (the same Redis as realsyncd's) an event reaches the fan-out as
// realsyncd's do: the POST publishes the event's JSON to the room's channel
// ("<version> <tag> <json>", as the store's scripts do), one Pub/Sub
// connection (go-redis, as store/feed/feed.go) receives it, and the frame is
// built once per event and shared by the room's streams. Without -redis
// the POST hands its frame to the streams itself. The load is the sse
// scenario's (measureStreams): -streams readers over -rooms, a publish
// (POST) -rate times a second round-robin over rooms, latency from the
// POST's response to the frame's arrival.

// fanoutHub is the minimal server's streams by room.
type fanoutHub struct {
	mu    sync.Mutex
	rooms map[string]map[chan []byte]bool
	seq   atomic.Int64
	// rdb, when set, carries the events: publish to it, fan out what its
	// subscription receives (subscribe).
	rdb redis.UniversalClient
}

// fanoutChannels is the prefix of the baseline's room channels in Redis.
const fanoutChannels = "rsload:fanout:"

// subscribe receives every room's events from Redis (one pattern
// subscription) and fans them out until ctx ends; the subscription is
// confirmed before it returns.
func (h *fanoutHub) subscribe(ctx context.Context) error {
	ps := h.rdb.PSubscribe(ctx, fanoutChannels+"*")
	if _, err := ps.Receive(ctx); err != nil {
		ps.Close()
		return err
	}
	go func() {
		<-ctx.Done()
		ps.Close()
	}()
	go func() {
		for m := range ps.Channel(redis.WithChannelSize(4096)) {
			v, rest, _ := strings.Cut(m.Payload, " ")
			tag, data, _ := strings.Cut(rest, " ")
			f := make([]byte, 0, len(v)+len(tag)+len(data)+32)
			f = append(append(append(append(f, "id: "...), v...), '-'), tag...)
			f = append(append(append(f, "\nevent: state\ndata: "...), data...), "\n\n"...)
			h.fan(strings.TrimPrefix(m.Channel, fanoutChannels), f)
		}
	}()
	return nil
}

// fan offers frame f to every stream of room (dropped for a stream whose
// queue is full).
func (h *fanoutHub) fan(room string, f []byte) {
	h.mu.Lock()
	for q := range h.rooms[room] {
		select {
		case q <- f:
		default:
		}
	}
	h.mu.Unlock()
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

// servePublish is POST /fanout/publish?room=r: one state event to every
// stream of the room, through Redis when the hub has it; answers the
// event's sequence number.
func (h *fanoutHub) servePublish(w http.ResponseWriter, r *http.Request) {
	room := r.URL.Query().Get("room")
	n := h.seq.Add(1)
	data := fmt.Sprintf("{\"type\":\"state\",\"roomId\":%q,\"version\":%d,\"ts\":\"2026-11-21T22:13:28.123Z\",\"by\":1,\"set\":{\"n\":%d},\"del\":[],\"stateVersion\":%d}", room, n, n, n)
	if h.rdb != nil {
		if err := h.rdb.Publish(r.Context(), fanoutChannels+room, strconv.FormatInt(n, 10)+" abcd "+data).Err(); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintf(w, `{"code":"REDIS"}`)
			return
		}
	} else {
		h.fan(room, []byte(fmt.Sprintf("id: %d-abcd\nevent: state\ndata: %s\n\n", n, data)))
	}
	fmt.Fprintf(w, `{"version":%d}`, n)
}

// runFanout drives a -serve-minimal server's fan-out the way runSSE drives
// realsyncd: the same streams, rate, settling and report.
func runFanout(ctx context.Context, c Config) (*Report, error) {
	rooms := make([]*room, c.Rooms)
	for i := range rooms {
		rooms[i] = &room{id: strconv.Itoa(i), sent: map[int64]time.Time{}}
	}
	return measureStreams(ctx, c, rooms, nil, func(i int) (url, token string, r *room) {
		r = rooms[i%len(rooms)]
		return c.URLs[i%len(c.URLs)] + "/fanout/events?room=" + r.id, "", r
	}, func(ctx context.Context, base string, r *room, n int) (int64, error) {
		var v struct{ Version int64 }
		err := call(ctx, "POST", base+"/fanout/publish?room="+r.id, "", nil, &v)
		return v.Version, err
	})
}
