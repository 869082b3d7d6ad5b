package configfile

import (
	"bytes"
	"context"
	"time"
)

// Watch reads the file at path every interval until ctx ends and hands its
// content to load when it differs from the last content read (at the
// first read: from, the content in force at the start; nil for none), or
// when the read before failed: a file rewritten in place or renamed over,
// the way configuration managers and Kubernetes update files, or back
// after it went missing. load puts the content in force or refuses it (an
// error), leaving what is in force as it was. An error, the read's or
// load's, goes to refused once for as long as it stays the same: a
// refused file is not loaded again until it changes, a missing one is
// reported once; other content refused is reported, even with the same
// error as the last (a JWKS refused the same way twice counts twice).
func Watch(ctx context.Context, path string, interval time.Duration, from []byte,
	load func([]byte) error, refused func(error)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	last, reload, lastErr := from, from == nil, ""
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		data, err := Read(path)
		if err == nil {
			if !reload && bytes.Equal(data, last) {
				continue
			}
			last, reload, lastErr = data, false, "" // other content: its refusal is told, whatever the last one's
			err = load(data)
		} else {
			reload = true
		}
		if err == nil {
			lastErr = ""
			continue
		}
		if err.Error() != lastErr {
			refused(err)
		}
		lastErr = err.Error()
	}
}
