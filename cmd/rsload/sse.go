package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sync/errgroup"
)

// maxPlayers is how many stream users a room takes besides its owner.
const maxPlayers = 99

// Report is what a run measured.
type Report struct {
	Streams          int     `json:"streams"`
	Rooms            int     `json:"rooms"`
	Patches          int64   `json:"patches"`
	PatchErrors      int64   `json:"patchErrors"`
	PatchesPerSecond float64 `json:"patchesPerSecond"`
	Expected         int64   `json:"expectedDeliveries"`
	Delivered        int64   `json:"delivered"`
	EventsPerSecond  float64 `json:"eventsPerSecond"`
	LatencyP50ms     float64 `json:"latencyP50ms"`
	LatencyP99ms     float64 `json:"latencyP99ms"`
	LatencyMaxms     float64 `json:"latencyMaxms"`
	StreamDrops      int64   `json:"streamDrops"`
	// StreamDropReasons counts the reconnects by why the stream ended
	// (dropReason): the server ended it, reset it, closed its connection,
	// or the client's own transport gave up; StreamDropsOpening is how
	// many of them came before the first write (while the streams opened
	// and their presence events spread), outside the measured window
	StreamDropReasons  map[string]int64 `json:"streamDropReasons,omitempty"`
	StreamDropsOpening int64            `json:"streamDropsOpening,omitempty"`
	// StreamRefusals counts stream openings answered with an error, by
	// problem code (a 429's Retry-After is waited; another 4xx but 408
	// ends that stream)
	StreamRefusals map[string]int64 `json:"streamRefusals,omitempty"`
	// OpenedInS: from the first stream asked for until every stream had
	// its opening (or gave up), in seconds: all are asked for at once
	OpenedInS float64 `json:"openedInS,omitempty"`
	// with -rss-pid: the server's resident memory before the streams
	// opened (the sse scenario's: before it seeded its rooms) and with
	// them open and idle, and the difference per stream
	RSSBeforeKiB    int64   `json:"rssBeforeKiB,omitempty"`
	RSSBeforeAt     string  `json:"rssBeforeAt,omitempty"` // "seeding" (the sse scenario) or "streams" (fanout)
	RSSStreamsKiB   int64   `json:"rssStreamsKiB,omitempty"`
	RSSPerStreamKiB float64 `json:"rssPerStreamKiB,omitempty"`
	// and the whole process's RSS with them idle per stream: an upper
	// bound, the instance's own memory counted in
	RSSWholePerStreamKiB float64 `json:"rssWholePerStreamKiB,omitempty"`
	// with -rss-settle: the lowest RSS within it, and when it was read
	RSSSettledKiB          int64   `json:"rssSettledKiB,omitempty"`
	RSSSettledPerStreamKiB float64 `json:"rssSettledPerStreamKiB,omitempty"`
	RSSSettledAfterS       float64 `json:"rssSettledAfterS,omitempty"`
	// the server's goroutines (go_goroutines of the first URL's /metrics,
	// when it serves them) before the streams and with them idle
	GoroutinesBefore  int64 `json:"goroutinesBefore,omitempty"`
	GoroutinesStreams int64 `json:"goroutinesStreams,omitempty"`
	// with -rss-pid: the server's CPU time (user + system) from the first
	// write until 2 s after the last (its deliveries: lastEvents), all
	// streams still open, and per event delivered
	ServerCPUSeconds  float64 `json:"serverCPUSeconds,omitempty"`
	ServerCPUPerEvent float64 `json:"serverCPUPerEventMicros,omitempty"`
	// with -rss-pid: the server's CPU time from the end of the window
	// above until it is quiet again once the streams closed (quietCPU),
	// and per stream: what a stream's end costs, outside the window;
	// ServerCloseNotQuiet: the server was not quiet within 30 s, or went
	// away (the figures are what it used until then); none of them when
	// the server's CPU time could not be read. ServerIdleCPUms: the
	// server's CPU a second in 2 s before the streams opened, its idle
	// floor (realsyncd's janitor, with rooms seeded), which "quiet" is
	// measured against: the closing figures include that floor too
	ServerIdleCPUms         float64 `json:"serverIdleCPUMillisPerSecond,omitempty"`
	ServerCloseNotQuiet     bool    `json:"serverCloseNotQuiet,omitempty"`
	ServerCloseCPUSeconds   float64 `json:"serverCloseCPUSeconds,omitempty"`
	ServerCloseCPUPerStream float64 `json:"serverCloseCPUPerStreamMicros,omitempty"`
}

type room struct {
	id, owner string
	users     []string
	streams   int
	mu        sync.Mutex
	sent      map[int64]time.Time // version → PATCH response time
}

// arrival is one state event received by a stream.
type arrival struct {
	room    *room
	version int64
	at      time.Time
}

func runSSE(ctx context.Context, c Config) (*Report, error) {
	// the server's RSS before the rooms are seeded: the seeding's garbage
	// is not a stream's, and a server whose collector lets garbage build
	// up to a floor (realsyncd's REALSYNC_GC_MIN_HEAP) would keep it in a
	// reading taken after it, while the collection after the streams'
	// opening burst frees it, leaving the difference short
	var before *int64
	if c.RSSPid != 0 {
		kib, err := residentKiB(c.RSSPid)
		if err != nil {
			return nil, err
		}
		before = &kib
	}
	rooms, err := setup(ctx, c)
	if err != nil {
		return nil, err
	}
	return measureStreams(ctx, c, rooms, before, func(i int) (url, token string, r *room) {
		r = rooms[i%len(rooms)]
		return c.URLs[i%len(c.URLs)] + "/v1/rooms/" + r.id + "/events", r.users[(i/len(rooms))%len(r.users)], r
	}, func(ctx context.Context, base string, r *room, n int) (int64, error) {
		var v struct{ Version int64 }
		err := call(ctx, "PATCH", base+"/v1/rooms/"+r.id+"/state", r.owner, map[string]any{"n": n}, &v)
		return v.Version, err
	})
}

// A stream opener gives stream i's URL, token and room; a sender writes
// the n-th change to room r through base and returns its version.
type (
	opener func(i int) (url, token string, r *room)
	sender func(ctx context.Context, base string, r *room, n int) (int64, error)
)

// measureStreams opens c.Streams streams, waits until they are quiet,
// sends changes at c.Rate for c.Duration, and reports what the streams
// received of them (and, with c.RSSPid, the server's memory per stream,
// from before: its RSS in KiB read by the caller before it seeded its
// rooms, or nil to read it now, before the streams). The goroutines are
// counted before the streams either way.
func measureStreams(ctx context.Context, c Config, rooms []*room, before *int64, open opener, send sender) (*Report, error) {
	warm(ctx, c.URLs)
	var rss [2]int64
	var err error
	goroutines := [2]int64{serverGoroutines(c.URLs[0]), 0}
	beforeAt := "streams"
	switch {
	case c.RSSPid == 0:
	case before != nil:
		rss[0], beforeAt = *before, "seeding"
	default:
		if rss[0], err = residentKiB(c.RSSPid); err != nil {
			return nil, err
		}
	}
	cpuOf := c.cpuOf
	if cpuOf == nil {
		cpuOf = cpuTime
	}
	var idle time.Duration // the server's CPU in idleWindow before the streams
	if c.RSSPid != 0 {
		at := cpuOf(c.RSSPid)
		time.Sleep(idleWindow)
		idle = max(0, cpuOf(c.RSSPid)-at)
	}
	streams := openStreams(ctx, c.Streams, open)
	defer streams.stop()
	var settled int64
	var settledAfter time.Duration
	if c.RSSPid != 0 {
		time.Sleep(2 * time.Second) // idle streams
		if rss[1], err = residentKiB(c.RSSPid); err != nil {
			return nil, err
		}
		if c.RSSSettle > 0 {
			if settled, settledAfter, err = settleRSS(c.RSSPid, c.RSSSettle); err != nil {
				return nil, err
			}
		}
	}
	goroutines[1] = serverGoroutines(c.URLs[0])
	var cpu [2]time.Duration
	if c.RSSPid != 0 {
		cpu[0] = cpuOf(c.RSSPid)
	}
	start := time.Now()
	streams.writing.Store(true)
	patches, errs := write(ctx, c, rooms, send)
	took := time.Since(start)
	streams.lastEvents()
	// the window ends with the last delivery: the streams' closing
	// (the server's hang-up handling, for realsyncd a lease and a
	// session entry given back in Redis a stream) is reported apart
	if c.RSSPid != 0 {
		cpu[1] = cpuOf(c.RSSPid)
	}
	rep := streams.close(c, rooms, patches, errs, took)
	if c.RSSPid != 0 {
		rep.ServerCPUSeconds = (cpu[1] - cpu[0]).Seconds()
		if rep.Delivered > 0 {
			rep.ServerCPUPerEvent = float64((cpu[1] - cpu[0]).Microseconds()) / float64(rep.Delivered)
		}
		rep.ServerIdleCPUms = float64(idle.Microseconds()) / 1e3 / idleWindow.Seconds()
		if end, quiet := quietCPU(c.RSSPid, cpuOf, idle, 30*time.Second); cpu[1] > 0 && end >= cpu[1] {
			closing := end - cpu[1]
			rep.ServerCloseCPUSeconds = closing.Seconds()
			rep.ServerCloseCPUPerStream = float64(closing.Microseconds()) / float64(c.Streams)
			rep.ServerCloseNotQuiet = !quiet
		}
	}
	if c.RSSPid != 0 {
		rep.RSSBeforeKiB, rep.RSSBeforeAt, rep.RSSStreamsKiB = rss[0], beforeAt, rss[1]
		rep.RSSPerStreamKiB = float64(rss[1]-rss[0]) / float64(c.Streams)
		rep.RSSWholePerStreamKiB = float64(rss[1]) / float64(c.Streams)
	}
	if settled != 0 {
		rep.RSSSettledKiB, rep.RSSSettledAfterS = settled, settledAfter.Seconds()
		rep.RSSSettledPerStreamKiB = float64(settled-rss[0]) / float64(c.Streams)
	}
	if goroutines[0] > 0 && goroutines[1] > 0 {
		rep.GoroutinesBefore, rep.GoroutinesStreams = goroutines[0], goroutines[1]
	}
	return rep, nil
}

// settleRSS reads the resident memory of process pid every second for
// limit, streams idle, and returns the lowest reading and when it was
// taken. An idle Go server runs a GC only when forced (every 2 minutes):
// until then the garbage of the streams' opening stays, and only after it
// does the runtime give the freed memory back, a few MB a second; so
// limit should exceed 2 minutes.
func settleRSS(pid int, limit time.Duration) (int64, time.Duration, error) {
	start := time.Now()
	var low int64
	var at time.Duration
	for time.Since(start) < limit {
		kib, err := residentKiB(pid)
		if err != nil {
			return 0, 0, err
		}
		if low == 0 || kib < low {
			low, at = kib, time.Since(start)
		}
		time.Sleep(time.Second)
	}
	return low, at, nil
}

// cpuTime is the user + system CPU time process pid used so far (0 when
// it cannot be read), from /proc at the kernel's clock ticks (100 Hz).
func cpuTime(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// the fields after the command's closing parenthesis; utime and
	// stime are the 14th and 15th of the line
	_, rest, _ := strings.Cut(string(b), ") ")
	f := strings.Fields(rest)
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+st) * 10 * time.Millisecond
}

// idleWindow is how long the server's idle floor is read before the
// streams open, and how long quietCPU's reads span.
const idleWindow = 2 * time.Second

// quietCPU waits until process pid is quiet (under idle + 20 ms of CPU in
// idleWindow, by cpu: cpuTime; idle is its floor, what it used in as long
// before the streams opened: realsyncd's janitor visits every room it
// holds; its sweep acts on gone clients once a second) and returns its CPU
// time then and true; false with the last time read when it was not quiet
// within the given time or went away (its time unreadable).
func quietCPU(pid int, cpu func(int) time.Duration, idle, within time.Duration) (time.Duration, bool) {
	reads := []time.Duration{cpu(pid)} // one every half second
	for end := time.Now().Add(within); time.Now().Before(end); {
		time.Sleep(500 * time.Millisecond)
		now := cpu(pid)
		if now == 0 {
			break
		}
		reads = append(reads, now)
		if k := len(reads); k > 4 && reads[k-1]-reads[k-5] < idle+20*time.Millisecond {
			return now, true
		}
	}
	return reads[len(reads)-1], false
}

// serverGoroutines reads go_goroutines from base's /metrics; 0 when it has
// none.
func serverGoroutines(base string) int64 {
	res, err := client.Get(base + "/metrics")
	if err != nil {
		return 0
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "go_goroutines "); ok {
			n, _ := strconv.ParseFloat(v, 64)
			return int64(n)
		}
	}
	return 0
}

// percentile is the pct-th percentile of sorted latencies (100: the
// largest), in milliseconds.
func percentile(sorted []time.Duration, pct int) float64 {
	return float64(sorted[min(len(sorted)*pct/100, len(sorted)-1)].Microseconds()) / 1000
}

// streamSet is streams being read.
type streamSet struct {
	stop     context.CancelFunc
	done     sync.WaitGroup
	arrivals [][]arrival
	drops    atomic.Int64
	writing  atomic.Bool  // the measured window began (the first write)
	opening  atomic.Int64 // drops before it
	openedIn time.Duration
	mu       sync.Mutex
	refused  map[string]int64 // by problem code
	why      map[string]int64 // drops by dropReason
}

// dropped counts a reconnect, for reason.
func (s *streamSet) dropped(reason string) {
	s.drops.Add(1)
	if !s.writing.Load() {
		s.opening.Add(1)
	}
	s.mu.Lock()
	s.why[reason]++
	s.mu.Unlock()
}

// openStreams opens n streams and returns once each has had its first
// event and all have been quiet for a second (the presence events of
// opening streams reach every stream of their room).
func openStreams(ctx context.Context, n int, open opener) *streamSet {
	streamCtx, stop := context.WithCancel(ctx)
	s := &streamSet{stop: stop, arrivals: make([][]arrival, n), refused: map[string]int64{}, why: map[string]int64{}}
	if n == 0 {
		return s
	}
	var ready sync.WaitGroup
	var frames atomic.Int64
	start := time.Now()
	for i := range n {
		url, token, r := open(i)
		r.mu.Lock() // a stream of r refused for good takes itself off meanwhile
		r.streams++
		r.mu.Unlock()
		ready.Add(1)
		s.done.Add(1)
		go func() {
			defer s.done.Done()
			s.arrivals[i] = s.read(streamCtx, url, token, r, &ready, &frames)
		}()
	}
	ready.Wait()
	s.openedIn = time.Since(start)
	settle(&frames)
	return s
}

// lastEvents waits for the last events of the writes: 2 s.
func (s *streamSet) lastEvents() { time.Sleep(2 * time.Second) }

// close ends the streams (after lastEvents) and reports what they
// received of the ok changes recorded in rooms, sent over took.
func (s *streamSet) close(c Config, rooms []*room, ok, failed int64, took time.Duration) *Report {
	if c.closing != nil {
		c.closing()
	}
	s.stop()
	s.done.Wait()
	rep := report(c, rooms, s.arrivals, ok, failed, took, s.drops.Load())
	rep.OpenedInS = s.openedIn.Seconds()
	s.mu.Lock()
	if len(s.refused) > 0 {
		rep.StreamRefusals = s.refused
	}
	if len(s.why) > 0 {
		rep.StreamDropReasons, rep.StreamDropsOpening = s.why, s.opening.Load()
	}
	s.mu.Unlock()
	return rep
}

// residentKiB reads VmRSS of a process on this machine.
func residentKiB(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("-rss-pid: %w", err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			return strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
		}
	}
	return 0, fmt.Errorf("-rss-pid: no VmRSS for process %d", pid)
}

// setup creates the rooms and their players.
func setup(ctx context.Context, c Config) ([]*room, error) {
	perRoom := min((c.Streams+c.Rooms-1)/c.Rooms, maxPlayers)
	rooms := make([]*room, c.Rooms)
	for i := range rooms {
		base := c.URLs[i%len(c.URLs)]
		owner, err := guest(ctx, base, "owner")
		if err != nil {
			return nil, err
		}
		var created struct{ Room struct{ ID string } }
		if err := setupCall(ctx, "POST", base+"/v1/rooms", owner, map[string]any{"name": fmt.Sprint("load ", i),
			"mode": "load", "region": "local", "maxPlayers": 100, "statePolicy": "open"}, &created); err != nil {
			return nil, err
		}
		r := &room{id: created.Room.ID, owner: owner, sent: map[int64]time.Time{}, users: make([]string, perRoom)}
		if err := joinAll(ctx, base, r); err != nil {
			return nil, err
		}
		rooms[i] = r
	}
	return rooms, nil
}

// settle waits until no stream received anything for a second (at most a
// minute): the presence events of 10 000 opening streams take a while to
// reach every stream, and must not be counted in the measured window.
func settle(frames *atomic.Int64) {
	last, quiet := frames.Load(), 0
	for deadline := time.Now().Add(time.Minute); quiet < 4 && time.Now().Before(deadline); {
		time.Sleep(250 * time.Millisecond)
		if n := frames.Load(); n != last {
			last, quiet = n, 0
		} else {
			quiet++
		}
	}
}

// joinAll makes len(r.users) new guests join r, 16 at a time.
func joinAll(ctx context.Context, base string, r *room) error {
	var g errgroup.Group
	g.SetLimit(16)
	for j := range r.users {
		g.Go(func() error {
			tok, err := guest(ctx, base, fmt.Sprint("p", j))
			if err != nil {
				return err
			}
			r.users[j] = tok
			return setupCall(ctx, "POST", base+"/v1/rooms/"+r.id+"/join", tok, nil, nil)
		})
	}
	return g.Wait()
}

// write sends changes at c.Rate for c.Duration, round-robin over rooms and
// instances, at most 64 in flight, and records when each answer arrived.
func write(ctx context.Context, c Config, rooms []*room, send sender) (ok, failed int64) {
	var okN, failN atomic.Int64
	var wg sync.WaitGroup
	tick := time.NewTicker(time.Second / time.Duration(c.Rate))
	defer tick.Stop()
	end := time.After(c.Duration)
	sem := make(chan struct{}, 64)
	for n := 0; ; n++ {
		select {
		case <-end:
			wg.Wait()
			return okN.Load(), failN.Load()
		case <-ctx.Done():
			wg.Wait()
			return okN.Load(), failN.Load()
		case <-tick.C:
		}
		r, base := rooms[n%len(rooms)], c.URLs[n%len(c.URLs)]
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			v, err := send(ctx, base, r, n)
			if err != nil {
				failN.Add(1)
				return
			}
			r.record(v)
			okN.Add(1)
		}()
	}
}

// record notes that the change of version v was answered now.
func (r *room) record(v int64) {
	at := time.Now()
	r.mu.Lock()
	r.sent[v] = at
	r.mu.Unlock()
}

// read reads room r's stream at url until ctx ends, reconnecting with
// Last-Event-ID after a drop, and returns the state events' arrival times.
// An opening answered with an error is counted by its code; after a 429 or
// 5xx it waits the answer's Retry-After (100 ms at least) and tries again,
// after any other (a 4xx, e.g. the room's stream cap) that stream ends.
func (s *streamSet) read(ctx context.Context, url, token string, r *room, ready *sync.WaitGroup, frames *atomic.Int64) []arrival {
	var out []arrival
	var lastID string
	first := true
	for ctx.Err() == nil {
		req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		if lastID != "" {
			req.Header.Set("Last-Event-ID", lastID)
		}
		wait := 100 * time.Millisecond
		res, err := client.Do(req)
		if err == nil && res.StatusCode != http.StatusOK {
			var p struct{ Code string }
			json.NewDecoder(io.LimitReader(res.Body, 64<<10)).Decode(&p)
			res.Body.Close()
			s.mu.Lock()
			s.refused[cmp.Or(p.Code, strconv.Itoa(res.StatusCode))]++
			s.mu.Unlock()
			if res.StatusCode < 500 && res.StatusCode != http.StatusTooManyRequests && res.StatusCode != http.StatusRequestTimeout {
				r.mu.Lock()
				r.streams-- // expects nothing
				r.mu.Unlock()
				break // retrying cannot cure it
			}
			if ra, err := strconv.Atoi(res.Header.Get("Retry-After")); err == nil {
				wait = max(wait, time.Duration(ra)*time.Second)
			}
		} else {
			why := ""
			if err == nil {
				out, lastID, err = readEvents(res.Body, r, out, lastID, &first, ready, frames)
				res.Body.Close()
				why = dropReason(err)
			} else {
				why = noResponse(err)
			}
			if ctx.Err() == nil {
				s.dropped(why)
			}
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
		}
	}
	if first {
		ready.Done()
	}
	return out
}

// readEvents reads a stream's body until it ends, appending the state
// events' arrivals to out; returns them, the last event's ID and what
// ended the body (io.EOF: the server ended the response).
func readEvents(body io.Reader, r *room, out []arrival, lastID string, first *bool, ready *sync.WaitGroup, frames *atomic.Int64) ([]arrival, string, error) {
	rd := bufio.NewReaderSize(body, 8<<10)
	var id, typ string
	for {
		line, err := rd.ReadString('\n')
		if err != nil {
			return out, lastID, err
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case strings.HasPrefix(line, "id: "):
			id = line[4:]
		case strings.HasPrefix(line, "event: "):
			typ = line[7:]
		case line == "" && id != "":
			frames.Add(1)
			if typ == "state" {
				v, _, _ := strings.Cut(id, "-")
				n, _ := strconv.ParseInt(v, 10, 64)
				out = append(out, arrival{room: r, version: n, at: time.Now()})
			}
			if *first {
				*first = false
				ready.Done()
			}
			lastID, id, typ = id, "", ""
		}
	}
}

func report(c Config, rooms []*room, arrivals [][]arrival, ok, failed int64, elapsed time.Duration, drops int64) *Report {
	rep := &Report{Streams: c.Streams, Rooms: c.Rooms, Patches: ok, PatchErrors: failed,
		PatchesPerSecond: float64(ok) / elapsed.Seconds(), StreamDrops: drops}
	for _, r := range rooms {
		rep.Expected += int64(len(r.sent) * r.streams)
	}
	var lat []time.Duration
	for _, as := range arrivals {
		for _, a := range as {
			a.room.mu.Lock()
			sent, ok := a.room.sent[a.version]
			a.room.mu.Unlock()
			if !ok {
				continue
			}
			rep.Delivered++
			lat = append(lat, max(0, a.at.Sub(sent)))
		}
	}
	rep.EventsPerSecond = float64(rep.Delivered) / elapsed.Seconds()
	if len(lat) > 0 {
		slices.Sort(lat)
		rep.LatencyP50ms, rep.LatencyP99ms, rep.LatencyMaxms = percentile(lat, 50), percentile(lat, 99), percentile(lat, 100)
	}
	return rep
}

func (r *Report) print(w io.Writer, c Config) {
	fmt.Fprintf(w, "sse: %d streams on %d rooms via %d instance(s), %s of writes\n", r.Streams, r.Rooms, len(c.URLs), c.Duration)
	fmt.Fprintf(w, "  patches     %d ok, %d failed (%.0f/s)\n", r.Patches, r.PatchErrors, r.PatchesPerSecond)
	fmt.Fprintf(w, "  delivered   %d of %d expected (%.0f events/s), %d stream reconnects\n", r.Delivered, r.Expected, r.EventsPerSecond, r.StreamDrops)
	if r.OpenedInS > 0 {
		fmt.Fprintf(w, "  opening     %d streams asked for at once, every one open in %.2f s (%.0f openings/s)\n", r.Streams, r.OpenedInS, float64(r.Streams)/r.OpenedInS)
	}
	if len(r.StreamDropReasons) > 0 {
		fmt.Fprintf(w, "  reconnects  %d before the first write; by why the stream ended: %v\n", r.StreamDropsOpening, r.StreamDropReasons)
	}
	if len(r.StreamRefusals) > 0 {
		fmt.Fprintf(w, "  refused     stream openings answered with an error, by code: %v\n", r.StreamRefusals)
	}
	fmt.Fprintf(w, "  latency     p50 %.2f ms  p99 %.2f ms  max %.2f ms (PATCH response to arrival)\n", r.LatencyP50ms, r.LatencyP99ms, r.LatencyMaxms)
	if r.RSSStreamsKiB != 0 {
		fmt.Fprintf(w, "  server RSS  %d KiB before the %s, %d KiB with them idle: %.1f KiB per stream (the whole process: %.1f KiB per stream)\n",
			r.RSSBeforeKiB, r.RSSBeforeAt, r.RSSStreamsKiB, r.RSSPerStreamKiB, r.RSSWholePerStreamKiB)
	}
	if r.RSSSettledKiB != 0 {
		fmt.Fprintf(w, "  settled RSS %d KiB, the lowest within -rss-settle (after %.0f s more idle): %.1f KiB per stream\n", r.RSSSettledKiB, r.RSSSettledAfterS, r.RSSSettledPerStreamKiB)
	}
	if r.ServerCPUSeconds != 0 || r.RSSStreamsKiB != 0 {
		// measured (-rss-pid) even when it read 0: the kernel counts a
		// process' CPU in ticks, and a smoke run's few events may take less
		// than one
		fmt.Fprintf(w, "  server CPU  %.2f s from the first write to the last delivery: %.1f µs per event delivered\n", r.ServerCPUSeconds, r.ServerCPUPerEvent)
	}
	if r.ServerCloseCPUSeconds != 0 {
		fmt.Fprintf(w, "  closing     %.2f s of server CPU once the streams closed: %.1f µs per stream (its idle floor before the streams: %.1f ms a second)", r.ServerCloseCPUSeconds, r.ServerCloseCPUPerStream, r.ServerIdleCPUms)
		if r.ServerCloseNotQuiet {
			fmt.Fprint(w, " (not quiet again within 30 s, or gone: what it used until then)")
		}
		fmt.Fprintln(w)
	}
	if r.GoroutinesStreams != 0 {
		fmt.Fprintf(w, "  goroutines  %d before the streams, %d with them idle: %.2f per stream\n", r.GoroutinesBefore, r.GoroutinesStreams,
			float64(r.GoroutinesStreams-r.GoroutinesBefore)/float64(r.Streams))
	}
}

// dropReason names why a stream's response ended or could not be had
// (err: what client.Do or the body's read returned), without the IDs and
// counts that make each error unique: "server ended the stream" (the body
// ended cleanly: the server finished the response), "reset by the server:
// CODE" (an HTTP/2 RST_STREAM), "GOAWAY: CODE" (the server closed the
// HTTP/2 connection), "connection lost" (the client's transport found the
// connection dead), "unexpected EOF", "connection reset", "timeout", else
// the error's text with its digits replaced by N.
func dropReason(err error) string {
	if err == nil || errors.Is(err, io.EOF) {
		return "server ended the stream"
	}
	msg := err.Error()
	if m := peerReset.FindStringSubmatch(msg); m != nil {
		return "reset by the server: " + m[1]
	}
	if m := goAway.FindStringSubmatch(msg); m != nil {
		return "GOAWAY: " + m[1]
	}
	var ne net.Error
	switch {
	case strings.Contains(msg, "client connection lost"):
		return "connection lost"
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "unexpected EOF"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset"
	case errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	}
	return digits.ReplaceAllString(msg, "N")
}

// noResponse names why a stream's request got no response (err:
// client.Do's): "no response: " and dropReason's name, where the
// connection's end before any answer (EOF) is "no response: connection
// closed".
func noResponse(err error) string {
	if errors.Is(err, io.EOF) {
		return "no response: connection closed"
	}
	return "no response: " + dropReason(err)
}

var (
	peerReset = regexp.MustCompile(`stream error: stream ID \d+; (\w+); received from peer`)
	goAway    = regexp.MustCompile(`GOAWAY.*ErrCode=(\w+)`)
	digits    = regexp.MustCompile(`\d+`)
)

// warm makes one request to each of urls with the streams' client, so that
// over h2c the streams opened at once find its connection there: a
// transport with none yet dials one for each of them (CI once saw 7
// connections for 6 streams and the publishes).
func warm(ctx context.Context, urls []string) {
	for _, u := range urls {
		req, err := http.NewRequestWithContext(ctx, "GET", u+"/healthz", nil)
		if err != nil {
			continue
		}
		if res, err := client.Do(req); err == nil {
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
		}
	}
}
