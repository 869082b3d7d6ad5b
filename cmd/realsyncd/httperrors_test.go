package main

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

func TestHTTPErrorLog(t *testing.T) {
	tests := []struct {
		line  string
		level string // "" : not written at INFO
		msg   string
	}{
		{"http: panic serving 127.0.0.1:4242: boom\ngoroutine 7 [running]:\n", "WARN", "http server: handler panic"},
		{"http: Accept error: accept tcp: too many open files; retrying in 5ms", "WARN", "http server: accept error"},
		{"http: superfluous response.WriteHeader call from main.f (x.go:1)", "WARN", "http server"},
		{"http2: panic serving 127.0.0.1:4242: boom", "WARN", "http server: handler panic"},
		{"http: TLS handshake error from 10.0.0.1:5555: EOF", "", ""},
		{"http2: server: error reading preface from client 10.0.0.1:5555: bogus greeting \"GET / HTTP/1.1\"", "", ""},
		{"http2: server connection error from 10.0.0.1:5555: connection error: PROTOCOL_ERROR", "", ""},
		{"timeout waiting for SETTINGS frames from 10.0.0.1:5555", "", ""},
	}
	for _, tc := range tests {
		var out bytes.Buffer
		l := httpErrorLog(slog.New(slog.NewJSONHandler(&out, &slog.HandlerOptions{Level: slog.LevelInfo})))
		l.Print(tc.line)
		got := out.String()
		if tc.level == "" {
			if got != "" {
				t.Errorf("%q written at INFO: %s", tc.line, got)
			}
			continue
		}
		if !strings.Contains(got, `"level":"`+tc.level+`"`) || !strings.Contains(got, `"msg":"`+tc.msg+`"`) ||
			strings.Count(got, "\n") != 1 || !strings.Contains(got, strings.ReplaceAll(strings.TrimSuffix(tc.line, "\n"), "\n", `\n`)) {
			t.Errorf("%q logged as %s", tc.line, got)
		}
	}
}
