package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The fanout scenario is the machine's SSE baseline: the minimal server
// (-serve-minimal) holds streams as realsyncd does, one goroutine and a
// bounded queue each, and fans every published frame (the size of a state
// event) out to its room's streams, flushing each; no Redis, no API, no
// auth. The load is the sse scenario's: -streams readers over -rooms, a
// publish (POST) -rate times a second round-robin over rooms, latency from
// the POST's response to the frame's arrival.

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
	w.Write([]byte("retry: 3000\n\n"))
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

// runFanout drives a -serve-minimal server's fan-out.
func runFanout(ctx context.Context, c Config) (*Report, error) {
	base := c.URLs[0]
	streamCtx, stop := context.WithCancel(ctx)
	defer stop()
	var ready, done sync.WaitGroup
	got := make([][]fanoutArrival, c.Streams)
	for i := range c.Streams {
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			got[i] = readFanout(streamCtx, fmt.Sprintf("%s/fanout/events?room=%d", base, i%c.Rooms), &ready)
		}()
	}
	ready.Wait()
	start := time.Now()
	var mu sync.Mutex
	sent := map[int64]time.Time{}
	perRoom := make([]int64, c.Rooms)
	var failed atomic.Int64
	tick := time.NewTicker(time.Second / time.Duration(c.Rate))
	end := time.After(c.Duration)
	sem := make(chan struct{}, 64)
	var wg sync.WaitGroup
loop:
	for n := 0; ; n++ {
		select {
		case <-end:
			break loop
		case <-ctx.Done():
			break loop
		case <-tick.C:
		}
		room := n % c.Rooms
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			var v struct{ Version int64 }
			if err := call(ctx, "POST", fmt.Sprintf("%s/fanout/publish?room=%d", base, room), "", nil, &v); err != nil {
				failed.Add(1)
				return
			}
			at := time.Now()
			mu.Lock()
			sent[v.Version] = at
			perRoom[room]++
			mu.Unlock()
		}()
	}
	tick.Stop()
	wg.Wait()
	elapsed := time.Since(start)
	time.Sleep(2 * time.Second) // let the last frames arrive
	stop()
	done.Wait()

	rep := &Report{Streams: c.Streams, Rooms: c.Rooms, Patches: int64(len(sent)), PatchErrors: failed.Load()}
	rep.PatchesPerSecond = float64(rep.Patches) / elapsed.Seconds()
	for i := range c.Streams {
		rep.Expected += perRoom[i%c.Rooms]
	}
	var lat []time.Duration
	for _, as := range got {
		for _, a := range as {
			if at, ok := sent[a.version]; ok {
				rep.Delivered++
				lat = append(lat, max(0, a.at.Sub(at)))
			}
		}
	}
	rep.EventsPerSecond = float64(rep.Delivered) / elapsed.Seconds()
	if len(lat) > 0 {
		slices.Sort(lat)
		ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
		rep.LatencyP50ms, rep.LatencyP99ms, rep.LatencyMaxms = ms(lat[len(lat)/2]), ms(lat[len(lat)*99/100]), ms(lat[len(lat)-1])
	}
	return rep, nil
}

type fanoutArrival struct {
	version int64
	at      time.Time
}

// readFanout reads one stream until ctx ends.
func readFanout(ctx context.Context, url string, ready *sync.WaitGroup) []fanoutArrival {
	var out []fanoutArrival
	first := true
	defer func() {
		if first {
			ready.Done()
		}
	}()
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	res, err := client.Do(req)
	if err != nil {
		return nil
	}
	defer res.Body.Close()
	rd := bufio.NewReaderSize(res.Body, 8<<10)
	for {
		line, err := rd.ReadString('\n')
		if err != nil {
			return out
		}
		if first && line == "\n" {
			first = false
			ready.Done()
		}
		if id, ok := strings.CutPrefix(line, "id: "); ok {
			v, _, _ := strings.Cut(id, "-")
			n, _ := strconv.ParseInt(v, 10, 64)
			out = append(out, fanoutArrival{version: n, at: time.Now()})
		}
	}
}
