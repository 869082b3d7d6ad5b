package sse_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/sse"
	"github.com/realsync/realsync/store"
)

func TestMain(m *testing.M) { redistest.Main(m) }

var (
	alice = rooms.User{ID: "u-alice", Name: "alice"}
	bob   = rooms.User{ID: "u-bob", Name: "bob"}
	carol = rooms.User{ID: "u-carol", Name: "carol"}
)

// env is one store and a hub over it.
type env struct {
	st  *store.Store
	hub *sse.Hub
}

func newEnv(t *testing.T, b redistest.Backend, mut ...func(*sse.Config)) *env {
	t.Helper()
	return newEnvShards(t, b, 4, mut...)
}

// newEnvShards is newEnv with a store of shards shards.
func newEnvShards(t *testing.T, b redistest.Backend, shards int, mut ...func(*sse.Config)) *env {
	t.Helper()
	st, err := store.Open(context.Background(), store.Config{RedisURL: b.URL, ClusterAddrs: b.ClusterAddrs,
		Prefix: redistest.Prefix(t), Shards: shards})
	if err != nil {
		t.Fatal(err)
	}
	cfg := sse.Config{Source: st, Lobby: st.Listing(), Feed: st.Feed, RoomJSON: func(r rooms.Room) any {
		return map[string]any{"id": r.ID, "playerCount": r.PlayerCount, "locked": r.Locked, "version": r.Version}
	}}
	for _, m := range mut {
		m(&cfg)
	}
	hub := sse.NewHub(cfg)
	t.Cleanup(func() { hub.Close(); st.Close() })
	return &env{st: st, hub: hub}
}

func (e *env) room(t *testing.T, members ...rooms.User) string {
	t.Helper()
	return e.roomOf(t, alice, members...)
}

// roomOf is room, owned by owner.
func (e *env) roomOf(t *testing.T, owner rooms.User, members ...rooms.User) string {
	t.Helper()
	ctx := context.Background()
	j, err := e.st.Create(ctx, owner, rooms.NewRoom{Name: "r", Mode: "m", Region: "r", MaxPlayers: 100,
		Visibility: rooms.Public, Attributes: map[string]any{}, State: rooms.State{}, StatePolicy: rooms.PolicyOpen})
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range members {
		if _, err := e.st.Join(ctx, u, j.Room.ID); err != nil {
			t.Fatal(err)
		}
	}
	return j.Room.ID
}

func (e *env) patch(t *testing.T, u rooms.User, id string, n int) {
	t.Helper()
	_, err := e.st.PatchState(context.Background(), u, id, rooms.StatePatch{
		Set: rooms.State{"n": []byte(strconv.Itoa(n))}, IfMatch: rooms.NoIfMatch})
	if err != nil {
		t.Fatal(err)
	}
}

// frame is one event as a client parses it.
type frame struct {
	ID      string
	Type    string
	Data    string
	Version int64
}

// client is an sse.Client that parses what it is sent. A blocked client
// never returns from Send, like a peer that stopped reading.
type client struct {
	mu      sync.Mutex
	frames  []frame
	resumed []frame     // the resumed events (no id), with the version of the room event each followed
	raw     []byte      // everything sent
	started atomic.Bool // Start was called: the stream is subscribed to its events
	blocked chan struct{}
	got     chan struct{}
}

func newClient() *client { return &client{got: make(chan struct{}, 1)} }

func (c *client) Start() { c.started.Store(true) }

func (c *client) Send(b []byte) error {
	if c.blocked != nil {
		<-c.blocked
		return errors.New("closed")
	}
	fs := parse(b)
	c.mu.Lock()
	for _, f := range fs {
		if f.Type == sse.ResumedEvent {
			f.Version = last(c.frames).Version // the room event it followed
			c.resumed = append(c.resumed, f)
		} else {
			c.frames = append(c.frames, f)
		}
	}
	c.raw = append(c.raw, b...)
	c.mu.Unlock()
	select {
	case c.got <- struct{}{}:
	default:
	}
	return nil
}

// resumes returns the resumed events received.
func (c *client) resumes() []frame {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]frame(nil), c.resumed...)
}

func (c *client) all() []frame {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]frame(nil), c.frames...)
}

// waitFor waits until the client holds an event of version v.
func (c *client) waitFor(t *testing.T, v int64) []frame {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		fs := c.all()
		if len(fs) > 0 && fs[len(fs)-1].Version >= v {
			return fs
		}
		select {
		case <-c.got:
		case <-deadline:
			t.Fatalf("version %d never arrived; got %d frames, last %+v", v, len(fs), last(fs))
		}
	}
}

func last(fs []frame) frame {
	if len(fs) == 0 {
		return frame{}
	}
	return fs[len(fs)-1]
}

// parse reads SSE frames the way EventSource does (id, event, data lines;
// comments and retry ignored).
func parse(b []byte) []frame {
	var out []frame
	var f frame
	var data []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if len(data) > 0 {
				f.Data = strings.Join(data, "\n")
				v, _, _ := strings.Cut(f.ID, "-")
				f.Version, _ = strconv.ParseInt(v, 10, 64)
				out = append(out, f)
			}
			f, data = frame{}, nil
		case strings.HasPrefix(line, "id: "):
			f.ID = line[4:]
		case strings.HasPrefix(line, "event: "):
			f.Type = line[7:]
		case strings.HasPrefix(line, "data: "):
			data = append(data, line[6:])
		}
	}
	return out
}

// serve runs a stream in the background; the returned func ends it and
// waits for Serve to return.
func (e *env) serve(t *testing.T, u rooms.User, id string, c sse.Cursor, cl *client) (stop func(), done chan error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done = make(chan error, 1)
	go func() { done <- e.hub.Serve(ctx, cl, u, id, c) }()
	stop = func() { cancel(); <-done }
	t.Cleanup(func() { cancel() })
	return stop, done
}

// contiguous checks the frames after the first (a snapshot or the first
// replayed event) carry versions without gap or repeat.
func contiguous(t *testing.T, name string, fs []frame) {
	t.Helper()
	for i := 1; i < len(fs); i++ {
		if fs[i].Version != fs[i-1].Version+1 {
			t.Fatalf("%s: version %d after %d (frame %d of %d)", name, fs[i].Version, fs[i-1].Version, i, len(fs))
		}
		var ev struct {
			Version int64 `json:"version"`
		}
		if err := json.Unmarshal([]byte(fs[i].Data), &ev); err != nil || ev.Version != fs[i].Version {
			t.Fatalf("%s: frame %q: id and data disagree (%v)", name, fs[i].ID, err)
		}
	}
}
