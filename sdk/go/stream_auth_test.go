package realsync_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	rs "github.com/realsync/realsync/sdk/go"
)

// drain reads s to its Closed item, or until d passed (then it closes s,
// and the last item is Closed with ClosedByCaller).
func drain(t *testing.T, s *rs.Stream, d time.Duration) []rs.Event {
	t.Helper()
	stop := time.AfterFunc(d, func() { s.Close() })
	defer stop.Stop()
	var got []rs.Event
	for ev, err := range s.Events() {
		_ = err // carried by the Closed item too
		got = append(got, ev)
	}
	return got
}

// signer signs identity tokens the test server accepts.
func signer(t *testing.T) func(sub string, ttl time.Duration) string {
	return func(sub string, ttl time.Duration) string {
		t.Helper()
		tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"sub": sub, "name": sub,
			"exp": time.Now().Add(ttl).Unix()}).SignedString([]byte(jwtSecret))
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
}

// A token source that cannot give a token the server accepts ends the
// stream with the 401 (a 401 after a renewal was tried is permanent), and
// one that fails for a reason a retry can cure (the network) is retried.
func TestStreamTokenSourceErrors(t *testing.T) {
	var offset atomic.Int64
	s := newServer(t, redistestEmbedded, serverOpts{clock: func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }})
	c := ctx(t)
	sign := signer(t)
	host := rs.New(s.url, rs.WithToken(sign("u_host", time.Hour)))
	room, err := host.CreateRoom(c, arena("Tokens"))
	if err != nil {
		t.Fatal(err)
	}
	id := room.Room.Id
	t.Run("gives up after a 401", func(t *testing.T) {
		c := ctx(t)
		var calls atomic.Int32
		cl := rs.New(s.url, fastBackoff, rs.WithTokenSource(func(_ context.Context, refused string) (string, error) {
			calls.Add(1)
			if refused != "" {
				return "", errors.New("login required") // as TokenSource's doc says
			}
			return "not-a-valid-token", nil
		}))
		got := drain(t, cl.Stream(c, id), 5*time.Second)
		cl2 := got[len(got)-1].(*rs.Closed)
		if kinds(got) != "connecting closed(error)" || !rs.IsCode(cl2.Err, "UNAUTHENTICATED") ||
			!strings.Contains(cl2.Err.Error(), "login required") || calls.Load() != 2 {
			t.Fatalf("items %s, closed %v, %d source calls", kinds(got), cl2.Err, calls.Load())
		}
	})
	t.Run("first ask fails", func(t *testing.T) {
		c := ctx(t)
		cl := rs.New(s.url, fastBackoff, rs.WithTokenSource(func(context.Context, string) (string, error) {
			return "", errors.New("no account")
		}))
		got := drain(t, cl.Stream(c, id), 5*time.Second)
		err := got[len(got)-1].(*rs.Closed).Err
		if kinds(got) != "connecting closed(error)" || err == nil || !strings.Contains(err.Error(), "no account") {
			t.Fatalf("items %s, closed %v", kinds(got), err)
		}
	})
	t.Run("network error is retried", func(t *testing.T) {
		c := ctx(t)
		var calls atomic.Int32
		good := sign("u_host", time.Hour)
		cl := rs.New(s.url, fastBackoff, rs.WithTokenSource(func(context.Context, string) (string, error) {
			if calls.Add(1) <= 2 {
				return "", &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}
			}
			return good, nil
		}))
		st := cl.Stream(c, id)
		defer st.Close()
		got := until(t, st, func(ev rs.Event) bool { _, ok := ev.(*rs.Snapshot); return ok })
		if k := kinds(got); k != "connecting reconnecting connecting reconnecting connecting open snapshot" {
			t.Fatalf("items %s", k)
		}
	})
	t.Run("guest refresh refused", func(t *testing.T) {
		c := ctx(t)
		g := s.guest(t, "late")
		if _, err := g.JoinRoom(c, id); err != nil {
			t.Fatal(err)
		}
		offset.Store(int64(25 * time.Hour)) // the guest token expired: the stream and the refresh are 401
		defer offset.Store(0)
		before := s.refreshes.Load()
		got := drain(t, g.Stream(c, id), 5*time.Second)
		cl2 := got[len(got)-1].(*rs.Closed)
		if kinds(got) != "connecting closed(error)" || rs.StatusOf(cl2.Err) != 401 || s.refreshes.Load()-before != 1 {
			t.Fatalf("items %s, closed %v, %d refreshes", kinds(got), cl2.Err, s.refreshes.Load()-before)
		}
	})
}

// token_expiring renews the token with the source, as if the server had
// refused it: a guest whose clock lags the server's renews once and reads
// on; a renewal failing on the network is tried again after a backoff; a
// source still giving the expiring token (its cached one) while that token
// has 5 s left is asked again at the next token_expiring, the stream
// reconnecting with it at once and missing nothing; a token that cannot be
// renewed (no source, or a source giving no later token with under 5 s
// left) ends the stream with 401 instead of reopening ever shorter
// streams.
func TestStreamTokenExpiringRenewal(t *testing.T) {
	// the short tokens' life: a join and a stream's opening fit in it on
	// a loaded machine (3 s, cut to whole seconds by exp, left a stall
	// 2 s), and their streams end at half of it with token_expiring
	const shortLife = 8 * time.Second
	var offset atomic.Int64
	s := newServer(t, redistestEmbedded, serverOpts{clock: func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }})
	sign := signer(t)
	gs := rs.New(s.url, rs.WithAPIKey(s.keys.all))
	host, id := s.hostRoom(t, "Expiring")
	t.Run("guest with a lagging clock", func(t *testing.T) {
		c := ctx(t)
		offset.Store(int64(24*time.Hour - 4*time.Second)) // the server sees 4 s left on host's token
		defer offset.Store(0)
		before := s.refreshes.Load()
		st := host.Stream(c, id)
		defer st.Close()
		got := until(t, st, isTokenExpiring)
		got = append(got, patchUntil(t, gs, st, id, 1)...)
		// live events for 3 s more: another token_expiring would come in 2 s
		time.Sleep(3 * time.Second)
		got = append(got, patchUntil(t, gs, st, id, 2)...)
		if count[*rs.TokenExpiring](got) != 1 || count[*rs.Reconnecting](got) != 0 || s.refreshes.Load()-before != 1 {
			t.Fatalf("items %s, %d refreshes", kinds(got), s.refreshes.Load()-before)
		}
	})
	t.Run("renewal fails on the network once", func(t *testing.T) {
		c := ctx(t)
		var renewals atomic.Int32
		short, long := sign("u_host3", shortLife), sign("u_host3", time.Hour)
		cl := rs.New(s.url, fastBackoff, rs.WithTokenSource(func(_ context.Context, refused string) (string, error) {
			switch {
			case refused == "" && renewals.Load() < 2:
				return short, nil // for JoinRoom and the first connection
			case refused != "" && renewals.Add(1) == 1:
				return "", &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}
			}
			return long, nil
		}))
		if _, err := cl.JoinRoom(c, id); err != nil {
			t.Fatal(err)
		}
		st := cl.Stream(c, id)
		defer st.Close()
		got := until(t, st, isTokenExpiring)
		got = append(got, patchUntil(t, gs, st, id, 3, isResumed)...)
		k := kinds(got)
		if !strings.Contains(k, "token_expiring reconnecting connecting open") ||
			count[*rs.TokenExpiring](got) != 1 || count[*rs.Reconnecting](got) != 1 || renewals.Load() != 2 {
			t.Fatalf("items %s", k)
		}
	})
	t.Run("source returns the same token, then a later one", func(t *testing.T) {
		c := ctx(t)
		// the server's clock leads by an hour but 10 s: it keeps the
		// stream 5 s, the next one 2.5 s, while the client sees the
		// token expire in an hour, far above the 5 s floor
		cached, long := sign("u_host4", time.Hour), sign("u_host4", 2*time.Hour)
		offset.Store(int64(time.Hour - 10*time.Second))
		defer offset.Store(0)
		var asks atomic.Int32
		cl := rs.New(s.url, fastBackoff, rs.WithTokenSource(func(_ context.Context, refused string) (string, error) {
			if refused != "" && asks.Add(1) >= 2 {
				return long, nil // renewed by its second ask
			}
			return cached, nil
		}))
		if _, err := cl.JoinRoom(c, id); err != nil {
			t.Fatal(err)
		}
		st := cl.Stream(c, id)
		defer st.Close()
		got := until(t, st, isTokenExpiring)
		got = append(got, patchUntil(t, gs, st, id, 4, isResumed)...)
		got = append(got, until(t, st, isTokenExpiring)...)
		got = append(got, patchUntil(t, gs, st, id, 5)...)
		k := kinds(got)
		if strings.Count(k, "token_expiring connecting open") != 2 || count[*rs.Reconnecting](got) != 0 ||
			count[*rs.StateChanged](got) != 2 || asks.Load() != 2 {
			t.Fatalf("items %s, the source asked %d times after token_expiring", k, asks.Load())
		}
	})
	for _, tc := range []struct {
		name string
		cred func() rs.Option
	}{
		{"static token", func() rs.Option { return rs.WithToken(sign("u_host2", shortLife)) }},
		{"source returns the same token with under 5 s left", func() rs.Option {
			tok := sign("u_host2", shortLife)
			return rs.WithTokenSource(func(context.Context, string) (string, error) { return tok, nil })
		}},
		{"source returns no later token", func() rs.Option {
			exp := time.Now().Add(shortLife).Unix()
			var calls atomic.Int32
			return rs.WithTokenSource(func(context.Context, string) (string, error) {
				// a new token each time, expiring with the first
				return jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"sub": "u_host2", "name": "h2", "exp": exp,
					"jti": fmt.Sprint(calls.Add(1))}).SignedString([]byte(jwtSecret))
			})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := ctx(t)
			cl := rs.New(s.url, fastBackoff, tc.cred())
			if _, err := cl.JoinRoom(c, id); err != nil && !rs.IsCode(err, "ALREADY_IN_ROOM") {
				t.Fatal(err)
			}
			got := drain(t, cl.Stream(c, id), 4*shortLife)
			cl2 := got[len(got)-1].(*rs.Closed)
			k := kinds(got)
			if !strings.HasSuffix(k, "token_expiring closed(error)") || count[*rs.Connecting](got) != 1 ||
				!rs.IsCode(cl2.Err, "UNAUTHENTICATED") || rs.StatusOf(cl2.Err) != 401 {
				t.Fatalf("items %s, closed %v", k, cl2.Err)
			}
		})
	}
}

func isTokenExpiring(ev rs.Event) bool { _, ok := ev.(*rs.TokenExpiring); return ok }

// patchUntil sets state key "n" of room id to n through gs, then reads st
// until it shows n and, with also, until also held for an item too.
func patchUntil(t *testing.T, gs *rs.Client, st *rs.Stream, id string, n int, also ...func(rs.Event) bool) []rs.Event {
	t.Helper()
	if _, err := gs.PatchState(t.Context(), id, rs.State{"n": n}); err != nil {
		t.Fatal(err)
	}
	stop := func(ev rs.Event) bool { return stateN(ev) == n }
	for _, a := range also {
		stop = both(stop, a)
	}
	return until(t, st, stop)
}
