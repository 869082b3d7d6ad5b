package doctable

import (
	"strconv"
	"strings"
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

// States reports whether text holds figure as a whole: not as a part of a
// larger number, so "1..100" is not stated by "1..1000", nor "5" by "15",
// "5 000" or "0.5", nor "5 s" by "0.5 s" (no digit, and no digit after a
// space or a decimal point, right before or after it).
func States(text, figure string) bool {
	for i := 0; ; {
		j := strings.Index(text[i:], figure)
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(figure)
		if !digitNear(text[:start], true) && !digitNear(text[end:], false) {
			return true
		}
		i = start + 1
	}
}

// digitNear reports whether s has a digit, or a space or a decimal point
// then a digit, at its end (before) or its start (after). A range's ".."
// is no decimal point: "1..100" states 100.
func digitNear(s string, before bool) bool {
	isDigit := func(k int) bool { return k >= 0 && k < len(s) && s[k] >= '0' && s[k] <= '9' }
	joins := func(k int) bool { return k >= 0 && k < len(s) && (s[k] == ' ' || s[k] == '.') }
	if before {
		n := len(s)
		return isDigit(n-1) || (joins(n-1) && isDigit(n-2))
	}
	return isDigit(0) || (joins(0) && isDigit(1))
}
