package webhook

import (
	"context"
	"log/slog"
	"reflect"
	"time"

	"github.com/realsync/realsync/internal/configfile"
)

// Reload is how often Watch reads the endpoints file again (as the API
// keys file).
const Reload = 5 * time.Second

// Watch reads the endpoints file at path every interval until ctx ends
// (configfile.Watch) and, when it holds endpoints other than those in
// force (current at first), calls apply with them. A file that cannot be
// read or is refused by Parse is logged once for as long as it stays so,
// and the endpoints in force stay. Each read of changed content is told
// to loaded (ok, or not: refused), when set; so is a return to the
// content in force after a refused one (ok), after which the same refused
// content is logged and told again (a tester's find: it was neither).
// The file as it is when Watch starts, holding current, is the content in
// force, not a change: its first read is not told (it was, as a reload,
// about 5 s after every start; a tester's find). A file changed since
// current was read from it is. Webhooks cannot be turned on or off this
// way: the outbox is written only by an instance started with a file.
func Watch(ctx context.Context, path string, interval time.Duration, current []Endpoint, apply func([]Endpoint),
	loaded func(ok bool), log *slog.Logger) {
	told := func(ok bool) {
		if loaded != nil {
			loaded(ok)
		}
	}
	configfile.Watch(ctx, path, interval, inForce(path, current), func(raw []byte) error {
		eps, err := Parse(raw)
		if err != nil {
			return &fileError{path, err}
		}
		told(true)
		if reflect.DeepEqual(eps, current) {
			return nil
		}
		apply(eps)
		current = eps
		ids := make([]string, len(eps))
		for i, ep := range eps {
			ids[i] = ep.ID
		}
		log.Info("webhooks file reloaded", "endpoints", ids)
		return nil
	}, func(err error) {
		log.Error("webhooks file not reloaded; the endpoints in force stay", "err", err)
		told(false)
	})
}

type fileError struct {
	path string
	err  error
}

func (e *fileError) Error() string { return "webhooks file " + e.path + ": " + e.err.Error() }
func (e *fileError) Unwrap() error { return e.err }

// inForce is the content of the file at path if it holds the endpoints
// current, else nil (it changed since they were read from it, or cannot
// be read: the first read loads what it holds).
func inForce(path string, current []Endpoint) []byte {
	raw, err := configfile.Read(path)
	if err != nil {
		return nil
	}
	if eps, err := Parse(raw); err != nil || !reflect.DeepEqual(eps, current) {
		return nil
	}
	return raw
}
