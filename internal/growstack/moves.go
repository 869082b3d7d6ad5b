package growstack

import "unsafe"

// Moves reports whether calls using about n bytes of stack below the
// caller's frame make the runtime grow the calling goroutine's stack:
// growing copies the stack elsewhere, so the address of a local variable
// changes. For tests of where Grow is called.
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
