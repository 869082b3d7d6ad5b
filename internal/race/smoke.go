package race

import "testing"

// Smoke says that a benchmark runs at its smallest (a tenth of its sizes,
// or less): with -short or under the race detector, where CI runs each
// once with the tests, to keep it working, and it measures nothing. Call
// it from a benchmark (it reads go test's -short flag).
func Smoke() bool { return testing.Short() || Enabled }
