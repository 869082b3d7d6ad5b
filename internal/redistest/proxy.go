package redistest

import (
	"bytes"
	"context"
	"math"
	"math/rand/v2"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Proxy relays loopback TCP connections to a Redis server, and loses
// replies on demand: after LoseReplyTo(marker), the first request that
// carries marker reaches Redis, which runs it, and the connection it came
// on is closed when Redis answers, before the reply is relayed; after
// LoseReplies(p), each reply (what one read from Redis returns) is lost so
// with probability p. That is what a client sees of a connection reset,
// or a network that fails, after Redis ran its command: the outcome is
// unknown to it.
type Proxy struct {
	Addr   string
	target string
	ln     net.Listener
	marker atomic.Pointer[[]byte]
	refuse atomic.Pointer[refusal] // RefuseWith's, RefuseEvery's
	rate   atomic.Uint64           // LoseReplies' p, as math.Float64bits
	delay  atomic.Int64            // DelayRequests' d, in ns
	lost   atomic.Int32
	hold   atomic.Pointer[hold] // HoldReplyTo's, until a request carries its marker

	mu    sync.Mutex
	conns map[net.Conn]bool
	holds []*hold // released when the proxy closes
	wg    sync.WaitGroup
}

// StartProxy relays to the Redis at target (host:port) until the test
// ends.
func StartProxy(tb testing.TB, target string) *Proxy {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	p := &Proxy{Addr: ln.Addr().String(), target: target, ln: ln, conns: map[net.Conn]bool{}}
	p.wg.Add(1)
	go p.accept()
	tb.Cleanup(p.close)
	return p
}

// LoseReplyTo arms the proxy: Redis' reply to the next request whose bytes
// contain marker (a script's function name, a key) is not relayed; ""
// disarms it.
func (p *Proxy) LoseReplyTo(marker string) {
	if marker == "" {
		p.marker.Store(nil)
		return
	}
	m := []byte(marker)
	p.marker.Store(&m)
}

// RefuseWith arms the proxy to answer the next request whose bytes contain
// marker with reply (an error line, e.g. "-TRYAGAIN …"), itself, without
// sending it to Redis: as Redis refuses a command before running it. The
// request must be one command alone (no pipeline).
func (p *Proxy) RefuseWith(marker, reply string) {
	p.refuse.Store(&refusal{[]byte(marker), []byte(reply + "\r\n"), false})
}

// RefuseEvery is RefuseWith for every request that carries marker until
// RefuseEvery("", "") (a node that keeps answering MOVED, say).
func (p *Proxy) RefuseEvery(marker, reply string) {
	if marker == "" {
		p.refuse.Store(nil)
		return
	}
	p.refuse.Store(&refusal{[]byte(marker), []byte(reply + "\r\n"), true})
}

// refusal is a marker and the reply the proxy gives the request that
// carries it: the next one, or every one (keep).
type refusal struct {
	marker, reply []byte
	keep          bool
}

// HoldReplyTo arms the proxy: Redis' reply to the next request whose bytes
// contain marker is held back, not relayed, until release is called (or
// the proxy closes); held is closed once that reply came from Redis (so
// Redis ran the request). That is a client that sent a command, which ran,
// and waits for its answer: a slow network, or a Redis busy after the
// command. Calling release again does nothing. "" disarms the proxy (a
// reply already held stays so until its release).
func (p *Proxy) HoldReplyTo(marker string) (held <-chan struct{}, release func()) {
	if marker == "" {
		p.hold.Store(nil)
		return nil, func() {}
	}
	h := &hold{marker: []byte(marker), held: make(chan struct{}), released: make(chan struct{})}
	p.hold.Store(h)
	p.mu.Lock()
	p.holds = append(p.holds, h)
	p.mu.Unlock()
	return h.held, h.release
}

// hold is a HoldReplyTo's.
type hold struct {
	marker         []byte
	held, released chan struct{}
	once           sync.Once
}

func (h *hold) release() { h.once.Do(func() { close(h.released) }) }

// LoseReplies loses each reply with probability p from now on (0: none).
func (p *Proxy) LoseReplies(rate float64) { p.rate.Store(math.Float64bits(rate)) }

// DelayRequests holds each request the proxy reads for d before relaying
// it to Redis, from now on (0: none): a slow network, or a busy Redis, as
// its clients see it.
func (p *Proxy) DelayRequests(d time.Duration) { p.delay.Store(int64(d)) }

// Lost is how many replies the proxy lost.
func (p *Proxy) Lost() int { return int(p.lost.Load()) }

// StartProxiedCluster starts a Cluster of its own with masters masters,
// each reached through a Proxy: every node announces its proxy's port, so
// a client seeded with the proxies' addresses (the first result) talks to
// the nodes through them only. Stopped when the test ends.
func StartProxiedCluster(tb testing.TB, masters int) ([]string, []*Proxy) {
	tb.Helper()
	c, err := StartCluster(masters)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(c.Stop)
	ctx := context.Background()
	var addrs []string
	var proxies []*Proxy
	for _, n := range c.Nodes {
		p := StartProxy(tb, n.Addr)
		_, port, _ := net.SplitHostPort(p.Addr)
		cl := redis.NewClient(&redis.Options{Addr: n.Addr})
		err := cl.ConfigSet(ctx, "cluster-announce-port", port).Err()
		cl.Close()
		if err != nil {
			tb.Fatal(err)
		}
		addrs, proxies = append(addrs, p.Addr), append(proxies, p)
	}
	// until every node's view of the slots names the proxies only
	deadline := time.Now().Add(20 * time.Second)
	for _, n := range c.Nodes {
		cl := redis.NewClient(&redis.Options{Addr: n.Addr})
		for {
			//lint:ignore SA1019 the layout as go-redis reads it (CLUSTER SLOTS), which the proxies must own
			slots, err := cl.ClusterSlots(ctx).Result()
			seen := 0
			for _, s := range slots {
				for _, node := range s.Nodes {
					if slices.Contains(addrs, node.Addr) {
						seen++
					}
				}
			}
			if err == nil && len(slots) > 0 && seen == len(slots) {
				break
			}
			if time.Now().After(deadline) {
				cl.Close()
				tb.Fatalf("the nodes did not announce their proxies within 20 s: %v %v", slots, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
		cl.Close()
	}
	return addrs, proxies
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		if !p.track(c, s) {
			return
		}
		var lose atomic.Bool
		var holding atomic.Pointer[hold] // the hold of a request sent on this connection
		var lastRequest atomic.Int64     // unix ns of the last request bytes relayed
		p.wg.Add(2)
		go func() { // requests
			defer p.wg.Done()
			buf := make([]byte, 64<<10)
			for {
				n, err := c.Read(buf)
				if n > 0 {
					if d := p.delay.Load(); d > 0 {
						time.Sleep(time.Duration(d))
					}
					if m := p.marker.Load(); m != nil && bytes.Contains(buf[:n], *m) && p.marker.CompareAndSwap(m, nil) {
						lose.Store(true)
					}
					if h := p.hold.Load(); h != nil && bytes.Contains(buf[:n], h.marker) && p.hold.CompareAndSwap(h, nil) {
						holding.Store(h)
					}
					if r := p.refuse.Load(); r != nil && bytes.Contains(buf[:n], r.marker) && (r.keep || p.refuse.CompareAndSwap(r, nil)) {
						if _, werr := c.Write(r.reply); werr != nil {
							break
						}
						continue
					}
					if _, werr := s.Write(buf[:n]); werr != nil {
						break
					}
					lastRequest.Store(time.Now().UnixNano())
				}
				if err != nil {
					break
				}
			}
			p.drop(c, s)
		}()
		go func() { // replies
			defer p.wg.Done()
			buf := make([]byte, 64<<10)
			dropping := false
			for {
				n, err := s.Read(buf)
				if h := holding.Load(); n > 0 && h != nil {
					// the reply (and any before it on this connection)
					// waits for the release
					holding.Store(nil)
					close(h.held)
					<-h.released
				}
				if n > 0 && !dropping && (lose.Load() || rand.Float64() < math.Float64frombits(p.rate.Load())) {
					// the reply is lost: what the client sent with it (the
					// rest of a pipeline still arriving) reaches Redis, every
					// reply from now is dropped, and the connection is cut
					// once the client has sent nothing for 20 ms (it waits
					// for its replies)
					p.lost.Add(1)
					dropping = true
					p.wg.Add(1)
					go func() {
						defer p.wg.Done()
						for time.Since(time.Unix(0, lastRequest.Load())) < quiet {
							time.Sleep(quiet / 4)
						}
						p.drop(c, s)
					}()
				}
				if n > 0 && !dropping {
					if _, werr := c.Write(buf[:n]); werr != nil {
						break
					}
				}
				if err != nil {
					break
				}
			}
			p.drop(c, s)
		}()
	}
}

// quiet is how long a client sends nothing before the proxy cuts a
// connection whose reply it lost.
const quiet = 20 * time.Millisecond

// track records a relayed pair, false once the proxy is closed.
func (p *Proxy) track(c, s net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conns == nil {
		c.Close()
		s.Close()
		return false
	}
	p.conns[c], p.conns[s] = true, true
	return true
}

// drop closes a relayed pair.
func (p *Proxy) drop(c, s net.Conn) {
	c.Close()
	s.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.conns, c)
	delete(p.conns, s)
}

func (p *Proxy) close() {
	p.ln.Close()
	p.mu.Lock()
	for c := range p.conns {
		c.Close()
	}
	p.conns = nil
	for _, h := range p.holds {
		h.release()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// AnyHeld waits until one of held (HoldReplyTo's, one per proxy of a
// backend: the call goes to one node) has held a reply, and reports
// whether one did within d.
func AnyHeld(held []<-chan struct{}, d time.Duration) bool {
	ran, done := make(chan struct{}, len(held)), make(chan struct{})
	defer close(done)
	for _, h := range held {
		go func() {
			select {
			case <-h:
				ran <- struct{}{}
			case <-done:
			}
		}()
	}
	select {
	case <-ran:
		return true
	case <-time.After(d):
		return false
	}
}
