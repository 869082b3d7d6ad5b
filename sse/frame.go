package sse

import (
	"bytes"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
)

// appendFrame appends one SSE event to b. Each line of data becomes its own
// "data:" line, and CR and LF are dropped from id and type, so nothing in an
// event can start another field or event (our JSON is one line anyway).
// An empty id writes no id line: an empty "id:" would reset the client's
// last event id.
func appendFrame(b []byte, id, typ string, data []byte) []byte {
	if id != "" {
		b = append(b, "id: "...)
		b = append(b, oneLine(id)...)
		b = append(b, '\n')
	}
	b = append(b, "event: "...)
	b = append(b, oneLine(typ)...)
	b = append(b, '\n')
	for _, line := range bytes.FieldsFunc(data, isNewline) {
		b = append(b, "data: "...)
		b = append(b, line...)
		b = append(b, '\n')
	}
	return append(b, '\n')
}

func isNewline(r rune) bool { return r == '\n' || r == '\r' }

func oneLine(s string) string {
	if strings.ContainsAny(s, "\r\n") {
		return strings.Map(func(r rune) rune {
			if isNewline(r) {
				return -1
			}
			return r
		}, s)
	}
	return s
}

// retryFrame tells EventSource how long to wait before reconnecting.
func retryFrame(ms int) []byte {
	if ms == 0 {
		ms = 2000 + rand.IntN(3000) // jittered, so a restart's reconnects spread out
	}
	return []byte("retry: " + strconv.Itoa(ms) + "\n\n")
}

// shutdownRetry is the retry (ms) a stream gets when its instance shuts
// down: short, since another instance can take the client at once, and
// jittered over 0.5–2 s so the clients of an instance do not all reconnect
// in the same moment.
func shutdownRetry() int { return 500 + rand.IntN(1500) }

// pingFrame is the heartbeat comment.
var pingFrame = []byte(": ping\n\n")

// stamp is t as the events' times are written: UTC, RFC 3339, to the
// millisecond.
func stamp(t time.Time) string {
	return t.UTC().Truncate(time.Millisecond).Format(time.RFC3339Nano)
}
