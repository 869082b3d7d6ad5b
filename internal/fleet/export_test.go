package fleet

import "time"

// WithWaits is c whose member waits through rec (which may record the wait
// and returns when to go on) instead of time.After.
func WithWaits(c Config, rec func(time.Duration) <-chan time.Time) Config {
	c.after = rec
	return c
}
