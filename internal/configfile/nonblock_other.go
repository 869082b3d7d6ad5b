//go:build !unix

package configfile

// nonblock: no FIFOs to wait on here (windows, wasm).
const nonblock = 0
