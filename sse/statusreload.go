package sse

import (
	"context"
	"maps"
	"slices"
	"time"
)

// reloadChunk is the most users one status read of the reload loop asks
// for.
const reloadChunk = 256

// statusReload is the users whose status the personal streams following
// them must be sent again (ResubscribedStatus), read by the hub's reload
// loop (reloadStatuses). Guarded by meHub.mu but retry, the loop's own.
type statusReload struct {
	users   map[string]struct{}
	reading bool      // the loop is reading and handing on users taken
	retry   time.Time // no read before it (a read failed)
}

// ResubscribedStatus implements UserSink: the streams following uid are
// sent its status again, read at the reload loop's next tick (every
// lobbyCoalesce) in one read with those of every other user resubscribed
// meanwhile. A reconnect resubscribes every followed user's status
// channel, then tells each resubscribed again once its shard's probe
// comes back; each signal had each stream following the user read its
// status on its own, a round trip each: a stream following 20 users made
// 40 reads for one blip, and every other follower as many.
func (h *Hub) ResubscribedStatus(uid string) {
	h.me.mu.Lock()
	defer h.me.mu.Unlock()
	if len(h.me.follows[uid]) == 0 {
		return // a follow from now on loads the status after subscribing
	}
	if h.me.reload.users == nil {
		h.me.reload.users = map[string]struct{}{}
	}
	h.me.reload.users[uid] = struct{}{}
}

// reloadStatuses runs at each tick of the reload loop: it reads the status
// of every user asked for since the last tick, reloadChunk users a read,
// and hands each to the streams that follow the user, as a live status
// (DeliverStatus; each stream writes it when newer than what it sent).
// Each read begins after the users were taken, so after every signal that
// asked for them; one asked for again during the read is read again at a
// later tick. A failed read gives its users and those after back, tried
// again after repairDelay (the streams stay open meanwhile).
func (h *Hub) reloadStatuses(ctx context.Context) {
	if time.Now().Before(h.me.reload.retry) {
		return
	}
	h.me.mu.Lock()
	users := h.me.reload.users
	h.me.reload.users, h.me.reload.reading = nil, len(users) > 0
	h.me.mu.Unlock()
	if len(users) == 0 {
		return
	}
	defer func() {
		h.me.mu.Lock()
		h.me.reload.reading = false
		h.me.mu.Unlock()
	}()
	ids := slices.Collect(maps.Keys(users))
	for i := 0; i < len(ids); i += reloadChunk {
		chunk := ids[i:min(i+reloadChunk, len(ids))]
		rctx, cancel := context.WithTimeout(ctx, storeTimeout)
		ss, err := h.cfg.Users.Statuses(rctx, chunk)
		cancel()
		if err != nil {
			if ctx.Err() == nil {
				h.cfg.Log.Warn("sse: reloading followed users' statuses", "users", len(ids)-i, "err", err)
			}
			h.me.reload.retry = time.Now().Add(repairDelay)
			h.me.mu.Lock()
			if h.me.reload.users == nil {
				h.me.reload.users = map[string]struct{}{}
			}
			for _, id := range ids[i:] {
				h.me.reload.users[id] = struct{}{}
			}
			h.me.mu.Unlock()
			return
		}
		for _, s := range ss {
			h.DeliverStatus(s)
		}
	}
}
