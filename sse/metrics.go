package sse

// Stream kinds, as Metrics receives them.
const (
	KindRoom  = "room"
	KindLobby = "lobby"
)

// How a stream started (Metrics.StreamOpened).
const (
	// StartFresh: no Last-Event-ID; a room stream starts with a snapshot, a
	// lobby stream with its "rooms" list.
	StartFresh = "fresh"
	// StartReplay: a resume served from the room's log (possibly with no
	// event at all when the client was up to date).
	StartReplay = "replay"
	// StartSnapshot: a resume the log could not serve (too far behind, the
	// log trimmed or expired, another history): a snapshot instead.
	StartSnapshot = "snapshot"
)

// Why a stream ended (Metrics.StreamEnded).
const (
	EndClientGone = "client_gone" // the request's context ended: the client went away
	EndShutdown   = "shutdown"    // the hub closed (the instance is shutting down)
	EndSlow       = "slow"        // the stream's queue was full: its client cannot keep up
	EndWriteError = "write_error" // a write to the client failed or passed its deadline
	EndRoomClosed = "room_closed" // the room closed
	EndLeft       = "left"        // the player left, was kicked or removed
	EndStoreError = "store_error" // a fresh snapshot or lobby list, or a personal stream's catch-up, could not be read
	EndLapsed     = "lapsed"      // its presence lease went a whole TTL unrenewed: the store is unreachable
)

// Metrics observes the hub's streams. The hub's default does nothing;
// cmd/realsyncd wires Prometheus' (internal/metrics). Methods are called
// from every stream's goroutine and the room workers, so they must be safe
// for concurrent use and must not block.
type Metrics interface {
	// StreamOpened says a stream of kind (KindRoom, KindLobby) started, the
	// way start says (StartFresh, StartReplay, StartSnapshot). Every opened
	// stream ends with exactly one StreamEnded.
	StreamOpened(kind, start string)
	// StreamEnded says a stream of kind ended, for reason (End…).
	StreamEnded(kind, reason string)
	// Events counts events of streams of kind: delivered were written to a
	// client; dropped could not be queued because the stream's queue was
	// full (that stream ends and its client resumes from the log).
	Events(kind string, delivered, dropped int)
}

// noMetrics is the default Metrics.
type noMetrics struct{}

func (noMetrics) StreamOpened(string, string) {}
func (noMetrics) StreamEnded(string, string)  {}
func (noMetrics) Events(string, int, int)     {}
