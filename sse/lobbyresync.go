package sse

import (
	"context"
	"time"
)

// lobbyResyncMost bounds how long a resync waits for its signals to pause
// (resyncLobby): a subscription that keeps reconnecting still has its
// streams sent a list this often.
const lobbyResyncMost = time.Second

// resyncState is the lobby's resync: asked for by each signal that
// notices may have been lost (lobbyResync), handed on by the flush loop
// (resyncLobby). Guarded by lobbyHub.mu but for the flush loop's own
// fields.
type resyncState struct {
	// due: a signal came since the last resync's lists were read (their
	// reads began before it); since: when the first of them came
	due   bool
	since time.Time
	// signals counts the signals; reading: a resync's lists are being
	// read and handed on
	signals uint64
	reading bool
	// begun counts the resyncs begun (their flags cleared)
	begun uint64

	// the flush loop's: signals at its previous tick
	ticked uint64
}

// lobbyResync asks for a fresh list on every lobby stream: notices may
// have been lost while a lobby channel's subscription reconnected. The
// flush loop hands it on (resyncLobby), so that the signals of one
// reconnect, one a shard and again when its probe comes back, cost each
// stream a list or two rather than a list each (a tester's find: 32 lists
// a stream for one blip, each a full read of its own).
func (h *Hub) lobbyResync() {
	h.lobby.mu.Lock()
	defer h.lobby.mu.Unlock()
	if len(h.lobby.streams) == 0 {
		return // the next stream reads its first list after this
	}
	r := &h.lobby.resync
	if !r.due {
		r.due, r.since = true, time.Now()
	}
	r.signals++
}

// resyncLobby runs at each tick of the flush loop. Once a resync is due
// and its signals paused for a tick (the resubscriptions of one reconnect
// come within milliseconds of each other), or kept coming for
// lobbyResyncMost, it reads the list of each filter the lobby streams
// open then have, once, and hands it to every stream of that filter. Each
// read begins after the due flag was cleared, so after every signal that
// set it: a signal during the reads sets it again, for another resync.
// The lists go to the streams whose first list's read began before the
// flag was cleared: one that began it after reads a list newer than the
// resync's may be (a resync list read before its own went out after it,
// its view going back for a moment: the reviewer's find). When a filter's read fails (Redis, or that filter's
// master, out of reach) its streams end store_error, as a stream whose
// list could not be read always did: each client reopens and reads its
// first list itself, backing off while the store fails. The other
// filters' lists are handed on; nothing is read again (a retry of the
// whole resync re-read and re-sent every filter's list every 600 ms while
// one filter's master was down: the reviewer's find).
func (h *Hub) resyncLobby(ctx context.Context) {
	l := &h.lobby
	r := &l.resync
	now := time.Now()
	l.mu.Lock()
	quiet := r.signals == r.ticked
	r.ticked = r.signals
	if !r.due || (!quiet && now.Sub(r.since) < lobbyResyncMost) {
		l.mu.Unlock()
		return
	}
	r.due, r.reading = false, true
	r.begun++
	begun := r.begun
	lists := map[lobbyFilter]*lobbyList{}
	for st := range l.streams {
		if st.readFrom < begun {
			lists[st.filter()] = nil
		}
	}
	l.mu.Unlock()
	for f := range lists {
		rctx, cancel := context.WithTimeout(ctx, storeTimeout)
		list, err := h.readLobbyList(rctx, f)
		cancel()
		if err != nil {
			if ctx.Err() == nil { // not the hub's close
				h.cfg.Log.Warn("sse: reading a lobby list", "mode", f.mode, "region", f.region, "err", err)
			}
		}
		lists[f] = list
	}
	dropped := 0
	l.mu.Lock()
	defer l.mu.Unlock()
	r.reading = false
	for st := range l.streams {
		if st.readFrom >= begun { // its first list was read after: newer
			continue
		}
		list := lists[st.filter()]
		switch {
		case list != nil:
			if !st.offer(&lobbyItem{list: list}) {
				dropped++
			}
		default:
			st.end(EndStoreError)
		}
	}
	if dropped > 0 {
		h.cfg.Metrics.Events(KindLobby, 0, dropped)
	}
}
