package main

import (
	"context"
	stdlog "log"
	"log/slog"
	"strings"
)

// httpErrorLog is an http.Server's ErrorLog: net/http's own complaints
// written through the instance's logger, as every other line, instead of
// unlevelled to stderr (a plain line in a JSON log, and missing from
// every WARN/ERROR filter), its text in err. WARN for what is the
// server's fault or an operator's business (a handler's panic net/http
// recovered, which closed the connection without an answer; an accept
// error; a response written wrong), DEBUG for what a client or the
// network did (a TLS handshake or an HTTP/2 connection it broke off).
// Each kind has a message of its own, so that the log's dedup (by level
// and message) folds a flood of one kind without hiding another.
func httpErrorLog(log *slog.Logger) *stdlog.Logger {
	return stdlog.New(httpErrorWriter{log}, "", 0)
}

type httpErrorWriter struct{ log *slog.Logger }

func (w httpErrorWriter) Write(p []byte) (int, error) {
	line := strings.TrimSuffix(string(p), "\n")
	k := kindOf(line)
	w.log.Log(context.Background(), k.level, k.msg, "err", line)
	return len(p), nil
}

// httpErrorKind is a kind of net/http's lines: those beginning with
// prefix are logged as msg at level.
type httpErrorKind struct {
	prefix, msg string
	level       slog.Level
}

// httpErrorKinds are the kinds of net/http's lines (net/http and its
// HTTP/2 server, Go 1.26); the first that matches.
var httpErrorKinds = []httpErrorKind{
	{"http: panic serving ", "http server: handler panic", slog.LevelWarn},
	{"http2: panic serving ", "http server: handler panic", slog.LevelWarn},
	{"http: Accept error", "http server: accept error", slog.LevelWarn},
	{"http: TLS handshake error from ", "http server: TLS handshake broken off", slog.LevelDebug},
	{"http2: server: error reading preface from client", "http server: HTTP/2 connection broken off", slog.LevelDebug},
	{"http2: server connection error from ", "http server: HTTP/2 connection broken off", slog.LevelDebug},
	{"http2: server closing client connection", "http server: HTTP/2 connection broken off", slog.LevelDebug},
	{"http2: received GOAWAY", "http server: HTTP/2 connection broken off", slog.LevelDebug},
	{"timeout waiting for SETTINGS frames", "http server: HTTP/2 connection broken off", slog.LevelDebug},
	{"timeout waiting for PING response", "http server: HTTP/2 connection broken off", slog.LevelDebug},
}

// kindOf is line's kind: "http server" at WARN for a line of no known
// kind.
func kindOf(line string) httpErrorKind {
	for _, k := range httpErrorKinds {
		if strings.HasPrefix(line, k.prefix) {
			return k
		}
	}
	return httpErrorKind{msg: "http server", level: slog.LevelWarn}
}
