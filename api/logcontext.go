package api

import (
	"context"
	"log/slog"
)

// LogHandler wraps h so that a line logged with a request's context (the
// …Context and LogAttrs calls of slog) carries the request's id as
// "request_id", as its access line does, unless it has one already: so
// that what runs for a request after its handler returned (a detached
// event stream's end, sse) can be traced to it. Lines logged without such a context pass untouched. An
// id added under a group (WithGroup) goes in the group.
func LogHandler(h slog.Handler) slog.Handler { return requestIDHandler{h} }

type requestIDHandler struct{ inner slog.Handler }

func (h requestIDHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.inner.Enabled(ctx, l)
}

func (h requestIDHandler) Handle(ctx context.Context, r slog.Record) error {
	if id := requestID(ctx); id != "" && !hasAttr(r, "request_id") {
		r = r.Clone()
		r.AddAttrs(slog.String("request_id", id))
	}
	return h.inner.Handle(ctx, r)
}

func (h requestIDHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return requestIDHandler{h.inner.WithAttrs(as)}
}

func (h requestIDHandler) WithGroup(name string) slog.Handler {
	return requestIDHandler{h.inner.WithGroup(name)}
}

// hasAttr reports whether r has a top-level attribute key.
func hasAttr(r slog.Record, key string) bool {
	found := false
	r.Attrs(func(a slog.Attr) bool {
		found = a.Key == key
		return !found
	})
	return found
}
