package api

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
)

// A line logged with a request's context carries its request_id once,
// whether the logger was derived (WithAttrs, WithGroup) or not; a line
// logged without one carries none.
func TestLogHandlerAddsTheRequestID(t *testing.T) {
	inRequest := context.WithValue(context.Background(), exchangeKey{}, &exchange{id: "req-7"})
	for _, tc := range []struct {
		name string
		log  func(l *slog.Logger)
		want string
	}{
		{"with a request's context", func(l *slog.Logger) { l.ErrorContext(inRequest, "m", "a", 1) },
			`level=ERROR msg=m a=1 request_id=req-7`},
		{"without one", func(l *slog.Logger) { l.Error("m", "a", 1) }, `level=ERROR msg=m a=1`},
		{"outside a request", func(l *slog.Logger) { l.ErrorContext(context.Background(), "m") }, `level=ERROR msg=m`},
		{"an id of its own kept", func(l *slog.Logger) { l.InfoContext(inRequest, "m", "request_id", "mine") },
			`level=INFO msg=m request_id=mine`},
		{"derived with attributes", func(l *slog.Logger) { l.With("c", "x").WarnContext(inRequest, "m") },
			`level=WARN msg=m c=x request_id=req-7`},
		{"derived with a group", func(l *slog.Logger) { l.WithGroup("g").WarnContext(inRequest, "m", "b", 2) },
			`level=WARN msg=m g.b=2 g.request_id=req-7`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			l := slog.New(LogHandler(slog.NewTextHandler(&out, &slog.HandlerOptions{
				ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
					if a.Key == slog.TimeKey && len(groups) == 0 {
						return slog.Attr{}
					}
					return a
				}})))
			tc.log(l)
			if got := strings.TrimSpace(out.String()); got != tc.want {
				t.Errorf("logged %q, want %q", got, tc.want)
			}
		})
	}
}
