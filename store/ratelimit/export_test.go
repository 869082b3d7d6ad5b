package ratelimit

import "time"

// Spare is the requests l holds in unexpired leases.
func Spare(l *Limiter) int {
	if l.leases == nil {
		return 0
	}
	now := time.Now()
	l.leases.mu.Lock()
	defer l.leases.mu.Unlock()
	n := 0
	for _, m := range []map[string]*lease{l.leases.cur, l.leases.prev} {
		for _, e := range m {
			e.mu.Lock()
			if now.Before(e.until) {
				n += e.spare
			}
			e.mu.Unlock()
		}
	}
	return n
}
