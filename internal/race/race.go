//go:build race

// Package race reports whether the binary was built with the race
// detector: under it, a benchmark measures nothing (every memory access is
// instrumented), and CI runs each once with the tests to keep it working,
// at its smallest size.
package race

// Enabled: built with -race.
const Enabled = true
