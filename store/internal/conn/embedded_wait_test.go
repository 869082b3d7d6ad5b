package conn

import (
	"context"
	"testing"
	"time"
)

// The embedded store is the process' own, one command at a time: a call
// queued behind others waits for its turn instead of failing at a socket
// read timeout (EmbeddedReadTimeout). With go-redis' default (5 s, a SET
// tried twice: it failed after 10 s) a burst on a loaded machine failed
// calls that would have been answered (CI, 50 concurrent joins under the
// race detector at a load of 14: 4 "i/o timeout"), while a request's own
// deadline (ContextTimeoutEnabled) still bounds each call. The store is
// held busy here for longer than that default allowed.
func TestEmbeddedCallWaitsItsTurn(t *testing.T) {
	c, err := Open(Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx := context.Background()
	if err := c.Client.Ping(ctx).Err(); err != nil { // a connection open
		t.Fatal(err)
	}
	c.Embedded.Lock() // every command waits, as behind a long queue
	released := make(chan struct{})
	go func() {
		defer close(released)
		time.Sleep(11 * time.Second)
		c.Embedded.Unlock()
	}()
	err = c.Client.Set(ctx, "k", "v", 0).Err()
	<-released
	if err != nil {
		t.Fatalf("a call queued 11 s behind others: %v, want it answered", err)
	}
	// a deadline of the caller's own still ends the wait
	c.Embedded.Lock()
	defer c.Embedded.Unlock()
	dctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if err := c.Client.Get(dctx, "k").Err(); err == nil {
		t.Fatal("a call past its context's deadline answered")
	}
}
