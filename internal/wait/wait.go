// Package wait is the tests' one way to wait for what happens on other
// goroutines or processes: poll a condition until it holds, and fail the
// test with what was awaited once a bound passes. The bound only decides
// how long a failing test takes; no test asserts a timing through it.
package wait

import (
	"testing"
	"time"
)

// Bound is Until's: long enough for a loaded CI machine (a race-detector
// build beside other packages' tests, a Redis Cluster electing a master).
const Bound = 30 * time.Second

// Until polls ok until it holds, failing tb with what after Bound.
func Until(tb testing.TB, what string, ok func() bool) {
	tb.Helper()
	Within(tb, Bound, what, ok)
}

// Within polls ok until it holds, failing tb with what after d. It polls
// at once, then every millisecond, twice as long between polls each
// time up to every 20 ms: a condition met soon is seen soon, and one that
// takes seconds costs few polls.
func Within(tb testing.TB, d time.Duration, what string, ok func() bool) {
	tb.Helper()
	deadline := time.Now().Add(d)
	for pause := time.Millisecond; !ok(); pause = min(2*pause, 20*time.Millisecond) {
		if time.Now().After(deadline) {
			tb.Fatalf("not within %v: %s", d, what)
		}
		time.Sleep(pause)
	}
}
