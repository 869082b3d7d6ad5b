package redistest

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/realsync/realsync/internal/redisinfo"
)

// Calls is how many times s ran each command since its counters were last
// reset (INFO commandstats): a command's name ("get", "evalsha",
// "config|set") → its calls.
func (s *Server) Calls(tb testing.TB) map[string]int64 {
	tb.Helper()
	cl := redis.NewClient(&redis.Options{Addr: s.Addr})
	defer cl.Close()
	info, err := cl.Info(tb.Context(), "commandstats").Result()
	if err != nil {
		tb.Fatalf("INFO commandstats of %s: %v", s.Addr, err)
	}
	out := map[string]int64{}
	for name, st := range redisinfo.Commandstats(info) {
		out[name] = st.Calls
	}
	return out
}

// CallsOf is the sum of s's calls of the commands names.
func (s *Server) CallsOf(tb testing.TB, names ...string) int64 {
	tb.Helper()
	calls := s.Calls(tb)
	var n int64
	for _, name := range names {
		n += calls[name]
	}
	return n
}

// ResetStats zeroes the command counters of servers (CONFIG RESETSTAT).
func ResetStats(tb testing.TB, servers ...*Server) {
	tb.Helper()
	for _, s := range servers {
		cl := redis.NewClient(&redis.Options{Addr: s.Addr})
		err := cl.ConfigResetStat(tb.Context()).Err()
		cl.Close()
		if err != nil {
			tb.Fatalf("CONFIG RESETSTAT %s: %v", s.Addr, err)
		}
	}
}
