package redistest

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync"
	"github.com/realsync/realsync/internal/eventschema"
)

// The event contract test: while a package's tests run, every event a
// script publishes on the shared standalone server (room channels
// "<shard tag>:ch:<id>", payload "<version> <tag> <event JSON>") is
// checked against openapi.yaml's event schemas, which are generated from
// the domain's event types. Main fails the package when one did not pass,
// so a script that drifts from the contract fails every suite that makes
// it emit the drifted event.

// watcher checks the events of one server.
type watcher struct {
	check  *eventschema.Checker
	client *redis.Client
	sub    *redis.PubSub
	done   chan struct{}

	mu     sync.Mutex
	seen   map[string]int // "type" and "type/reason" → count
	bad    []string
	synced chan struct{} // closed when the sync marker arrives
	marker string
}

// contractChannel is a room-channel name no store ever uses, for the
// marker that tells the watcher has read everything published before it.
const contractChannel = "{redistest}:ch:contract-sync"

var events *watcher

// watchEvents starts checking the events published on addr.
func watchEvents(addr string) error {
	c, err := eventschema.NewChecker(realsync.OpenAPI)
	if err != nil {
		return err
	}
	cl := redis.NewClient(&redis.Options{Addr: addr})
	sub := cl.PSubscribe(context.Background(), "*:ch:*")
	if _, err := sub.Receive(context.Background()); err != nil {
		cl.Close()
		return fmt.Errorf("event contract: subscribing: %w", err)
	}
	w := &watcher{check: c, client: cl, sub: sub, done: make(chan struct{}), seen: map[string]int{}}
	go w.run(sub.Channel(redis.WithChannelSize(4096)))
	events = w
	return nil
}

func (w *watcher) run(ch <-chan *redis.Message) {
	defer close(w.done)
	for m := range ch {
		if m.Channel == contractChannel {
			w.mu.Lock()
			if w.synced != nil && m.Payload == w.marker {
				close(w.synced)
				w.synced = nil
			}
			w.mu.Unlock()
			continue
		}
		w.take(m.Channel, m.Payload)
	}
}

// take checks one published payload.
func (w *watcher) take(channel, payload string) {
	parts := strings.SplitN(payload, " ", 3)
	var err error
	typ := ""
	if len(parts) != 3 {
		err = fmt.Errorf("not <version> <tag> <event>")
	} else {
		typ = eventschema.Type([]byte(parts[2]))
		err = w.check.Room([]byte(parts[2]))
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if err != nil {
		if len(w.bad) < 20 {
			w.bad = append(w.bad, fmt.Sprintf("%s: %.300s\n    %.400s", channel, payload, strings.Join(strings.Fields(err.Error()), " ")))
		} else {
			w.bad[19] = "... and more"
		}
		return
	}
	w.seen[typ]++
	if r := reason(parts[2]); r != "" {
		w.seen[typ+"/"+r]++
	}
}

func reason(data string) string {
	const key = `"reason":"`
	i := strings.Index(data, key)
	if i < 0 {
		return ""
	}
	rest := data[i+len(key):]
	if j := strings.IndexByte(rest, '"'); j >= 0 {
		return rest[:j]
	}
	return ""
}

// sync waits until the watcher has read everything published so far.
func (w *watcher) sync() error {
	w.mu.Lock()
	w.marker = fmt.Sprint(time.Now().UnixNano())
	done := make(chan struct{})
	w.synced = done
	w.mu.Unlock()
	if err := w.client.Publish(context.Background(), contractChannel, w.marker).Err(); err != nil {
		return err
	}
	select {
	case <-done:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("event contract: the watcher did not catch up within 10 s")
	}
}

func (w *watcher) stop() {
	w.sub.Close()
	<-w.done
	w.client.Close()
}

// EventsSeen returns how many valid events of each type ("player_left")
// and type/reason ("player_left/kicked") the package's tests made the
// scripts publish on the shared standalone server so far; nil when the
// server was not started.
func EventsSeen() map[string]int {
	mu.Lock()
	w := events
	mu.Unlock()
	if w == nil {
		return nil
	}
	if err := w.sync(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[string]int, len(w.seen))
	for k, v := range w.seen {
		out[k] = v
	}
	return out
}

// finishEvents stops the watcher and reports the events that broke the
// contract; false when there was one.
func finishEvents() bool {
	w := events
	if w == nil {
		return true
	}
	err := w.sync()
	w.stop()
	events = nil
	w.mu.Lock()
	defer w.mu.Unlock()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	if len(w.bad) == 0 {
		return true
	}
	fmt.Fprintf(os.Stderr, "FAIL: %d published events break the event contract (openapi.yaml's RoomEvent, from rooms/events.go):\n", len(w.bad))
	sort.Strings(w.bad)
	for _, b := range w.bad {
		fmt.Fprintln(os.Stderr, "  "+b)
	}
	return false
}
