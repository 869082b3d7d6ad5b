package sse

// LoopedStreams counts the streams served by loop that the hub's sweep
// keeps, for the tests of package sse_test.
func LoopedStreams(h *Hub) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.looped)
}

// LobbyResync makes every lobby stream send a fresh list, as after the
// lobby subscription reconnected (notices lost meanwhile).
func LobbyResync(h *Hub) { h.lobbyResync() }
