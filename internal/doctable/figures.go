package doctable

import (
	"strconv"
	"time"
)

// Thousands writes n as the documents do: 500, 1 000, 5 000.
func Thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + " " + s[i:]
	}
	return s
}

// Seconds writes d as the documents do: "30 s", "0.5 s".
func Seconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + " s"
}

// Days writes d as the documents do: "7 days".
func Days(d time.Duration) string {
	return strconv.FormatFloat(d.Hours()/24, 'f', -1, 64) + " days"
}

// KiB writes n bytes as the documents do: "64 KiB" (n/1024, rounded down).
func KiB(n int64) string { return strconv.FormatInt(n>>10, 10) + " KiB" }
