package main

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// dedupHandler keeps an outage from flooding the log: a warning or error
// whose message was already logged within the last interval is not
// written, only counted; when the interval ends, one line with the same
// level and message says how many were suppressed ("suppressed=N"). Every
// request or stream that meets a dead Redis logs the same few messages, so
// an outage of any length writes about two lines per message and interval.
// Lines below minLevel (debug, info) pass untouched.
type dedupHandler struct {
	inner    slog.Handler
	minLevel slog.Level
	interval time.Duration
	seen     *dedupState // shared by the handlers WithAttrs and WithGroup derive
}

type dedupState struct {
	mu   sync.Mutex
	keys map[dedupKey]*dedupEntry
}

type dedupKey struct {
	level slog.Level
	msg   string
}

type dedupEntry struct {
	until      time.Time // end of the interval opened by the last line written
	suppressed int
	timer      *time.Timer
}

func newDedupHandler(inner slog.Handler, minLevel slog.Level, interval time.Duration) *dedupHandler {
	return &dedupHandler{inner: inner, minLevel: minLevel, interval: interval,
		seen: &dedupState{keys: map[dedupKey]*dedupEntry{}}}
}

func (h *dedupHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.inner.Enabled(ctx, l)
}

func (h *dedupHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level < h.minLevel {
		return h.inner.Handle(ctx, r)
	}
	k := dedupKey{r.Level, r.Message}
	h.seen.mu.Lock()
	e := h.seen.keys[k]
	if e == nil {
		e = &dedupEntry{}
		h.seen.keys[k] = e
	}
	if r.Time.IsZero() || !r.Time.Before(e.until) {
		e.until = r.Time.Add(h.interval)
		h.seen.mu.Unlock()
		return h.inner.Handle(ctx, r)
	}
	e.suppressed++
	if e.timer == nil {
		e.timer = time.AfterFunc(time.Until(e.until), func() { h.flush(k) })
	}
	h.seen.mu.Unlock()
	return nil
}

// flush writes how many lines of k the interval suppressed; the line opens
// a new interval.
func (h *dedupHandler) flush(k dedupKey) {
	h.seen.mu.Lock()
	e := h.seen.keys[k]
	n := e.suppressed
	e.suppressed, e.timer = 0, nil
	now := time.Now()
	e.until = now.Add(h.interval)
	h.seen.mu.Unlock()
	r := slog.NewRecord(now, k.level, k.msg, 0)
	r.AddAttrs(slog.Int("suppressed", n), slog.String("within", h.interval.String()))
	h.inner.Handle(context.Background(), r)
}

func (h *dedupHandler) WithAttrs(as []slog.Attr) slog.Handler {
	c := *h
	c.inner = h.inner.WithAttrs(as)
	return &c
}

func (h *dedupHandler) WithGroup(name string) slog.Handler {
	c := *h
	c.inner = h.inner.WithGroup(name)
	return &c
}
