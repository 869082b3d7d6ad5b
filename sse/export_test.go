package sse

// LoopedStreams counts the streams served by loop that the hub's sweep
// keeps, for the tests of package sse_test.
func LoopedStreams(h *Hub) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.looped)
}
