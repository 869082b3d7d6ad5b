// Package growstack grows a goroutine's stack in one step, for the
// goroutines that are started for one piece of work and go deep at once
// (a request over HTTP/2, an event stream's opening, a batch of Redis
// calls).
//
// The runtime starts a goroutine on a small stack (2 KiB) and, whenever a
// call does not fit, doubles it and copies every frame on it: a request
// served on a fresh goroutine that goes through the router, the
// middlewares, the handler and a Redis round trip doubled its stack several
// times, each deeper in the call, which cost about a tenth of a PATCH's
// CPU over h2c (docs/PERFORMANCE-HISTORY.md, "A request's stack grown
// once"). Grow, called near the top of such a goroutine, makes the runtime
// double until a frame of its own fits: one copy of the few frames above
// it. It costs the clearing of that frame (about 7 KiB) on a goroutine
// whose stack is large enough already, and 16 KiB of stack while the
// goroutine lives (the collector shrinks an idle one by halves, as any):
// a request over HTTP/2 that waits for its body or for a place
// (REALSYNC_MAX_IN_FLIGHT) waits on 16 KiB, where it waited on the few
// KiB its frames took.
// Do not call it on a goroutine that idles for long (an event stream's).
// Tests see where it is called with stacktest.Moves.
package growstack

// Size is the stack Grow leaves a goroutine with when called a few
// hundred bytes from the top of a fresh one: the stack of a request over
// HTTP/2 or of a batch sent to Redis, the deepest measured, fits in it.
const Size = 16 << 10

// frame is Grow's frame: with the runtime's guard (928 bytes on
// linux/amd64, more under the race detector) and the frames above, more
// than half of Size, so that the runtime doubles a fresh stack up to
// Size, and no further.
const frame = 7 << 10

// Grow grows the calling goroutine's stack to Size in one step (see the
// package's doc); a no-op but for clearing its frame when the stack is
// that large already.
func Grow() { _ = grow(0) }

//go:noinline
func grow(i int) byte {
	var b [frame]byte // indexed by a value the compiler cannot know: kept
	b[i%frame] = 1
	return b[(i+1)%frame]
}
