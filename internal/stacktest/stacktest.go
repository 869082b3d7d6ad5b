// Package stacktest tells tests whether a goroutine's stack grows, by
// where its frames lie, not by time.
package stacktest

import "unsafe"

// Moves reports whether calls using about n bytes of stack below the
// caller's frame make the runtime grow the calling goroutine's stack:
// growing copies the stack elsewhere, so the address of a local variable,
// read as a number before the calls and after, changes (a number is not
// adjusted by the copy, as a pointer is). For tests of where
// growstack.Grow is called.
func Moves(n int) bool {
	var here byte
	before := uintptr(unsafe.Pointer(&here))
	descend(n)
	return uintptr(unsafe.Pointer(&here)) != before
}

// descend uses about n bytes of stack, 256 bytes a call.
//
//go:noinline
func descend(n int) byte {
	var b [224]byte
	b[n%len(b)] = byte(n)
	if n > len(b) {
		return descend(n-256) + b[(n+1)%len(b)]
	}
	return b[(n+1)%len(b)]
}
