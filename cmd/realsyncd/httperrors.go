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
// every WARN/ERROR filter). Each is one "http server" line, its text in
// err: WARN for what is the server's fault or an operator's business (a
// handler's panic net/http recovered, which closed the connection without
// an answer; an accept error; a response written wrong), DEBUG for what a
// client or the network did (a TLS handshake or an HTTP/2 connection it
// broke off). One message, so that the log's dedup folds a flood of them.
func httpErrorLog(log *slog.Logger) *stdlog.Logger {
	return stdlog.New(httpErrorWriter{log}, "", 0)
}

type httpErrorWriter struct{ log *slog.Logger }

func (w httpErrorWriter) Write(p []byte) (int, error) {
	line := strings.TrimSuffix(string(p), "\n")
	w.log.Log(context.Background(), httpErrorLevel(line), "http server", "err", line)
	return len(p), nil
}

// clientCaused are the beginnings of net/http's lines about what a client
// or the network did (net/http and its HTTP/2 server, Go 1.26).
var clientCaused = []string{
	"http: TLS handshake error from ",
	"http2: server connection error from ",
	"http2: server closing client connection",
	"http2: received GOAWAY",
	"timeout waiting for SETTINGS frames",
	"timeout waiting for PING response",
}

// httpErrorLevel is the level of one of net/http's lines.
func httpErrorLevel(line string) slog.Level {
	for _, p := range clientCaused {
		if strings.HasPrefix(line, p) {
			return slog.LevelDebug
		}
	}
	return slog.LevelWarn
}
