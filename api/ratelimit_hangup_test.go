package api_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/realsync/realsync/api"
	"github.com/realsync/realsync/internal/limits"
	"github.com/realsync/realsync/internal/redistest"
	"github.com/realsync/realsync/store"
	"github.com/realsync/realsync/store/ratelimit"
)

// slowOnce is the real limiter, except that its next armed call waits up to
// 100 ms before its round trip (a busy network), then makes it with the
// context it was given.
type slowOnce struct {
	api.RateLimiter
	armed atomic.Bool
	err   atomic.Value // the armed call's error, if any
}

func (s *slowOnce) Start(m limits.Mode, cs []limits.Check) ([]limits.Decision, func(context.Context) ([]limits.Decision, error)) {
	d, finish := s.RateLimiter.Start(m, cs)
	if finish == nil || !s.armed.CompareAndSwap(true, false) {
		return d, finish
	}
	return d, func(ctx context.Context) ([]limits.Decision, error) {
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
		d, err := finish(ctx)
		if err != nil {
			s.err.Store(err)
		}
		return d, err
	}
}

// A client that hangs up while its request's rate-limit check is in flight
// must not switch the limits off for everybody: here a stranger (no token)
// hangs up, and a user out of invite-code guesses then gets more guesses.
func TestClientHangupDoesNotPauseLimits(t *testing.T) {
	b := redistest.Backend{Name: "standalone", URL: redistest.StandaloneURL(t)}
	set, err := limits.Parse("guess=2/h")
	if err != nil {
		t.Fatal(err)
	}
	slow := &slowOnce{}
	e := newEnv(t, b, true, func(c *api.Config, st *store.Store, prefix string) {
		slow.RateLimiter = ratelimit.New(ratelimit.Config{Client: st.Client(), Prefix: prefix,
			RoomTag: st.RoomTag})
		c.RateLimiter = slow
		c.RateLimits = set
	})
	bob, _ := e.guest("bob")
	for range 2 {
		want(t, e.do("POST", "/v1/rooms/join-by-code", bob, map[string]any{"inviteCode": "ZZZZZZZZZZZZ"}), 404, "ROOM_NOT_FOUND")
	}
	want(t, e.do("POST", "/v1/rooms/join-by-code", bob, map[string]any{"inviteCode": "ZZZZZZZZZZZZ"}), 429, "CODE_GUESSES_LIMITED")

	// A stranger sends a request with a bad token and hangs up after 20 ms.
	slow.armed.Store(true)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", e.url+"/v1/rooms", nil)
	req.Header.Set("Authorization", "Bearer forged.jwt.token")
	if res, err := http.DefaultClient.Do(req); err == nil {
		res.Body.Close()
	}
	deadline := time.Now().Add(2 * time.Second)
	for slow.armed.Load() && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(150 * time.Millisecond) // the armed call is over
	if err, _ := slow.err.Load().(error); err != nil {
		t.Logf("the hung-up request's limit check failed: %v", err)
	}

	// bob is still out of guesses
	for i := range 5 {
		r := e.do("POST", "/v1/rooms/join-by-code", bob, map[string]any{"inviteCode": "ZZZZZZZZZZZZ"})
		if r.status != 429 {
			t.Fatalf("guess %d after a stranger hung up: %d %s, want 429 CODE_GUESSES_LIMITED (the limits were paused for every client)", i+3, r.status, r.code())
		}
	}
}
