package sse

import (
	"context"
	"sync"
	"time"

	"github.com/realsync/realsync/internal/jsonout"
	"github.com/realsync/realsync/lobby"
	"github.com/realsync/realsync/rooms"
)

const (
	// lobbyCoalesce is how long lobby notices gather before their rooms are
	// read: a burst of changes to one room costs one read and one event.
	lobbyCoalesce = 100 * time.Millisecond
	// lobbyInitial bounds the rooms of the first "rooms" event.
	lobbyInitial = 100
)

// lobbyHub feeds the lobby streams of an instance: notices from the
// scripts, coalesced per room, read in one batch, handed to every stream;
// and after a resubscription fresh lists, one read per filter shared by
// its streams (lobbyresync.go). One goroutine (flushLobby) reads and
// hands on both, so every stream gets them in the order they were read:
// a change read before a list never goes out after it.
type lobbyHub struct {
	sub     sync.Mutex // held while subscribing or unsubscribing
	mu      sync.Mutex
	streams map[*lobbyStream]struct{}
	pending map[string]LobbyNotice
	resync  resyncState
}

// lobbyItem is one thing every lobby stream of a filter receives, shared
// read-only: a room change, or a fresh list (list set).
type lobbyItem struct {
	n      LobbyNotice
	room   []byte // the room's JSON when it is joinable now, else nil
	public []byte // the room's JSON when it exists and is public, else nil
	list   *lobbyList
}

// lobbyList is a "rooms" event as read for one filter, and what it shows.
type lobbyList struct {
	frame []byte
	rooms []listedRoom
}

// listedRoom is a room a list shows, and its version.
type listedRoom struct {
	id      string
	version int64
}

// lobbyFilter is the mode and region of a lobby stream ("" for any).
type lobbyFilter struct{ mode, region string }

// lobbyStream is one client's lobby feed. seen (the version sent per room)
// belongs to its goroutine.
type lobbyStream struct {
	held         // its lease among its user's open streams, and its end
	mode, region string
	q            queue[*lobbyItem] // its items, shared, read-only
	seen         map[string]int64
	// readFrom is the lobby's resyncs begun (resyncState.begun) when its
	// first list's read began; noRead until then. Guarded by lobbyHub.mu.
	readFrom uint64
}

// noRead is a lobby stream's readFrom before its first list's read.
const noRead = ^uint64(0)

// offer queues it without blocking and reports whether it did; a full
// queue ends the stream.
func (st *lobbyStream) offer(it *lobbyItem) bool {
	if !st.q.push(it) {
		st.end(EndSlow)
		return false
	}
	st.signal()
	return true
}

func (st *lobbyStream) filter() lobbyFilter { return lobbyFilter{st.mode, st.region} }

func (st *lobbyStream) matches(n LobbyNotice) bool {
	return (st.mode == "" || st.mode == n.Mode) && (st.region == "" || st.region == n.Region)
}

// Lobby implements Sink: the notice waits for the next batch.
func (h *Hub) Lobby(n LobbyNotice) {
	h.lobby.mu.Lock()
	defer h.lobby.mu.Unlock()
	if len(h.lobby.streams) == 0 {
		return
	}
	if old, ok := h.lobby.pending[n.Room]; !ok || n.Version >= old.Version {
		h.lobby.pending[n.Room] = n
	}
}

// flushLobby hands every lobby stream the fresh lists of a resync that is
// due (resyncLobby), then reads the rooms of the pending notices and hands
// the changes on. A failed read asks for a resync: the notices taken are
// lost.
func (h *Hub) flushLobby(ctx context.Context) {
	h.resyncLobby(ctx)
	h.lobby.mu.Lock()
	pending := h.lobby.pending
	h.lobby.pending = map[string]LobbyNotice{}
	h.lobby.mu.Unlock()
	if len(pending) == 0 {
		return
	}
	ids := make([]string, 0, len(pending))
	for id := range pending {
		ids = append(ids, id)
	}
	rs, err := h.cfg.Lobby.Rooms(ctx, ids)
	if err != nil {
		h.cfg.Log.Warn("sse: reading lobby rooms", "err", err)
		h.lobbyResync()
		return
	}
	items := make([]lobbyItem, len(ids))
	for i, id := range ids {
		items[i] = h.lobbyItem(pending[id], rs[i])
	}
	dropped := 0
	h.lobby.mu.Lock()
	for st := range h.lobby.streams {
		for i := range items {
			if st.matches(items[i].n) && !st.offer(&items[i]) {
				dropped++
			}
		}
	}
	h.lobby.mu.Unlock()
	if dropped > 0 {
		h.cfg.Metrics.Events(KindLobby, 0, dropped)
	}
}

func (h *Hub) lobbyItem(n LobbyNotice, r *rooms.Room) lobbyItem {
	it := lobbyItem{n: n}
	if r == nil || r.Visibility != rooms.Public {
		return it
	}
	if r.Version > it.n.Version {
		it.n.Version = r.Version
	}
	it.public, _ = jsonout.Marshal(h.cfg.RoomJSON(*r))
	if r.Joinable() {
		it.room = it.public
	}
	return it
}

// ServeLobby streams the lobby of mode and region ("" for any) to user u:
// a "rooms" event with up to 100 joinable public rooms in fill order, then
// room_added, room_updated and room_removed as rooms become, stay or stop
// being joinable, until ctx ends, the client cannot keep up, the hub
// closes or the token expiry set with WithTokenExpiry comes. A player's
// stream holds a lease among u's open streams, renewed with the room
// streams' leases (the server's, an API key's, holds none). It returns an
// error only when it started nothing: rooms.ErrStreamLimit when u holds the
// most streams allowed (see Source.OpenLobby), or rooms.ErrUnavailable.
func (h *Hub) ServeLobby(ctx context.Context, client Client, u rooms.User, mode, region string) error {
	st := &lobbyStream{mode: mode, region: region, q: queue[*lobbyItem]{max: h.cfg.QueueSize},
		seen: map[string]int64{}, readFrom: noRead,
		held: newHeld(h, Lease{UserID: u.ID, Stream: h.streamName(), Server: u.Server})}
	st.free = func() { h.closeLobby(st) }
	if err := h.cfg.Source.OpenLobby(ctx, st.lease); err != nil {
		return err
	}
	st.opened()
	st.renewed.Store(time.Now().UnixNano())
	var opened undo
	defer opened.runUnlessCarried()
	opened.add(st.giveBack)
	if err := h.joinLobby(ctx, st); err != nil {
		return err
	}
	opened.add(func() { h.leaveLobby(st) })
	h.lobby.mu.Lock()
	st.readFrom = h.lobby.resync.begun // a resync begun from now on is not its
	h.lobby.mu.Unlock()
	first, err := h.readLobbyList(ctx, st.filter())
	if err != nil {
		return err
	}
	st.show(first)
	h.streamOpened(KindLobby, StartFresh)
	client.Start()
	out := lent(client, h.cfg.Metrics, KindLobby)
	out.write(retryFrame(0))
	out.writeEvent(first.frame)
	carryLooper(&opened, client, h.pumpLobby(ctx, st, out), func(why string) {
		h.cfg.Metrics.StreamEnded(KindLobby, why)
	})
	return nil
}

// pumpLobby is the rest of lobby stream st (see looper): it flushes the
// first list, then writes the stream's changes and lists, with heartbeats
// while idle. A list supersedes what was queued before it (read before
// it): a stream behind by several lists writes the last one alone.
func (h *Hub) pumpLobby(ctx context.Context, st *lobbyStream, out *writer) *looper {
	return newLooper(ctx, h, &st.held, out, func(context.Context) string {
		batch := st.q.take()
		defer st.q.recycle(batch)
		from := 0
		for i, it := range batch {
			if it.list != nil {
				from = i
			}
		}
		for _, it := range batch[from:] {
			st.write(out, it)
		}
		return ""
	})
}

// write writes lobby item it to the stream: a list as it is, a change as
// the event the stream needs, if any.
func (st *lobbyStream) write(out *writer, it *lobbyItem) {
	if it.list != nil {
		st.show(it.list)
		out.writeEvent(it.list.frame)
	} else if ev := st.change(it); ev != nil {
		out.writeEvent(ev)
	}
}

// readLobbyList reads the list of filter f: its joinable rooms, the first
// lobbyInitial in fill order.
func (h *Hub) readLobbyList(ctx context.Context, f lobbyFilter) (*lobbyList, error) {
	rs, err := h.cfg.Lobby.Joinable(ctx, f.mode, f.region, lobbyInitial)
	if err != nil {
		return nil, err
	}
	list := &lobbyList{rooms: make([]listedRoom, len(rs))}
	js := make([]any, len(rs))
	for i, r := range rs {
		js[i] = h.cfg.RoomJSON(r)
		list.rooms[i] = listedRoom{id: r.ID, version: r.Version}
	}
	data, _ := jsonout.Marshal(lobby.RoomsEvent{Type: lobby.EventRooms, Rooms: js})
	list.frame = appendFrame(nil, "", lobby.EventRooms, data)
	return list, nil
}

// show remembers that the stream sent list: the rooms it shows now.
func (st *lobbyStream) show(list *lobbyList) {
	clear(st.seen)
	for _, r := range list.rooms {
		st.seen[r.id] = r.version
	}
}

// change turns an item into the event this stream needs, if any: added
// for a room it does not show, updated for one it does, removed when a
// room it shows stopped being joinable. Older versions than shown are
// dropped.
func (st *lobbyStream) change(it *lobbyItem) []byte {
	id := it.n.Room
	shown, ok := st.seen[id]
	if ok && it.n.Version <= shown {
		return nil
	}
	var typ string
	room := it.room
	switch {
	case it.room != nil && ok:
		typ = lobby.EventRoomUpdated
	case it.room != nil:
		typ = lobby.EventRoomAdded
	case ok:
		typ, room = lobby.EventRoomRemoved, it.public
		if room == nil { // closed or private: say no more than its id
			room, _ = jsonout.Marshal(lobby.RemovedRoom{ID: id, Version: it.n.Version})
		}
	default:
		return nil
	}
	if it.room != nil {
		st.seen[id] = it.n.Version
	} else {
		delete(st.seen, id)
	}
	data, _ := jsonout.Marshal(lobby.RoomChangeEvent{Type: typ, Version: it.n.Version, Room: room})
	return appendFrame(nil, "", typ, data)
}

// joinLobby registers st, subscribing the lobby channels for the first
// lobby stream of the instance.
func (h *Hub) joinLobby(ctx context.Context, st *lobbyStream) error {
	h.lobby.sub.Lock()
	defer h.lobby.sub.Unlock()
	h.lobby.mu.Lock()
	first := len(h.lobby.streams) == 0
	h.lobby.mu.Unlock()
	if first {
		if err := h.feed.SubscribeLobby(ctx); err != nil {
			return err
		}
	}
	h.lobby.mu.Lock()
	h.lobby.streams[st] = struct{}{}
	h.lobby.mu.Unlock()
	return nil
}

// closeLobby drops the lobby stream's lease, even when the request is gone.
func (h *Hub) closeLobby(st *lobbyStream) {
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	if err := h.cfg.Source.CloseLobby(ctx, st.lease); err != nil {
		h.cfg.Log.Debug("sse: closing lobby lease", "err", err)
	}
}

func (h *Hub) leaveLobby(st *lobbyStream) {
	h.lobby.sub.Lock()
	defer h.lobby.sub.Unlock()
	h.lobby.mu.Lock()
	delete(h.lobby.streams, st)
	last := len(h.lobby.streams) == 0
	h.lobby.mu.Unlock()
	if last {
		h.feed.UnsubscribeLobby()
	}
}
