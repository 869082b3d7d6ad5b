package sse_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/rooms"
	"github.com/realsync/realsync/sse"
)

// lobbyEvent is a lobby frame decoded.
type lobbyEvent struct {
	Type    string `json:"type"`
	Version int64  `json:"version"`
	Room    struct {
		ID          string `json:"id"`
		PlayerCount int    `json:"playerCount"`
		Locked      bool   `json:"locked"`
	} `json:"room"`
	Rooms []json.RawMessage `json:"rooms"`
}

func decodeLobby(t *testing.T, fs []frame) []lobbyEvent {
	t.Helper()
	out := make([]lobbyEvent, len(fs))
	for i, f := range fs {
		if err := json.Unmarshal([]byte(f.Data), &out[i]); err != nil || out[i].Type != f.Type {
			t.Fatalf("frame %+v: %v", f, err)
		}
	}
	return out
}

// waitLobby waits until the client got n lobby events.
func waitLobby(t *testing.T, cl *client, n int) []lobbyEvent {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		if fs := cl.all(); len(fs) >= n {
			return decodeLobby(t, fs)
		}
		select {
		case <-cl.got:
		case <-deadline:
			t.Fatalf("%d lobby events never arrived; got %+v", n, decodeLobby(t, cl.all()))
		}
	}
}

// The lobby feed follows a room as it becomes, stays and stops being
// joinable, and ignores other modes.
func TestLobbyFeedFollowsJoinableRooms(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b redistest.Backend) {
		e := newEnv(t, b)
		ctx := context.Background()
		before := e.room(t) // mode m, region r: in the first list
		cl := newClient()
		ctxS, cancel := context.WithCancel(ctx)
		defer cancel()
		go e.hub.ServeLobby(ctxS, cl, alice, "m", "")
		first := waitLobby(t, cl, 1)[0]
		if first.Type != "rooms" || len(first.Rooms) != 1 || !strings.Contains(string(first.Rooms[0]), before) {
			t.Fatalf("first event %+v", first)
		}
		j, err := e.st.Create(ctx, bob, rooms.NewRoom{Name: "x", Mode: "m", Region: "eu", MaxPlayers: 2,
			Visibility: rooms.Public, Attributes: map[string]any{}, State: rooms.State{}, StatePolicy: rooms.PolicyOwner})
		if err != nil {
			t.Fatal(err)
		}
		id := j.Room.ID
		e.st.Create(ctx, carol, rooms.NewRoom{Name: "other mode", Mode: "z", Region: "eu", MaxPlayers: 2,
			Visibility: rooms.Public, Attributes: map[string]any{}, State: rooms.State{}, StatePolicy: rooms.PolicyOwner})
		waitLobby(t, cl, 2)
		steps := []struct {
			do   func() error
			want string
		}{
			{func() error { _, err := e.st.Update(ctx, bob, id, rooms.UpdateParams{Locked: ptr(true)}); return err }, "room_removed"},
			{func() error { _, err := e.st.Update(ctx, bob, id, rooms.UpdateParams{Locked: ptr(false)}); return err }, "room_added"},
			{func() error { _, err := e.st.Update(ctx, bob, id, rooms.UpdateParams{Name: ptr("y")}); return err }, "room_updated"},
			{func() error { _, err := e.st.Join(ctx, carol, id); return err }, "room_removed"}, // full
			{func() error { return e.st.Leave(ctx, carol, id) }, "room_added"},
			{func() error {
				_, err := e.st.Update(ctx, bob, id, rooms.UpdateParams{Status: ptr(rooms.Playing)})
				return err
			}, "room_removed"},
			{func() error {
				_, err := e.st.Update(ctx, bob, id, rooms.UpdateParams{Status: ptr(rooms.Waiting)})
				return err
			}, "room_added"},
			{func() error { _, err := e.st.Delete(ctx, bob, id); return err }, "room_removed"},
		}
		evs := waitLobby(t, cl, 2)
		if evs[1].Type != "room_added" || evs[1].Room.ID != id {
			t.Fatalf("after create: %+v", evs[1])
		}
		for i, s := range steps {
			if err := s.do(); err != nil {
				t.Fatal(err)
			}
			// one step at a time, slower than the coalescing window
			evs = waitLobby(t, cl, 3+i)
			if got := evs[2+i]; got.Type != s.want || got.Room.ID != id || got.Version <= evs[1+i].Version {
				t.Fatalf("step %d: %+v, want %s (events %+v)", i, got, s.want, evs)
			}
		}
	})
}

func ptr[T any](v T) *T { return &v }

// A burst of changes to one room is coalesced, and its final state arrives.
func TestLobbyFeedCoalescesBursts(t *testing.T) {
	b := redistest.Backends(t)[0]
	e := newEnv(t, b)
	cl := newClient()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go e.hub.ServeLobby(ctx, cl, alice, "", "")
	waitLobby(t, cl, 1)
	id := e.room(t)
	for i := range 30 {
		if _, err := e.st.Update(ctx, alice, id, rooms.UpdateParams{Name: ptr("n" + string(rune('a'+i%26)))}); err != nil {
			t.Fatal(err)
		}
	}
	final := version(t, e, id)
	deadline := time.Now().Add(10 * time.Second)
	for {
		evs := decodeLobby(t, cl.all())
		if l := evs[len(evs)-1]; l.Version == final {
			if len(evs) > 20 {
				t.Errorf("31 changes gave %d events: not coalesced", len(evs)-1)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("final version %d never arrived: %+v", final, evs)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// heldLobby is a LobbySource of rooms set by the test, whose Rooms reads
// can be held after reading (hold): a flush's read of a room as it was.
type heldLobby struct {
	mu    sync.Mutex
	rooms map[string]rooms.Room
	hold  chan struct{} // non-nil: the next Rooms read waits on it, after reading
	read  chan struct{} // closed once that read read
}

func (l *heldLobby) set(r ...rooms.Room) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.rooms = map[string]rooms.Room{}
	for _, x := range r {
		l.rooms[x.ID] = x
	}
}

func (l *heldLobby) Joinable(ctx context.Context, mode, region string, limit int) ([]rooms.Room, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []rooms.Room
	for _, r := range l.rooms {
		out = append(out, r)
	}
	return out, nil
}

func (l *heldLobby) Rooms(ctx context.Context, ids []string) ([]*rooms.Room, error) {
	l.mu.Lock()
	out := make([]*rooms.Room, len(ids))
	for i, id := range ids {
		if r, ok := l.rooms[id]; ok {
			out[i] = &r
		}
	}
	hold, read := l.hold, l.read
	l.hold = nil
	l.mu.Unlock()
	if hold != nil {
		close(read)
		<-hold
	}
	return out, nil
}

// A change whose room was read before a resync (the lobby subscription
// reconnected, notices lost meanwhile) goes out before the resync's list,
// never after it, and the list's rooms are what the client shows (a
// tester's suspicion, reproduced here): after the list it sent a room
// deleted since, whose notice was lost, as added again, and the client
// kept it for good. One goroutine reads the changes and the lists and
// hands them on in that order: the resync waits for the flush under way.
func TestLobbyChangeReadBeforeAResyncGoesOutBeforeItsList(t *testing.T) {
	b := redistest.Backends(t)[0]
	src := &heldLobby{}
	joinable := func(id string, v int64) rooms.Room {
		return rooms.Room{ID: id, Mode: "m", Region: "r", Visibility: rooms.Public, Status: rooms.Waiting, MaxPlayers: 4, PlayerCount: 1, Version: v}
	}
	src.set(joinable("ghost", 1))
	e := newEnv(t, b, func(c *sse.Config) { c.Lobby = src })
	cl := newClient()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go e.hub.ServeLobby(ctx, cl, alice, "", "")
	if first := waitLobby(t, cl, 1)[0]; len(first.Rooms) != 1 {
		t.Fatalf("first list %+v, want the ghost room", first)
	}
	hold := make(chan struct{})
	src.mu.Lock()
	src.hold, src.read = hold, make(chan struct{})
	read := src.read
	src.mu.Unlock()
	e.hub.Lobby(sse.LobbyNotice{Kind: "updated", Room: "ghost", Version: 2, Mode: "m", Region: "r"})
	src.set(joinable("ghost", 2))
	<-read    // the flush read the room joinable, at version 2
	src.set() // then it was deleted, and its notice lost
	sse.LobbyResync(e.hub)
	close(hold) // the flush's change goes out, then the resync's list
	evs := waitLobby(t, cl, 3)
	if got := evs[1]; got.Type != "room_updated" || got.Room.ID != "ghost" || got.Version != 2 {
		t.Fatalf("the change read before the resync: %+v, want ghost's room_updated (events %+v)", got, evs)
	}
	if list := evs[2]; list.Type != "rooms" || len(list.Rooms) != 0 {
		t.Fatalf("the resync's list %+v, want no room", list)
	}
	src.set(joinable("next", 1))
	e.hub.Lobby(sse.LobbyNotice{Kind: "added", Room: "next", Version: 1, Mode: "m", Region: "r"})
	evs = waitLobby(t, cl, 4)
	if got := evs[3]; got.Type != "room_added" || got.Room.ID != "next" || len(evs) != 4 {
		t.Fatalf("after the resync's list: %+v, want next's room_added alone", evs[3:])
	}
}

// failingLobby is a LobbySource of no rooms whose Joinable reads of the
// modes in fail fail, counting every mode's reads.
type failingLobby struct {
	heldLobby
	mu    sync.Mutex
	fail  map[string]bool
	reads map[string]int
}

func (l *failingLobby) Joinable(ctx context.Context, mode, region string, limit int) ([]rooms.Room, error) {
	l.mu.Lock()
	l.reads[mode]++
	failing := l.fail[mode]
	l.mu.Unlock()
	if failing {
		return nil, errors.New("MASTERDOWN Link with MASTER is down")
	}
	return l.heldLobby.Joinable(ctx, mode, region, limit)
}

func (l *failingLobby) readsOf(mode string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.reads[mode]
}

// A resync whose list of one (mode, region) cannot be read (that filter's
// master down) ends that filter's lobby streams store_error, as a stream
// whose list could not be read always did (each client reopens and reads
// its own), and hands the other filters their lists once: nothing is read
// again. The reviewer's find: the whole resync was tried again every
// 500 ms, every healthy stream sent a list and every filter read again at
// each try, for as long as the one master was down, and the streams of
// the failing filter were told nothing.
func TestLobbyResyncListFailingEndsOnlyItsStreams(t *testing.T) {
	b := redistest.Backends(t)[0]
	src := &failingLobby{fail: map[string]bool{}, reads: map[string]int{}}
	rec := newRecorder()
	e := newEnv(t, b, func(c *sse.Config) { c.Lobby, c.Metrics = src, rec })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	healthy, failing := newClient(), newClient()
	go e.hub.ServeLobby(ctx, healthy, alice, "a", "")
	go e.hub.ServeLobby(ctx, failing, bob, "b", "")
	waitLobby(t, healthy, 1)
	waitLobby(t, failing, 1)
	src.mu.Lock()
	src.fail["b"] = true
	src.mu.Unlock()
	sse.LobbyResync(e.hub)
	waitLobby(t, healthy, 2) // the resync's list
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, ended, _, _ := rec.snapshot(); ended[sse.KindLobby+" "+sse.EndStoreError] == 1 {
			break
		}
		if time.Now().After(deadline) {
			_, ended, _, _ := rec.snapshot()
			t.Fatalf("the failing filter's stream never ended store_error: ended %v", ended)
		}
	}
	// a retry came every 500 ms: six of them in the next 3 s
	time.Sleep(3 * time.Second)
	if n := len(healthy.all()); n != 2 {
		t.Errorf("the healthy stream got %d lists, want its first and the resync's: %+v", n, decodeLobby(t, healthy.all()))
	}
	if a, b := src.readsOf("a"), src.readsOf("b"); a != 2 || b != 2 {
		t.Errorf("reads of a %d, of b %d; want 2 each (the first lists and the resync's)", a, b)
	}
	if _, ended, _, _ := rec.snapshot(); len(ended) != 1 {
		t.Errorf("ended %v, want the failing filter's stream alone", ended)
	}
}

// gatedLobby is a heldLobby whose next Joinable read, once armed, waits
// on gate after reading (a resync's list read before a stream joins).
type gatedLobby struct {
	heldLobby
	gmu        sync.Mutex
	gate, read chan struct{}
}

func (l *gatedLobby) Joinable(ctx context.Context, mode, region string, limit int) ([]rooms.Room, error) {
	out, err := l.heldLobby.Joinable(ctx, mode, region, limit)
	l.gmu.Lock()
	gate, read := l.gate, l.read
	l.gate = nil
	l.gmu.Unlock()
	if gate != nil {
		close(read)
		<-gate
	}
	return out, err
}

// A resync's lists go to the streams open when it began: a stream that
// joins while they are read reads its own first list, newer, and gets no
// resync list after it (the reviewer's find: the older list went out
// after its own, its view going back to rooms it had seen change, until
// the changes read later came).
func TestLobbyStreamJoiningDuringAResyncKeepsItsOwnList(t *testing.T) {
	b := redistest.Backends(t)[0]
	src := &gatedLobby{}
	joinable := func(id string) rooms.Room {
		return rooms.Room{ID: id, Mode: "m", Region: "r", Visibility: rooms.Public, Status: rooms.Waiting, MaxPlayers: 4, PlayerCount: 1, Version: 1}
	}
	src.set(joinable("x"))
	e := newEnv(t, b, func(c *sse.Config) { c.Lobby = src })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	early, late := newClient(), newClient()
	go e.hub.ServeLobby(ctx, early, alice, "m", "")
	waitLobby(t, early, 1)
	gate, read := make(chan struct{}), make(chan struct{})
	src.gmu.Lock()
	src.gate, src.read = gate, read
	src.gmu.Unlock()
	sse.LobbyResync(e.hub)
	<-read // the resync read its list: x alone
	src.set(joinable("x"), joinable("y"))
	go e.hub.ServeLobby(ctx, late, bob, "m", "")
	if first := waitLobby(t, late, 1)[0]; first.Type != "rooms" || len(first.Rooms) != 2 {
		t.Fatalf("the late stream's first list %+v, want x and y", first)
	}
	close(gate)
	if list := waitLobby(t, early, 2)[1]; list.Type != "rooms" || len(list.Rooms) != 1 {
		t.Fatalf("the resync's list %+v, want x alone", list)
	}
	src.set(joinable("x"), joinable("y"), joinable("z"))
	e.hub.Lobby(sse.LobbyNotice{Kind: "added", Room: "z", Version: 1, Mode: "m", Region: "r"})
	evs := waitLobby(t, late, 2)
	if got := evs[1]; got.Type != "room_added" || got.Room.ID != "z" {
		t.Fatalf("the late stream after its first list: %+v, want z's room_added, no older list", evs[1:])
	}
}
